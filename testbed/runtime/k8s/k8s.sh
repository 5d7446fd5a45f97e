#!/usr/bin/env bash
# The Kubernetes runtime's make targets (mk/90-k8s.mk, docs/kubernetes.md):
#
#   k8s.sh up RENDER_DIR [--skip POD]... [--no-record]
#                             preflight (kubectl, cluster, Multus, the placement's nodes), then
#                             apply the render's k8s/ objects: the data, every pod with a holder at
#                             once (the holders start together, as in Compose), then wave by wave
#                             (k8s/waves.txt: the Compose depends_on order) open those pods' start
#                             gates or apply the pods without one, waiting for each pod; record
#                             where it ran. --skip: a pod a driver starts itself (run-sbi's UE 1,
#                             as up.sh --no-ue); --no-record: the driver records it
#                             (engine_record: run-cpu reads nothing in the pods before its sample)
#   k8s.sh down NAMESPACE     delete the stack's namespace (every object of the stack is in it)
#   k8s.sh images RENDER_DIR  the images its pods run to REGISTRY (docker push; render with the same
#                             REGISTRY=), or into containerd (ctr -n k8s.io images import) here and
#                             on IMPORT_HOSTS (ssh)
#
# Nothing is started before the checks pass; a pod that does not come up in STACK_UP_TIMEOUT
# (default 300 s) ends it with that pod's description and logs.
# Exit: 0 done, 1 failure, 2 usage, 3 up refused before anything was applied (the preflight, or
# the stack's namespace is taken): the drivers say so instead of "did not come up".
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
PYTHON="${PYTHON:-python3}"
KUBECTL="${KUBECTL:-kubectl}"
TIMEOUT="${STACK_UP_TIMEOUT:-300}"
# as scripts/up.sh hands its deadline to the overlays' holders (ipsec/entrypoint.sh waits for its
# peer that long): split_pods sets it in the pods (render.py UP_VARIABLES)
export STACK_UP_TIMEOUT="$TIMEOUT"
GATE_RETRY="${GATE_RETRY:-5}"     # s between tries of a request a loaded API server let fail (a gate, an apply)
# server-side apply: a client-side apply copies each object into its last-applied annotation, which
# may hold 256 KiB (the guest's API server refused a ConfigMap of one Rosenpass public key so)
APPLY=(--server-side --field-manager=g5tb --force-conflicts)

die() { printf 'error: %s\n' "$*" >&2; exit 1; }
refuse() { printf 'error: %s\n' "$*" >&2; exit 3; }
log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
# Ctrl-C while a `kubectl wait` runs: say so and exit 130 before its failure branch blames the pod
# (a guest run interrupted at 19 min said "did not run within 3600 s: its holder did not start")
trap 'printf "error: interrupted\n" >&2; exit 130' INT TERM

need_kubectl() {
  command -v "$KUBECTL" >/dev/null 2>&1 \
    || die "kubectl ($KUBECTL) not found on PATH: ENGINE=k8s drives a cluster through kubectl; install it and point KUBECONFIG at the cluster (docs/kubernetes.md); nothing was started"
}

# apply_objects WHAT <OBJECTS: the server-side apply, a failure of the kind a loaded API server
# gives tried again within the stack's deadline (apply.py: the guest's cluster let one apply of
# run-cpu's pods time out, and the stack did not come up); exit 1 with its error otherwise
apply_objects() {
  PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m testbed.runtime.k8s.apply --what "$1" \
    --within "$TIMEOUT" --every "$GATE_RETRY" -- "$KUBECTL" apply "${APPLY[@]}" -f - || exit 1
}

# the namespace of a render (its Namespace object)
render_namespace() {
  "$PYTHON" -c 'import sys, yaml
for o in yaml.safe_load_all(open(sys.argv[1])):
    if o and o.get("kind") == "Namespace":
        print(o["metadata"]["name"]); break' "$1/k8s/objects.yaml"
}

# objects of KIND... (or, with -v, all but them) of objects.yaml, as a YAML stream on stdout
objects_of() {
  local invert=0
  [[ "$1" == "-v" ]] && { invert=1; shift; }
  "$PYTHON" -c 'import sys, yaml
loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
objs = [o for o in yaml.load_all(open(sys.argv[1]), Loader=loader) if o]
kinds, invert = set(sys.argv[3:]), sys.argv[2] == "1"
sys.stdout.write(yaml.safe_dump_all([o for o in objs if (o["kind"] in kinds) != invert], sort_keys=False))' \
    "$RENDER/k8s/objects.yaml" "$invert" "$@"
}

# every Pod of objects.yaml into DIR/<name>.yaml, read once (libyaml where PyYAML has it: the
# render holds the Secrets, and parsing it once per pod made k8s-up slow), with the variables
# Compose would interpolate at this `up` from the environment (render.py UP_VARIABLES: the stack's
# deadline, UES; the probes' timing, probetiming.py VARIABLES); a pod's start gate (its annotation testbed/start-gate, pods.py GATE_ANNOTATION)
# into DIR/<name>.gate as "CONTAINER COMMAND...", the command in that container that opens it
split_pods() {
  (cd "$ROOT" && "$PYTHON" -c 'import json, os, sys, yaml
from testbed.runtime.k8s.render import up_values
loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
values = dict(os.environ)
for o in yaml.load_all(open(sys.argv[1]), Loader=loader):
    if o and o["kind"] == "Pod":
        up_values([o], values)
        base = sys.argv[2] + "/" + o["metadata"]["name"]
        with open(base + ".yaml", "w") as fh:
            fh.write(yaml.safe_dump(o, sort_keys=False))
        gate = (o["metadata"].get("annotations") or {}).get("testbed/start-gate")
        if gate:
            gate = json.loads(gate)
            with open(base + ".gate", "w") as fh:
                fh.write(" ".join([gate["container"], *gate["open"]]) + "\n")' "$RENDER/k8s/objects.yaml" "$1")
}

# pod_failure POD: why POD can no longer get to its goal (podstate.py: a container ended with an
# error or could not start; restartPolicy Never), empty while it still can
pod_failure() {
  "$KUBECTL" -n "$NS" get "pod/$1" -o json 2>/dev/null | "$PYTHON" "$ROOT/testbed/runtime/k8s/podstate.py" 2>/dev/null || true
}

declare -A RECREATED=()            # pods made once more after a StartError (wait_pod)

# wait_pod POD REMAKE TIMEOUT_MESSAGE WAIT_ARGS...: `kubectl wait WAIT_ARGS pod/POD` up to TIMEOUT s,
# in slices of up to 30 s; between them a pod that can no longer get there (podstate.py: a container
# ended with an error or could not start; restartPolicy Never) stops it at once, named. REMAKE: the
# pod's YAML to apply once more after a StartError, given only while none of its programs can have
# started (its gate is still shut, or it has none); empty otherwise
wait_pod() {
  local pod="$1" remake="$2" message="$3" end=$((SECONDS + TIMEOUT)) slice failed
  shift 3
  while :; do
    slice=$((end - SECONDS))
    ((slice <= 30)) || slice=30
    ((slice >= 1)) || slice=1
    "$KUBECTL" -n "$NS" wait "$@" "pod/$pod" --timeout="${slice}s" >/dev/null 2>&1 && return 0
    failed="$(pod_failure "$pod")"
    if [[ -n "$remake" && "$failed" == *": StartError (exit "* && -z "${RECREATED[$pod]:-}" ]]; then
      # the runtime could not start a container (in the guest: containerd's shim did not answer
      # under load), so none of the pod's programs ran and nothing was measured: make the pod
      # once more (its holder renegotiates with its peers as at a first start)
      RECREATED[$pod]=1
      log "pod $pod: the runtime could not start a container ($failed); creating the pod once more"
      "$KUBECTL" -n "$NS" delete pod "$pod" --wait=true >/dev/null
      apply_objects "pod $pod" <"$remake"
      continue
    fi
    if [[ -n "$failed" ]]; then
      explain_pod "$pod"
      die "pod $pod failed: $failed (above: its description and logs)"
    fi
    ((SECONDS < end)) || { explain_pod "$pod"; die "pod $pod: $message (above: its description and logs)"; }
  done
}

explain_pod() {
  "$KUBECTL" -n "$NS" describe pod "$1" >&2 || true
  "$KUBECTL" -n "$NS" logs "$1" --all-containers --tail=40 >&2 || true
}

# gate_exit POD CONTAINER: the exit code of POD's gate container once it ended (empty before)
gate_exit() {
  "$KUBECTL" -n "$NS" get "pod/$1" \
    -o "jsonpath={.status.initContainerStatuses[?(@.name==\"$2\")].state.terminated.exitCode}" 2>/dev/null || true
}

# open_gate POD GATE YAML: let POD's programs start (testbed/runtime/k8s/pods.py start_gate). The
# kubelet starts the gate container once the sidecars before it (its holder: the overlay in force)
# have started, so wait for that, then run in it the command that opens it. GATE: the pod's
# .gate file of split_pods; YAML: the pod, made once more if the runtime cannot start a container
# before the gate opens
open_gate() {
  local pod="$1" words=() end=$((SECONDS + TIMEOUT)) err failed
  read -r -a words <"$2"
  log "opening the start gate of pod $pod once its holder started (up to ${TIMEOUT} s)"
  wait_pod "$pod" "$3" "its start gate did not run within ${TIMEOUT} s: its holder did not start" \
    --for="jsonpath={.status.initContainerStatuses[?(@.name==\"${words[0]}\")].started}=true"
  # one exec is one request through the API server to the kubelet, which a loaded cluster lets
  # time out (the guest at load 70: "Internal error occurred: Timeout occurred"); opening is
  # idempotent, so it is tried again, within the deadline the wait for its holder began (one
  # TIMEOUT for the whole opening, not one more after the wait)
  until err="$("$KUBECTL" -n "$NS" exec "$pod" -c "${words[0]}" -- "${words[@]:1}" 2>&1 >/dev/null)"; do
    # an exec whose answer timed out may have run: the gate then ended, opened
    [[ "$(gate_exit "$pod" "${words[0]}")" != 0 ]] || break
    failed="$(pod_failure "$pod")"
    [[ -z "$failed" ]] || { explain_pod "$pod"; die "pod $pod failed: $failed (above: its description and logs)"; }
    if ((SECONDS >= end)); then
      explain_pod "$pod"
      die "pod $pod: its start gate did not open within ${TIMEOUT} s: ${err:-exec failed} (above: its description and logs)"
    fi
    log "pod $pod: opening its start gate failed (${err:-exec failed}); trying again"
    sleep "$GATE_RETRY"
  done
}

cmd_up() {
  RENDER="${1:?usage: k8s.sh up RENDER_DIR [--skip POD]...}"
  shift
  local -A skip=()
  local record=1
  while (($#)); do
    if [[ "$1" == --no-record ]]; then
      record=0
      shift
      continue
    fi
    [[ "$1" == --skip && -n "${2:-}" ]] || { usage >&2; exit 2; }
    skip[$2]=1
    shift 2
  done
  [[ -f "$RENDER/k8s/objects.yaml" ]] \
    || die "$RENDER/k8s/objects.yaml missing: render first (make render ENGINE=k8s PROFILE=...)"
  need_kubectl
  (cd "$ROOT" && "$PYTHON" -m testbed.runtime.k8s.tool preflight "$RENDER") || exit 3
  NS="$(render_namespace "$RENDER")"
  if "$KUBECTL" get namespace "$NS" >/dev/null 2>&1; then
    refuse "namespace $NS exists: a stack is up (make k8s-down K8S_NAMESPACE=$NS first)"
  fi
  log "applying the namespace, networks and data of $RENDER"
  objects_of -v Pod | apply_objects "the namespace, networks and data"
  # the API server admits a pod only once its namespace's `default` service account exists, which
  # the controller manager makes after the namespace (in the guest's emulated cluster a pod applied
  # at once was refused: serviceaccount "default" not found)
  "$KUBECTL" -n "$NS" wait --for=create serviceaccount/default --timeout="${TIMEOUT}s" >/dev/null \
    || die "namespace $NS has no default service account after ${TIMEOUT} s (is the controller manager running?)"
  local pods_dir
  pods_dir="$(mktemp -d)"
  # shellcheck disable=SC2064 # the directory is known now
  trap "rm -rf '$pods_dir'" EXIT
  split_pods "$pods_dir"
  local wave entry pod cond remake gated=()
  # every pod with a holder at once, as Compose starts every holder at once (they have no
  # depends_on): an overlay's holder waits for its peers' holders, which may belong to a later
  # wave (the UPF's IPsec holder for the gNB's); each pod's programs wait at its start gate
  while IFS= read -r wave; do
    for entry in $wave; do
      pod="${entry%%=*}"
      if [[ -z "${skip[$pod]:-}" && -f "$pods_dir/$pod.gate" ]]; then
        gated+=("$pod")
      fi
    done
  done <"$RENDER/k8s/waves.txt"
  if ((${#gated[@]})); then
    log "creating the pods with a holder at once (their programs wait at their start gates): ${gated[*]}"
    for pod in "${gated[@]}"; do
      printf -- '---\n'
      cat "$pods_dir/$pod.yaml"
    done | apply_objects "the pods with a holder"
  fi
  # then Compose's order: a wave's pods start their programs (a gate opened, or the pod applied)
  # once every pod they depend on is ready or done
  while IFS= read -r wave; do
    [[ -n "$wave" ]] || continue
    for entry in $wave; do
      pod="${entry%%=*}"
      [[ -z "${skip[$pod]:-}" ]] || continue
      if [[ -f "$pods_dir/$pod.gate" ]]; then
        open_gate "$pod" "$pods_dir/$pod.gate" "$pods_dir/$pod.yaml"
      else
        apply_objects "pod $pod" <"$pods_dir/$pod.yaml"
      fi
    done
    for entry in $wave; do
      pod="${entry%%=*}" cond="${entry#*=}"
      [[ -z "${skip[$pod]:-}" ]] || continue
      log "waiting for pod $pod ($cond, up to ${TIMEOUT} s)"
      remake="$pods_dir/$pod.yaml"
      [[ ! -f "$pods_dir/$pod.gate" ]] || remake=""      # its gate is open: its programs ran
      if [[ "$cond" == succeeded ]]; then
        wait_pod "$pod" "$remake" "did not complete within ${TIMEOUT} s" --for=jsonpath='{.status.phase}'=Succeeded
      else
        wait_pod "$pod" "$remake" "not ready within ${TIMEOUT} s" --for=condition=Ready
      fi
    done
  done <"$RENDER/k8s/waves.txt"
  if ((record)); then
    (cd "$ROOT" && "$PYTHON" -m testbed.runtime.k8s.tool record "$RENDER") >/dev/null
    log "stack up in namespace $NS; where it runs: $RENDER/k8s/placement-record.json"
  else
    log "stack up in namespace $NS"
  fi
}

cmd_down() {
  local ns="${1:?usage: k8s.sh down NAMESPACE}"
  need_kubectl
  "$KUBECTL" delete namespace "$ns" --ignore-not-found --wait=true
}

# the images the render's pods run (on-demand ones included), one a line
render_images() {
  "$PYTHON" -c 'import sys, yaml
from pathlib import Path
seen = []
for f in [Path(sys.argv[1]) / "objects.yaml", *sorted((Path(sys.argv[1]) / "on-demand").glob("*.yaml"))]:
    for o in yaml.safe_load_all(f.read_text()):
        if o and o["kind"] == "Pod":
            for c in o["spec"].get("initContainers", []) + o["spec"]["containers"]:
                if c["image"] not in seen:
                    seen.append(c["image"])
print("\n".join(seen))' "$1/k8s"
}

cmd_images() {
  local render="${1:?usage: k8s.sh images RENDER_DIR}" names=() ref
  [[ -f "$render/k8s/objects.yaml" ]] || die "$render/k8s/objects.yaml missing: render first (make render ENGINE=k8s)"
  mapfile -t names < <(render_images "$render")
  command -v docker >/dev/null 2>&1 || die "docker CLI not found: k8s-images moves the images built by \`make build\`"
  if [[ -n "${REGISTRY:-}" ]]; then
    for ref in "${names[@]}"; do
      # the render names them under REGISTRY already: push the local image under that name
      docker tag "${ref#"$REGISTRY"/}" "$ref"
      docker push "$ref"
    done
    log "pushed ${#names[@]} images to $REGISTRY"
    return 0
  fi
  command -v ctr >/dev/null 2>&1 \
    || die "ctr not found: without REGISTRY= the images go into this node's containerd (ctr -n k8s.io images import)"
  docker save "${names[@]}" | ctr -n k8s.io images import -
  local host
  for host in ${IMPORT_HOSTS:-}; do
    log "importing into containerd on $host"
    docker save "${names[@]}" | ssh "$host" ctr -n k8s.io images import -
  done
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down "$@" ;;
  images) shift; cmd_images "$@" ;;
  -h|--help) usage ;;
  *) usage >&2; exit 2 ;;
esac
