#!/usr/bin/env bash
# Bring the 5G stack up for a profile and return once UE 1 has its PDU session.
# On failure or interrupt: keeps every container's log, state and health in an evidence
# directory, prints a short summary (the first failure in time, its consequences), then tears
# down everything it started. Documentation: docs/stack.md.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib/compose.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/compose.sh"

usage() {
  cat <<USAGE
usage: up.sh [--profile ID] [--plane PLANE] [--scp] [--ran V] [--ues N] [--timeout SECONDS] [--no-ue]
             [--create-only | --start-created] [--evidence DIR]

  --profile ID   security profile (default: \$PROFILE or baseline; \`make profiles\` lists them)
  --plane P      plane(s) the overlay covers: n3, sbi, n2, n4, several (n2,n4) or all
                 (default: \$PLANE or the profile's first plane)
  --scp          indirect communication through the SCP (default: \$SCP)
  --ran V        RAN variant: ueransim (default), oai, split (default: \$RAN; docs/ran.md)
  --ues N        also start the scaling UEs (N UEs in the ue-scale container)
  --timeout S    deadline for the whole bring-up (default: \$UP_TIMEOUT or 420)
  --no-ue        start the core and the RAN only (UE 1 stays down; the SBI driver starts it)
  --create-only  create the networks and containers, start nothing (a driver then starts its
                 captures on the bridges, so they hold every packet from the first NF's start)
  --start-created  start a stack made by --create-only (the same arguments otherwise)
  --evidence DIR where a failed bring-up keeps every container's log (logs/<service>.log), ps.txt,
                 states.json and nr-cli-<service>.txt (default: \$STATE/failed-up/<UTC time>;
                 the drivers pass their run directory's failure/<tag>/)
Environment: OPEN5GS_IMAGE UERANSIM_IMAGE OAI_IMAGE TOOLS_IMAGE MONGO_IMAGE MONGO_URI RUN_ID STATE RAN UU
  DRY_RUN=1      check the input, render and check the configs, print what would run: no Docker
One run at a time per STATE directory (its lock names the holder); another STATE runs its own
stack beside this one (own project, bridges and addresses: \`python -m testbed instance\`).
Exit: 0 up, 1 failure (stack torn down), 2 usage error, 130 interrupted (stack torn down).
USAGE
}

PROFILE_ID="${PROFILE:-baseline}"
PLANE_ID="${PLANE:-}"
SCP_FLAG=()
[[ "${SCP:-}" == 1 || "${SCP:-}" == yes || "${SCP:-}" == true ]] && SCP_FLAG=(--scp)
# --ues only: UES in the environment is the CPU experiment's list of counts (make run-cpu
# UES="1 5 10 20"), never this script's number
UES_N=0
TIMEOUT="${UP_TIMEOUT:-420}"
WITH_UE=1
PHASE=all          # all | create (networks + containers, nothing started) | start (after create)
RENDER=""
STARTED=0
EVIDENCE_DIR=""

parse_args() {
  while (($#)); do
    case "$1" in
      --profile) PROFILE_ID="${2:?--profile needs a value}"; shift 2 ;;
      --plane) PLANE_ID="${2:?--plane needs a value}"; shift 2 ;;
      --scp) SCP_FLAG=(--scp); shift ;;
      --ran) export RAN="${2:?--ran needs a value}"; shift 2 ;;
      --ues) UES_N="${2:?--ues needs a value}"; shift 2 ;;
      --timeout) TIMEOUT="${2:?--timeout needs a value}"; shift 2 ;;
      --no-ue) WITH_UE=0; shift ;;
      --create-only) PHASE=create; shift ;;
      --start-created) PHASE=start; shift ;;
      --evidence) EVIDENCE_DIR="${2:?--evidence needs a value}"; shift 2 ;;
      -h|--help) usage; exit 0 ;;
      *) echo "up.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
  done
  [[ "$UES_N" =~ ^[0-9]+$ ]] || { echo "up.sh: --ues must be a number, got $UES_N" >&2; exit 2; }
  [[ "$TIMEOUT" =~ ^[0-9]+$ ]] || { echo "up.sh: --timeout must be seconds, got $TIMEOUT" >&2; exit 2; }
  # ENGINE= names the runtime (docs/kubernetes.md): this script starts the Compose one (the
  # drivers reach it through testbed/runtime/compose/driver.sh); another has its own target and
  # driver library, so a stack never lands on Docker while its user asked for a cluster
  if [[ -n "${ENGINE:-}" && "$ENGINE" != compose ]]; then
    echo "up.sh: ENGINE=$ENGINE: this starts the Docker Compose stack; start that runtime's stack with its own target (make k8s-up for ENGINE=k8s); the experiment drivers take ENGINE= themselves (make run-n3 ENGINE=k8s; docs/kubernetes.md)" >&2
    exit 2
  fi
}

on_exit() {
  local rc=$?
  trap - EXIT INT TERM
  if ((rc != 0 && STARTED)); then
    # the evidence first, a short summary on the terminal (not minutes of logs), then the teardown
    local ev="${EVIDENCE_DIR:-$(stack_state_dir)/failed-up/$(date -u +%Y%m%dT%H%M%SZ)}" line
    stack_log "bring-up failed (exit $rc): keeping every container's log, state and health in $ev"
    stack_save_evidence "$RENDER" "$ev"
    while IFS= read -r line; do
      stack_log "$line"
    done < <(stack_failure_lines "$ev")
    [[ ! -s "$ev/evidence-errors.txt" ]] \
      || stack_log "evidence incomplete: $(wc -l <"$ev/evidence-errors.txt") engine call(s) failed or timed out ($ev/evidence-errors.txt)"
    stack_log "tearing down what was started"
    stack_down "$RENDER" >/dev/null 2>&1 || stack_log "teardown failed: run \`make down\`"
    rm -f "$(stack_current_file)"
    stack_log "evidence (logs/<service>.log, ps.txt, states.json, nr-cli-<service>.txt): $ev"
  fi
  exit "$rc"
}

on_signal() {
  stack_log "interrupted"
  exit 130
}

check_sctp() {
  if [[ ! -d /sys/module/sctp ]]; then
    if [[ "$(id -u)" == 0 ]] && modprobe sctp 2>/dev/null; then
      stack_log "loaded the sctp kernel module (AMF and gNB need it)"
    else
      stack_log "warning: no sctp kernel module on this host; the AMF and gNB need it (sudo modprobe sctp; see \`make doctor\`)"
    fi
  fi
}

# ensure_images: build the testbed's own images when there is none for their current build inputs
# (a fresh host, or a changed Dockerfile or patch: the tag carries the inputs' hash), so `make up`
# and run-* never run old binaries; an image named explicitly and built from other inputs only
# gets a warning. The RAN variant's image: ueransim, or oai (RAN=oai|split). AUTO_BUILD=0 turns this off.
ensure_images() {
  local missing=() names=(open5gs ueransim tools)
  [[ "${AUTO_BUILD:-1}" == 1 ]] || return 0
  [[ "$(stack_env "$RENDER" RAN)" == ueransim ]] || names=(open5gs oai tools)
  [[ "$MONGO_IMAGE" != "$FERRETDB_IMAGE" ]] || names+=(ferretdb)
  # the UPF security function with Snort 3 (docs/secfn.md) runs its own image
  ! grep -qx 'IDS=snort' "$RENDER/compose.env" 2>/dev/null || names+=(snort)
  mapfile -t missing < <(images_to_build "$STACK_REPO" "${names[@]}")
  ((${#missing[@]})) || return 0
  stack_log "no image for the current build inputs of: ${missing[*]}; building them now (AUTO_BUILD=0 to skip; docs/images.md)"
  bash "$STACK_REPO/scripts/build.sh" "${missing[@]}" \
    || stack_die "building ${missing[*]} failed (see above); fix it, or run \`make build\` by hand"
}

down_previous() {
  local cur prev
  cur="$(stack_current_file)"
  [[ -f "$cur" ]] || return 0
  prev="$(<"$cur")"
  if [[ -d "$prev" ]]; then
    stack_log "a stack from $prev is recorded as up: taking it down first"
    stack_down "$prev" >/dev/null 2>&1 || true
  fi
  rm -f "$cur"
}

main() {
  parse_args "$@"
  # the user's input first (an unknown profile lists the valid ones), the host after it
  (cd "$STACK_REPO" && "$PYTHON" -m testbed check-profile "$PROFILE_ID" ${PLANE_ID:+--plane "$PLANE_ID"} >/dev/null) \
    || exit 2
  state_lock "scripts/up.sh" "$@" "(profile $PROFILE_ID${DRY_RUN:+, DRY_RUN=$DRY_RUN})"
  if [[ "${DRY_RUN:-0}" != 1 ]]; then
    stack_require_compose
    check_sctp
  fi
  RENDER="$(stack_render "$PROFILE_ID" "$PLANE_ID" "${SCP_FLAG[@]}")" || exit $?
  (cd "$STACK_REPO" && "$PYTHON" -m testbed check-config --render-dir "$RENDER" --no-render) \
    || stack_die "configuration check failed for $RENDER (see above); fix nf-configs/stack.yaml or compose/ and retry"
  cat "$RENDER/plan.txt" >&2
  local scale_max
  scale_max="$(stack_env "$RENDER" SCALE_MAX)"
  ((UES_N <= scale_max)) \
    || stack_die "--ues $UES_N exceeds the $scale_max provisioned scaling subscribers (nf-configs/stack.yaml subscribers.scale.count)"
  ((UES_N == 0)) || [[ "$(stack_env "$RENDER" RAN_SCALE)" == 1 ]] \
    || stack_die "--ues $UES_N: RAN=$(stack_env "$RENDER" RAN) has no scaling UEs (only RAN=ueransim does; docs/ran.md)"
  if [[ "${DRY_RUN:-0}" == 1 ]]; then
    dry_run_plan
    return 0
  fi
  ensure_images
  # a stack created by --create-only (captures were started on its bridges since) is kept
  [[ "$PHASE" == start ]] || down_previous
  export UES="$UES_N"
  # the holders' own waits follow the bring-up deadline (a WireGuard end waits this long for a peer
  # it never heard from: under load the holders start tens of seconds apart); the same value in the
  # create and the start phase, so Compose does not recreate the created containers
  export STACK_UP_TIMEOUT="$TIMEOUT"
  local deadline=$(($(date +%s) + TIMEOUT))
  local services=() profiles=()
  mapfile -t services < <(stack_compose "$RENDER" config --services)
  ((${#services[@]})) || stack_die "\`docker compose config\` found no services in $RENDER (run \`make check-config\`)"
  local targets=() s
  for s in "${services[@]}"; do
    [[ "$s" == ue1 && "$WITH_UE" == 0 ]] && continue
    targets+=("$s")
  done
  if ((UES_N > 0)); then
    profiles=(--profile scale)
    targets+=(ue-scale)
  fi
  trap on_exit EXIT
  trap on_signal INT TERM
  mkdir -p "$(stack_state_dir)"
  printf '%s\n' "$RENDER" >"$(stack_current_file)"
  STARTED=1
  stack_compose_argv "$RENDER"
  if [[ "$PHASE" == create ]]; then
    # networks (the bridges a capture listens on) and containers exist, nothing runs yet
    timeout --foreground "$TIMEOUT" "${STACK_CMD[@]}" "${profiles[@]}" up --no-start --remove-orphans "${targets[@]}" \
      || stack_die "\`docker compose up --no-start\` failed or passed the ${TIMEOUT}s deadline"
    STARTED=0
    stack_log "stack created, nothing started: profile $PROFILE_ID, render dir $RENDER"
    return 0
  fi
  stack_log "starting ${#targets[@]} services (deadline ${TIMEOUT}s): ${targets[*]}"
  timeout --foreground "$TIMEOUT" "${STACK_CMD[@]}" "${profiles[@]}" up -d --remove-orphans "${targets[@]}" \
    || stack_die "\`docker compose up\` failed or passed the ${TIMEOUT}s deadline"
  # the RAN's own readiness (UERANSIM: the gNB's NGAP; OAI split: the DU's F1 Setup)
  local waits=("$(stack_env "$RENDER" RAN_READY)")
  ((WITH_UE)) && waits+=(ue1)
  ((UES_N > 0)) && waits+=(ue-scale)
  stack_wait_healthy "$RENDER" "$deadline" "${waits[@]}" \
    || stack_die "the stack did not become ready within ${TIMEOUT}s"
  if ((WITH_UE)); then
    local addr tun
    tun="$(stack_env "$RENDER" RAN_UE_TUN)"
    addr="$(stack_compose "$RENDER" exec -T ue1 ip -4 -o addr show dev "$tun" | awk '{print $4}')"
    stack_log "UE 1 has its PDU session: $tun $addr"
  fi
  stack_log "stack up: profile $PROFILE_ID, render dir $RENDER (\`make down\` stops it)"
}

# dry_run_plan: what a real `make up` would run next (images first, then Compose), without Docker.
dry_run_plan() {
  stack_compose_argv "$RENDER"
  stack_log "DRY_RUN: nothing started; project $COMPOSE_PROJECT, bridges $BRIDGE_PREFIX-<network>, state $STATE_DIR"
  printf '+ %s\n' "images: build those without an image for their current inputs (python3 -m testbed.cli.images plan): $OPEN5GS_IMAGE $UERANSIM_IMAGE $TOOLS_IMAGE"
  printf '+'
  printf ' %q' "${STACK_CMD[@]}" up -d --remove-orphans
  printf '\n'
}

main "$@"
