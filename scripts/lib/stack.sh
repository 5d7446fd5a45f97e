# shellcheck shell=bash
# shellcheck disable=SC2153  # PROFILE, PLANE ...: globals of common.sh
# The Docker stack: up (scripts/up.sh), overlay records asked of the plug-ins, teardown with its
# evidence kept, the start and end every Docker driver shares.
# Part of scripts/lib/common.sh, which sources it (source that, not this).

# ----------------------------------------------------------------- Docker stack (compose.sh)
# The Docker drivers bring the stack up with scripts/up.sh (render + compose + readiness), and
# talk to it through the compose wrapper of scripts/lib/compose.sh (stack engineer's).

RENDER=""
DC=()
_STACK_CLEANUP=0
_STACK_CREATED=0
_DRY_RENDER=""

# docker_begin [EXPERIMENT]: the stack wrapper, the runtime's driver library (ENGINE=: compose, the
# default, or k8s; testbed/contract.py RuntimePlugin.driver: the engine_* functions below call it),
# the experiment refused before anything starts where that runtime does not run its driver, and
# the engine's own refusals for it (engine_check), the engine (not needed for DRY_RUN).
docker_begin() {
  # shellcheck source=scripts/lib/compose.sh
  source "$TESTBED_ROOT/scripts/lib/compose.sh"
  local lib
  lib="$(cd "$TESTBED_ROOT" && "$PYTHON" -m testbed plugins --driver "${ENGINE:-}")" \
    || die "ENGINE=${ENGINE:-}: no such runtime (make plugins lists them)" 2
  # shellcheck disable=SC1090  # the runtime's own library
  source "$lib"
  if [[ -n "${1:-}" && "$ENGINE_EXPERIMENTS" != "*" && " $ENGINE_EXPERIMENTS " != *" $1 "* ]]; then
    die "ENGINE=$ENGINE runs the drivers of $ENGINE_EXPERIMENTS, not $1 yet (docs/kubernetes.md); nothing was started" 2
  fi
  [[ -z "${1:-}" ]] || engine_check "$1"
  [[ "$DRY_RUN" == 1 ]] || engine_require
}

# The images a run records in its manifest (names set by compose.sh): the RAN variant's (RAN) own.
docker_image_args() {
  local ran_image="$UERANSIM_IMAGE"
  [[ "${RAN:-ueransim}" == ueransim ]] || ran_image="$OAI_IMAGE"
  printf '%s\n' --image "$OPEN5GS_IMAGE" --image "$ran_image" --image "$TOOLS_IMAGE" --image "$MONGO_IMAGE"
}

# ran_value KEY: a RAN_* value of the running render (compose.env; testbed/ran/__init__.py lists
# them), UERANSIM's before a stack is rendered (a dry run without a render).
ran_value() {
  if [[ -n "$RENDER" && -f "$RENDER/compose.env" ]]; then
    stack_env "$RENDER" "$1"
    return
  fi
  case "$1" in
    RAN) echo ueransim ;;
    RAN_UE_TUN) echo uesimtun0 ;;
    RAN_UE_SESSION_LOG) echo "TUN interface[uesimtun" ;;
    RAN_READY) echo gnb ;;
    *) die "ran_value: unknown key $1" 1 ;;
  esac
}

# bridge_of NETWORK: the host bridge of a compose network (compose/base.yaml names them).
bridge_of() {
  printf '%s-%s\n' "${BRIDGE_PREFIX:-g5tb}" "$1"
}

# stack_create REL_LOG [up.sh args...]: the stack's networks and containers, nothing started
# (up.sh --create-only), so that captures started next on its bridges see every packet from the
# first NF's start (the NF-to-NRF channels of the start-up included). Then stack_up with the same
# arguments starts it (it passes --start-created after a stack_create).
stack_create() {
  local rel="$1"
  shift
  STACK_TAG="$(_stack_tag "$rel")"
  _STACK_CREATED=1
  engine_create "$rel" "$@"
  engine_pin
}

# stack_up REL_LOG [up.sh args...]: a fresh stack for PROFILE on PLANE, up and ready (the runtime's
# engine_up: output kept in RUN_DIR/REL_LOG, evidence and a one-line reason when it fails); sets
# RENDER and DC, the command line with Compose's verbs the drivers reach the stack through.
stack_up() {
  engine_up "$@"
}


# protects PLANE: true when the run's overlay covers that plane (the baseline protects none)
protects() {
  [[ "$PROTOCOL" != none && ",$PLANE," == *",$1,"* ]]
}

# plane_value PLANE FIELD: a field of the plane (nf-configs/channels.yaml); port = its number.
plane_value() {
  "$PYTHON" -c 'import sys; from testbed import planes, stack
p = planes.get(sys.argv[1])
print(p.port(stack.load()) if sys.argv[2] == "port" else getattr(p, sys.argv[2]))' "$1" "$2" \
    || die "no field $2 of plane $1 in nf-configs/channels.yaml" 1
}

# plane_client PLANE: the node that opens the plane's link among the running RAN's nodes (N2: the
# gNB, or the CU-CP of the split RAN), from the channel map.
plane_client() {
  "$PYTHON" -c 'import sys; from testbed import channels, ran, stack
v = ran.restrict(stack.load(), sys.argv[2])
print(next(c.client for c in channels.channels(sys.argv[1]) if c.client in v["nodes"] and c.server in v["nodes"]))' \
    "$1" "$(ran_value RAN)" || die "no link of plane $1 among the nodes of RAN=$(ran_value RAN)" 1
}

# plaintext_view_start NAME REL NODE PLANE GROUP [A=V...]: a timing capture of PLANE's traffic as NODE
# itself sees it, for a plane whose wire is protected (the bridge shows ESP/WireGuard only, or a
# relay's DTLS): an nftables log rule in NODE's namespace sends every packet of the plane's protocol
# port to and from it (each packet once: by NODE's role on the plane, client or server, also on a
# relay's loopback leg) (output before encryption, input after decryption, whatever the datapath) to nflog GROUP, and
# dumpcap in NODE's holder (tools image; an overlay endpoint, so it has NET_ADMIN) writes them
# whole into RUN_DIR/REL. Its timestamps are NODE's, so the times include NODE's own crypto.
plaintext_view_start() {
  local name="$1" rel="$2" node="$3" plane="$4" group="$5" port proto role=server rules
  shift 5
  port="$(plane_value "$plane" port)"
  proto="$(plane_value "$plane" transport)"
  [[ "$(plane_client "$plane")" != "$node" ]] || role=client
  rules="$(plaintext_view_rules "$proto" "$port" "$group" "$role")"
  # a here-string, not a pipe: a reader that never reads (DRY_RUN) cannot fail the writer
  run_cmd "${DC[@]}" exec -T "$node-net" nft -f - <<<"$rules" \
    || die "could not add the $plane log rule in $node-net" 1
  # shellcheck disable=SC2016  # the inner script expands its own arguments
  capture_start "$name" "$rel" "$@" -- \
    bash -c 'out="$1"; shift; exec "$@" >"$out"' _ "${RUN_DIR:-.}/$rel" \
    "${DC[@]}" exec -T "$node-net" dumpcap -q -i "nflog:$group" -w -
}

# plaintext_view_rules PROTO PORT GROUP ROLE: the nftables ruleset of plaintext_view_start. A client
# (it connects to PORT) logs what it sends to PORT and receives from PORT, a server what it sends
# from PORT and receives on PORT: each packet once, on the wire or on a loopback relay leg (where a
# packet passes output and input in the same namespace). queue-threshold 1: each packet goes to the
# listener at once (without it nfnetlink_log handed dumpcap only a connection's first packet on this
# kernel, 6.18; tests/integration/test_ran_planes_netns.py).
plaintext_view_rules() {
  local proto="$1" port="$2" group="$3" role="$4" out in
  case "$role" in
    client) out=dport in=sport ;;
    server) out=sport in=dport ;;
    *) die "plaintext_view_rules: role $role is not client or server" 1 ;;
  esac
  cat <<NFT
table inet testbed_timing_$group {
  chain out { type filter hook output priority 0; policy accept; $proto $out $port log group $group queue-threshold 1; }
  chain in { type filter hook input priority 0; policy accept; $proto $in $port log group $group queue-threshold 1; }
}
NFT
}

# plaintext_view_stop NAME NODE: dumpcap in the holder ends its file on SIGINT; then the stream closes.
plaintext_view_stop() {
  [[ "$DRY_RUN" == 1 ]] || "${DC[@]}" exec -T "$2-net" pkill -INT -x dumpcap >/dev/null 2>&1 || true
  capture_stop "$1"
}

# overlay_ask ASK [ARGS...]: what the profile's overlay plug-in says (testbed/cli/overlay.py), one
# answer a line: endpoints (on PLANE, among the nodes the running RAN variant has), state-command,
# daemons, lab-tools, holder-commands --moment M.
overlay_ask() {
  tb overlay "$1" --profile "$PROFILE" "${@:2}"
}

# require_runnable_profile: stop before anything starts when this host's datapath cannot run the
# profile (the overlay plug-in's cannot_run: e.g. AES-GMAC on userspace ESP, a kernel without the
# overlay's only datapath).
require_runnable_profile() {
  local why
  why="$(overlay_ask cannot-run)" \
    || die "profile $PROFILE cannot run on this host: ${why:-datapath check failed} (make doctor)" 1
}

# overlay_endpoints: the nodes the profile's overlay runs on for PLANE, among the nodes the running
# RAN variant has (testbed/ran: n3 is the gNB's with UERANSIM, the CU-UP's with the split).
overlay_endpoints() {
  overlay_ask endpoints --plane "$PLANE" --ran "$(ran_value RAN)"
}

# stack_overlay_state TAG: what each overlay endpoint negotiated (the plug-in's state command, e.g.
# `swanctl --list-sas`, run in its namespace holder <node>-net), kept as logs TAG-<node>.txt.
# Nothing for an overlay without one (TLS: the capture shows it).
stack_overlay_state() {
  local tag="$1" node nodes=() cmd=()
  mapfile -t cmd < <(overlay_ask state-command)
  ((${#cmd[@]})) || return 0
  mapfile -t nodes < <(overlay_endpoints)
  for node in "${nodes[@]}"; do
    # bounded: a wedged holder (the failure path reads it too) must not hold the driver
    run_cmd timeout 60 "${DC[@]}" exec -T "$node-net" "${cmd[@]}" >"$(out_path "$tag-$node.txt")" 2>&1 \
      || warn "could not read the overlay state of $node ($tag)"
  done
}

# stack_holder_commands TAG MOMENT: the overlay plug-in's commands for MOMENT (before-cold,
# before-warm; e.g. WireGuard's session reset) in every endpoint's holder (<node>-net), output kept
# as TAG-<record>-<node>.txt and recorded (its run check reads them). Nothing for other overlays.
stack_holder_commands() {
  local tag="$1" moment="$2" node nodes=() line name cmd=() steps=()
  # read the whole answer first: `docker compose exec` may read the loop's stdin
  mapfile -t steps < <(overlay_ask holder-commands --moment "$moment")
  ((${#steps[@]})) || return 0
  mapfile -t nodes < <(overlay_endpoints)
  for line in "${steps[@]}"; do
    read -ra cmd <<<"$line"
    name="${cmd[0]}"
    cmd=("${cmd[@]:1}")
    for node in "${nodes[@]}"; do
      run_cmd "${DC[@]}" exec -T "$node-net" "${cmd[@]}" >"$(out_path "$tag-$name-$node.txt")" 2>&1 </dev/null \
        || die "overlay holder $node: \`${cmd[*]}\` failed ($tag); see $tag-$name-$node.txt" 1
      [[ "$DRY_RUN" == 1 ]] || record_file "$tag-$name-$node.txt" log
    done
  done
}

# stack_logs REL: every container's log (timestamps) into RUN_DIR/REL; the overlay's datapath line
# is taken from it.
stack_logs() {
  local rel="$1"
  [[ "$DRY_RUN" == 1 || ${#DC[@]} -eq 0 ]] && return 0
  timeout 120 "${DC[@]}" "${STACK_ALL_PROFILES[@]}" logs --no-color --timestamps >"$RUN_DIR/$rel" 2>&1 \
    || warn "could not save the container logs into $rel"
}

stack_teardown() {
  [[ -n "$RENDER" ]] || return 0
  if [[ "$DRY_RUN" == 1 ]]; then
    _record_command "$TESTBED_ROOT/scripts/down.sh"
    RENDER=""
    return 0
  fi
  engine_down >/dev/null 2>&1 || warn "stack teardown failed: run \`make down\` (ENGINE=k8s: make k8s-down)"
  rm -f "$(stack_current_file)"
  RENDER=""
}

# dc_exec SERVICE CMD...: the command line that runs CMD in a service (printed NUL-separated).
dc_exec() {
  local svc="$1"
  shift
  printf '%s\0' "${DC[@]}" "${STACK_ALL_PROFILES[@]}" exec -T "$svc" "$@"
}

# ue_address SERVICE: a UE's address on its PDU session (the render's RAN_UE_TUN: uesimtun0,
# oaitun_ue1); "UE_IP" in a dry run; dies without one.
ue_address() {
  [[ "$DRY_RUN" == 1 ]] && { echo UE_IP; return 0; }
  local ip tun
  tun="$(ran_value RAN_UE_TUN)"
  ip="$("${DC[@]}" exec -T "$1" ip -4 -o addr show dev "$tun" | awk '{split($4, a, "/"); print a[1]}')"
  [[ -n "$ip" ]] || die "$1 has no address on $tun (no PDU session?); see stack-up.log" 1
  echo "$ip"
}

# ue1_address: UE 1's address on its PDU session.
ue1_address() {
  ue_address ue1
}

# ping_cmd COUNT SIZE: the Docker drivers' sender: UE 1 pings TARGET through its PDU session
# (uesimtun0, or the OAI UE's oaitun_ue1: the render's RAN_UE_TUN). run-overlay defines its own.
ping_cmd() {
  local argv=()
  mapfile -d '' -t argv < <(ping_argv "$1" "$2")
  dc_exec ue1 "${argv[@]}" -I "$(ran_value RAN_UE_TUN)" "$TARGET"
}

# _stack_tag REL_LOG: the prefix a boot's records share ("u01-r01-" for u01-r01-stack-up.log, "" for
# stack-up.log): [TAG]sa-before-<node>.txt, [TAG]sa-after-..., [TAG]containers.log, failure/[TAG]...
_stack_tag() {
  local tag="${1%stack-up.log}"
  [[ "$tag" != "$1" ]] || tag=""
  printf '%s\n' "$tag"
}

# stack_run_start [--quiet-start] REL_LOG [up.sh args...]: the one start path of every Docker driver
# (run-n3, -sbi, -cpu, -throughput, -secfn, -f1u, -ran-procedures): start the stack made by
# stack_create (its captures already running), keep the hashes of the rendered configs that run and
# what the overlay negotiated ([TAG]sa-before-<node>.txt); stack_boot_end / stack_run_end record it
# again at the end ([TAG]sa-after, what the validity check reads), and the exit trap does on any
# failure, with every container's log (failure/[TAG]at-exit/). --quiet-start: nothing is exec'd
# into the stack at its start (run-cpu: the CPU time it measures runs from the boot), so where it
# ran (engine_record: on a cluster it reads each node's CPU model in a pod) is recorded by
# stack_boot_end instead.
STACK_TAG=""
_STACK_RECORD_LATER=0
stack_run_start() {
  local quiet=0
  [[ "${1:-}" != --quiet-start ]] || { quiet=1; shift; }
  STACK_TAG="$(_stack_tag "$1")"
  stack_up "$@"
  _STACK_RECORD_LATER=$quiet
  ((quiet)) || engine_record
  render_hashes "$RENDER" "${STACK_TAG}rendered-configs.sha256"
  ((quiet)) || stack_overlay_state "${STACK_TAG}sa-before"
}

# stack_boot_end: the end of one boot of a multi-boot driver (run-sbi's iterations, run-cpu's
# repetitions): what the overlay negotiated, the containers' logs (and the datapath line from
# them), then the teardown.
stack_boot_end() {
  ((!_STACK_RECORD_LATER)) || engine_record
  _STACK_RECORD_LATER=0
  stack_overlay_state "${STACK_TAG}sa-after"
  stack_logs "${STACK_TAG}containers.log"
  [[ "$DRY_RUN" == 1 ]] || datapath_from_log "$RUN_DIR/${STACK_TAG}containers.log"
  stack_teardown
}

# _stack_evidence_at_exit: a run that fails (not one interrupted on purpose) with its stack up keeps,
# before the exit trap's cleanups tear the stack down, what the overlay negotiated
# ([TAG]sa-after-<node>.txt, if not recorded yet), the containers' logs ([TAG]containers.log) and the
# evidence of scripts/lib/compose.sh stack_save_evidence (failure/[TAG]at-exit/: one log per
# container, ps, states and health, nr-cli); its summary goes to the terminal and, when the stack
# names a first failure, into the run's reason.
_stack_evidence_at_exit() {
  [[ "$DRY_RUN" != 1 && -n "$RENDER" && -n "$RUN_DIR" && "$RUN_STATE" != complete ]] || return 0
  ((INTERRUPTED == 0)) || return 0
  local dir="failure/${STACK_TAG}at-exit" line first=""
  log "run failed with the stack up: keeping every container's log, state and health in $dir/ before the teardown"
  compgen -G "$RUN_DIR/${STACK_TAG}sa-after-*" >/dev/null || stack_overlay_state "${STACK_TAG}sa-after"
  stack_logs "${STACK_TAG}containers.log"
  engine_evidence "$RUN_DIR/$dir"
  while IFS= read -r line; do
    log "$line"
    [[ -n "$first" || "$line" != "first failure: "* ]] || first="$line"
  done < <(stack_failure_lines "$RUN_DIR/$dir")
  _reason_add_stack_failure "$first"
}

# ue1_ping_series: ping_series from UE 1 under the overlay watcher (an overlay that dies stops it).
ue1_ping_series() {
  engine_watch_start ue1
  ping_series "UE 1"
  watch_stop
}

# stack_run_end: the end of a one-boot Docker run: what the overlay negotiated, the containers'
# logs (and the overlay's datapath line from them), then run_end (validity, manifest).
stack_run_end() {
  stack_overlay_state sa-after
  stack_logs containers.log
  [[ "$DRY_RUN" == 1 ]] || datapath_from_log "$RUN_DIR/containers.log"
  run_end
}
