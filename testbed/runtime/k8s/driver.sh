# shellcheck shell=bash
# shellcheck disable=SC2153  # PROFILE, PLANE, RUN_DIR ...: globals of scripts/lib/common.sh
# shellcheck disable=SC2034,SC2004  # ENGINE_EXPERIMENTS and _WATCH_STOP are read by scripts/lib; _CAPTURE_* are associative arrays (common.sh)
# The Kubernetes runtime's side of the experiment drivers (testbed/contract.py DRIVER_FUNCTIONS),
# sourced by scripts/lib/stack.sh docker_begin for ENGINE=k8s. The same driver, parameters and
# manifest as on Compose; the stack is the render's pods (k8s.sh up: wave by wave, each pod ready
# by the Compose health checks), DC is testbed/runtime/k8s/stackctl.py (Compose's verbs as kubectl
# lines: exec, logs, up, rm), the captures are containers in the pods (capture.py). docs/kubernetes.md.

# The drivers that run against a cluster's stack (testbed/cli/campaign_k8s.py DRIVERS_ON_K8S too).
# Sourced inside a function (docker_begin): its arrays are declared global.
ENGINE_EXPERIMENTS="n3 sbi throughput cpu"

_K8S_SH="$TESTBED_ROOT/testbed/runtime/k8s/k8s.sh"
_K8S_CLEANUP=0
_K8S_CAPTURES=()                 # K8S_CAPTURES entries the driver asked for before the stack starts
declare -gA _K8S_CAPTURE_FILE=()  # capture name -> its file (RUN_DIR-relative)
declare -gA _K8S_CAPTURE_ATTRS=() # capture name -> its manifest attributes

engine_require() {
  command -v "${KUBECTL:-kubectl}" >/dev/null 2>&1 \
    || die "kubectl (${KUBECTL:-kubectl}) not found on PATH: ENGINE=k8s drives a cluster through kubectl; install it and point KUBECONFIG at the cluster (docs/kubernetes.md); nothing was started" 1
}

# engine_check EXPERIMENT: what a cluster cannot run of EXPERIMENT, refused before anything starts.
# run-throughput's iperf3 server goes where the n6 gateway is: the UPF's node, which holds it on
# its n6 bridge (networks.py isGateway); n6 on macvlan gives the node no gateway (macvlan isolates
# its parent), so there is no address to serve on.
engine_check() {
  [[ "$1" == throughput ]] || return 0
  local cni
  cni="$("$PYTHON" -m testbed.runtime.k8s.tool cni n6)" \
    || die "K8S_CNI=${K8S_CNI:-} is refused (above); nothing was started" 2
  [[ "$cni" == bridge ]] \
    || die "run-throughput on a cluster serves iperf3 on the n6 gateway of the UPF's node, which n6 on $cni does not give the node (K8S_CNI=${K8S_CNI:-}; macvlan isolates its parent): keep n6 a bridge, e.g. K8S_CNI=\"bridge n2:macvlan n3:macvlan\" (docs/kubernetes.md); nothing was started" 2
}

# engine_create REL_LOG [ARGS...]: nothing exists on a cluster before its pods: the captures asked
# for next go into the pods the render makes (engine_up), ahead of each pod's holder and NF.
engine_create() {
  _K8S_CAPTURES=()
  _K8S_CAPTURE_FILE=()
  _K8S_CAPTURE_ATTRS=()
}

engine_pin() {
  [[ -z "${CPUSET_STACK:-}" ]] \
    || die "CPUSET_STACK=$CPUSET_STACK: a cluster places pods on nodes (PLACEMENT=, docs/kubernetes.md), not containers on this host's CPUs" 2
}

# engine_net_capture [-c COUNT] NAME REL NODE NETWORK... -- ATTRS...: a capture container in
# NODE's pod on those networks (both directions), or with NODE empty in every pod on the one
# NETWORK (what each sends, merged: the whole network as its Compose bridge shows it); rendered
# into the pods by engine_up, copied out into RUN_DIR/REL when the capture is stopped
# (capture_stop). -c: each pod's first COUNT packets (capture.py).
engine_net_capture() {
  local count=""
  if [[ "$1" == -c ]]; then
    count="$2"
    shift 2
  fi
  local name="$1" rel="$2" node="${3:-*}" nets=()
  shift 3
  while (($#)) && [[ "$1" != -- ]]; do
    nets+=("$1")
    shift
  done
  shift
  [[ -n "$node" ]] || node="*"
  _K8S_CAPTURES+=("$rel=$node:$(IFS=,; echo "${nets[*]}")${count:+:$count}")
  _K8S_CAPTURE_FILE[$name]="$rel"
  _K8S_CAPTURE_ATTRS[$name]="$*"
  _record_command "capture container in pod(s) $node: dumpcap -i ${nets[*]}${count:+ -c $count} -w /captures/$rel (testbed/runtime/k8s/capture.py)"
}

# engine_up REL_LOG [--no-ue] [--create-only] ...: render PROFILE for the cluster with the captures
# asked for (ENGINE=k8s, K8S_CAPTURES), k8s.sh up (UE 1's pod left out with --no-ue: run-sbi starts
# it), the capture holders started; output into RUN_DIR/REL_LOG. Sets RENDER and DC.
engine_up() {
  local rel="$1" skip=() a caps
  shift
  for a in "$@"; do
    [[ "$a" != --no-ue ]] || skip=(--skip ue1)
  done
  caps="${_K8S_CAPTURES[*]}"
  export RUN_ID="${RUN_DIR:+$(basename "$RUN_DIR")}"
  RUN_ID="${RUN_ID:-dry-run}"
  if [[ "$DRY_RUN" == 1 ]]; then
    RENDER="$(ENGINE=k8s K8S_CAPTURES="$caps" stack_render "$PROFILE" "$PLANE")" \
      || die "render for ENGINE=k8s failed (see above); nothing was started" 2
    DC=("$PYTHON" -m testbed.runtime.k8s.stackctl --render-dir "$RENDER")
    _record_command bash "$_K8S_SH" up "$RENDER" "${skip[@]}" --no-record
    return 0
  fi
  if ((!_K8S_CLEANUP)); then
    cleanup_push stack_teardown
    _K8S_CLEANUP=1
  fi
  RENDER="$(ENGINE=k8s K8S_CAPTURES="$caps" stack_render "$PROFILE" "$PLANE" 2>>"$RUN_DIR/$rel")" \
    || { RENDER=""; die "render for ENGINE=k8s failed (see $rel)" 1; }
  DC=("$PYTHON" -m testbed.runtime.k8s.stackctl --render-dir "$RENDER")
  mkdir -p "$(stack_state_dir)"
  printf '%s\n' "$RENDER" >"$(stack_current_file)"
  # --no-record: engine_record does it, after run-cpu's sample (stack_run_start --quiet-start)
  local rc=0 first evidence="failure/${rel%.log}"
  # the stack's deadline for k8s.sh up, and for every pod the driver starts later through stackctl
  # (its UEs: a loaded cluster takes minutes to run a container)
  export STACK_UP_TIMEOUT="$UP_TIMEOUT"
  run_bg_wait bash "$_K8S_SH" up "$RENDER" "${skip[@]}" --no-record \
    >>"$RUN_DIR/$rel" 2>&1 || rc=$?
  if ((rc)); then
    first="$(grep -m 1 '^error: ' "$RUN_DIR/$rel" | sed 's/^error: //' || true)"
    if ((rc == 3)); then
      # k8s.sh applied nothing: no stack to keep evidence of or tear down; a refusal of the
      # placement or the cluster stops a sharded campaign (exit 2), as bad input does
      rm -f "$(stack_current_file)"
      RENDER=""
      die "the cluster refused the stack for $PROFILE ($PLANE) before applying anything: ${first:-see $rel} (full log: $rel; make doctor ENGINE=k8s)" 2
    fi
    engine_evidence "$RUN_DIR/$evidence"
    die "stack for $PROFILE ($PLANE) did not come up on the cluster: ${first:-$(tail -n 3 "$RUN_DIR/$rel" | tr '\n' ' ')} (every pod's description and log: $evidence/; full log: $rel; make doctor ENGINE=k8s)" 1
  fi
  _k8s_hold_captures
}

# _k8s_hold_captures: per capture asked for, a process on this host that holds it until
# capture_stop: then it stops dumpcap in the pod(s) and copies the file out (stackctl capture-hold).
# Each capture already runs: its pod's holder started only once dumpcap wrote its header.
_k8s_hold_captures() {
  local name rel
  for name in "${!_K8S_CAPTURE_FILE[@]}"; do
    rel="${_K8S_CAPTURE_FILE[$name]}"
    setsid "${DC[@]}" capture-hold "$rel" "$RUN_DIR/$rel" >>"$RUN_DIR/${rel%.*}.capture.log" 2>&1 3>&- 4>&- 9>&- &
    _CAPTURE_PID[$name]=$!
    _CAPTURE_FILE[$name]="$rel"
    _CAPTURE_ATTRS[$name]="${_K8S_CAPTURE_ATTRS[$name]}"
    # copying a whole-run capture out of the pod(s) takes longer than a local dumpcap's flush, and
    # as long as the cluster is slow: the stack's own deadline, at least 300 s
    _CAPTURE_GRACE[$name]=$((UP_TIMEOUT > 300 ? UP_TIMEOUT : 300))
    log "capture $name running in the pod(s): $rel"
  done
}

engine_down() {
  "$PYTHON" -m testbed.runtime.k8s.stackctl --render-dir "$RENDER" down
}

# engine_watch_start SERVICE: the overlay watcher: the pods' container states as the API server
# pushes them (kubectl get pods --watch, stackctl watch): a container that ends or turns unready
# stops SERVICE's pings, as Compose's engine events do (scripts/lib/watch.sh).
engine_watch_start() {
  [[ "$DRY_RUN" != 1 && "$PROTOCOL" != none ]] || return 0
  mapfile -d '' -t _WATCH_STOP < <(dc_exec "$1" pkill -INT -x ping)
  overlay_watch "${DC[@]}" watch
}

# engine_evidence DIR [SERVICE...]: the pods (ps.txt, describe.txt) and each container's log.
engine_evidence() {
  [[ -n "$RENDER" ]] || return 0
  timeout "${EVIDENCE_TIMEOUT:-120}" "$PYTHON" -m testbed.runtime.k8s.stackctl --render-dir "$RENDER" evidence "$@" \
    >/dev/null 2>&1 || true
}

# engine_record: where the stack ran (nodes: name, kernel, CPU model; each pod's node and the
# addresses its interfaces took, N3 and N2 among them) into the run's manifest as `placement`.
engine_record() {
  [[ "$DRY_RUN" != 1 ]] || return 0
  (cd "$TESTBED_ROOT" && "$PYTHON" -m testbed.runtime.k8s.tool record "$RENDER" --run-dir "$RUN_DIR") >/dev/null \
    || warn "could not record where the stack ran (k8s placement record)"
}

# engine_n6_server_start REL PORT ADDRESS -- CMD...: CMD in a pod on the UPF's node, in the node's
# network namespace, bound to the n6 gateway ADDRESS the node's bridge holds (testbed/runtime/k8s/
# server.py; nodepods.py says why there); returns once it listens on ADDRESS:PORT, its node in the
# manifest (placement.servers). Its output, the pod's log, goes into RUN_DIR/REL when stopped.
_K8S_SERVER=n6-server
_K8S_SERVER_REL=""
engine_n6_server_start() {
  local rel="$1" port="$2" address="$3" node srv
  shift 4
  srv=("$PYTHON" -m testbed.runtime.k8s.server --render-dir "$RENDER")
  if [[ "$DRY_RUN" == 1 ]]; then
    printf '+ %s\n' "$("${srv[@]}" plan "$_K8S_SERVER" "$address" "$port" -- "$@")" >&3
    return 0
  fi
  _record_command "${srv[@]}" start "$_K8S_SERVER" "$address" "$port" --run-dir "$RUN_DIR" -- "$@"
  _K8S_SERVER_REL="$rel"
  cleanup_push engine_n6_server_stop
  node="$("${srv[@]}" start "$_K8S_SERVER" "$address" "$port" --run-dir "$RUN_DIR" -- "$@" \
          2>>"$RUN_DIR/${rel%.*}.pod.log")" \
    || die "the server pod $_K8S_SERVER did not listen on $address:$port on the UPF's node; see ${rel%.*}.pod.log" 1
  log "server pod $_K8S_SERVER on node $node (its network namespace, $address:$port)"
}

engine_n6_server_stop() {
  [[ -n "$_K8S_SERVER_REL" ]] || return 0
  "$PYTHON" -m testbed.runtime.k8s.server --render-dir "$RENDER" stop "$_K8S_SERVER" "$RUN_DIR/$_K8S_SERVER_REL" \
    || warn "could not keep the log of the server pod $_K8S_SERVER or delete it (the stack's namespace takes it)"
  record_file "$_K8S_SERVER_REL" log role=n6-server ran=pod
  _K8S_SERVER_REL=""
}

# engine_cpu_read SNAPS LABEL [TABLE]: every node's /proc/stat at one instant, a line per kernel in
# SNAPS (testbed/runtime/k8s/cpu.py: a reader pod per node, made at the first read, before the
# first boot, and kept until the driver ends, since the idle windows are read after each boot's
# teardown), and with TABLE each running container's cgroup usage_usec at that instant, only the
# nodes the stack runs on written.
_K8S_CPU_READERS=0
engine_cpu_read() {
  local snaps="$1" label="$2" table=() cpu=("$PYTHON" -m testbed.runtime.k8s.cpu)
  [[ -z "${3:-}" ]] || table=(--table "$3")
  if [[ "$DRY_RUN" == 1 ]]; then
    ((_K8S_CPU_READERS)) || "${cpu[@]}" plan | sed 's/^/+ /' >&3
    _K8S_CPU_READERS=1
    _record_command "${cpu[@]}" read "$snaps" "$label" "${table[@]}"
    return 0
  fi
  if ((!_K8S_CPU_READERS)); then
    _K8S_CPU_READERS=1
    cleanup_push _k8s_cpu_down
    run_cmd "${cpu[@]}" up >>"$RUN_DIR/cpu-readers.log" 2>&1 \
      || die "the CPU readers did not come up on the nodes; see cpu-readers.log" 1
    # recorded once here: at an edge nothing but the read runs (the manifest write takes a while)
    _record_command "${cpu[@]}" read SNAPS LABEL "[--table TABLE]"
  fi
  "${cpu[@]}" read "$snaps" "$label" "${table[@]}" 2>>"$RUN_DIR/cpu-readers.log" 3>&- 4>&- 9>&- \
    || die "could not read the nodes' CPU ($label); see cpu-readers.log" 1
}

_k8s_cpu_down() {
  "$PYTHON" -m testbed.runtime.k8s.cpu down >/dev/null 2>&1 \
    || warn "could not delete the CPU readers' namespace: kubectl delete namespace ${K8S_NAMESPACE:-g5tb}-cpu"
}
