# shellcheck shell=bash
# The Compose wrapper of the 5G stack (sourced by scripts/up.sh, down.sh, logs.sh, smoke.sh
# and the experiment drivers). One project name, the -f files and --env-file of a render dir
# (`python -m testbed render` writes both), image names from the environment.
# Documentation: docs/stack.md.

# Sourcing twice (a driver and a library both source it) is harmless.
[[ -n "${_STACK_COMPOSE_SH:-}" ]] && return 0
_STACK_COMPOSE_SH=1

STACK_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
readonly STACK_REPO

# Image names: images/defaults.env is their one home; a variable already set in the
# environment wins (e.g. MONGO_IMAGE=mongo:4.4; MONGO_IMAGE=ferretdb names the FerretDB image built here).
# shellcheck source=scripts/lib/images.sh
source "$STACK_REPO/scripts/lib/images.sh"
load_image_defaults "$STACK_REPO" || return 1

: "${PYTHON:=python3}"
: "${STATE:=.state}"
# The stack of this STATE directory: Compose project, bridges, address slot (.state: g5tb and
# stack.yaml's addresses; another STATE runs its own stack beside it), and its lock (state_lock).
# shellcheck source=scripts/lib/state.sh
source "$STACK_REPO/scripts/lib/state.sh"
state_instance || return 1
# Services of the two optional Compose profiles (UE 2, scaling UEs).
readonly STACK_ALL_PROFILES=(--profile ue2 --profile scale)

stack_log() {
  printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2
}

stack_die() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

# The state dir as an absolute path (STATE may be relative to the repository).
stack_state_dir() {
  printf '%s\n' "$STATE_DIR"
}

# File recording the render dir of the stack that is (or was being) brought up.
stack_current_file() {
  printf '%s/stack.current\n' "$(stack_state_dir)"
}

stack_require_compose() {
  command -v docker >/dev/null 2>&1 \
    || stack_die "docker CLI not found: install Docker Engine + Compose v2 (see \`make doctor\`)"
  docker compose version >/dev/null 2>&1 \
    || stack_die "\`docker compose\` (Compose v2) not available: install the docker-compose-plugin (see \`make doctor\`)"
  docker info >/dev/null 2>&1 \
    || stack_die "cannot reach the Docker engine (\`docker info\` failed): start dockerd or check permissions (see \`make doctor\`)"
  # The healthchecks use start_interval (probe every second while starting, rarely afterwards),
  # which Compose refuses below Docker Engine 25 (API 1.44).
  local api major minor
  api="$(docker version --format '{{.Server.APIVersion}}' 2>/dev/null || true)"
  if [[ "$api" =~ ^([0-9]+)\.([0-9]+) ]]; then
    major="${BASH_REMATCH[1]}" minor="${BASH_REMATCH[2]}"
    if ((major < 1 || (major == 1 && minor < 44))); then
      stack_die "Docker Engine API $api is older than 1.44 (Engine 25): the stack's healthchecks need Engine 25 or later; upgrade Docker (see \`make doctor\`)"
    fi
  fi
}

# stack_render PROFILE PLANE [--scp]: render and print the render dir.
stack_render() {
  local profile="$1" plane="$2"
  shift 2
  local args=(--profile "$profile" --state "$(stack_state_dir)" --quiet)
  [[ -n "$plane" ]] && args+=(--plane "$plane")
  (cd "$STACK_REPO" && "$PYTHON" -m testbed render "${args[@]}" "$@")
}

# Keys of compose.env that describe the render itself: a same-named variable in the caller's
# environment (the Makefile exports PROFILE) must not override them.
readonly STACK_RENDER_KEYS=(PROFILE PLANE PROTOCOL TESTBED_COMMIT RENDER_DIR OVERLAY_DIR KEYS_DIR REPO_DIR RAN UU)

# stack_compose_argv RENDER_DIR: set STACK_CMD to the docker compose command line for that render.
stack_compose_argv() {
  local dir="$1"
  [[ -f "$dir/compose.env" && -f "$dir/compose.files" ]] \
    || stack_die "render dir $dir is incomplete (no compose.env/compose.files): run \`make render\`"
  local files=() f unset=() k
  while IFS= read -r f; do
    [[ -n "$f" ]] && files+=(-f "$f")
  done <"$dir/compose.files"
  if [[ -n "${COMPOSE_EXTRA_FILES:-}" ]]; then
    local extra
    IFS=':' read -r -a extra <<<"$COMPOSE_EXTRA_FILES"
    for f in "${extra[@]}"; do
      [[ -f "$f" ]] || stack_die "COMPOSE_EXTRA_FILES names $f, which does not exist"
      files+=(-f "$f")
    done
  fi
  for k in "${STACK_RENDER_KEYS[@]}"; do
    unset+=(-u "$k")
  done
  STACK_CMD=(env "${unset[@]}" docker compose -p "$COMPOSE_PROJECT" --env-file "$dir/compose.env" "${files[@]}")
}

# stack_compose RENDER_DIR ARGS...: docker compose with the render dir's files and env.
stack_compose() {
  local dir="$1"
  shift
  stack_compose_argv "$dir"
  "${STACK_CMD[@]}" "$@"
}

# stack_env RENDER_DIR KEY: a value of the render dir's compose.env.
stack_env() {
  local dir="$1" key="$2" line
  while IFS= read -r line; do
    if [[ "$line" == "$key="* ]]; then
      printf '%s\n' "${line#*=}"
      return 0
    fi
  done <"$dir/compose.env"
  stack_die "$dir/compose.env has no $key: re-render with \`make render\`"
}

# stack_container RENDER_DIR SERVICE: the container id of a service ("" if none).
stack_container() {
  stack_compose "$1" "${STACK_ALL_PROFILES[@]}" ps -a -q "$2" 2>/dev/null | head -n 1
}

# stack_state RENDER_DIR SERVICE: "<status> <health>" (health "-" without a healthcheck).
stack_state() {
  local cid
  cid="$(stack_container "$1" "$2")"
  if [[ -z "$cid" ]]; then
    echo "absent -"
    return 0
  fi
  docker inspect -f '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}-{{end}} {{.State.ExitCode}}' "$cid"
}

# What UERANSIM itself says in a container of its image (`nr-cli`): each node's status, a UE's PDU
# sessions and radio link, a gNB's AMF and UE lists (run by stack_save_evidence with `sh -c`).
# shellcheck disable=SC2016  # expanded in the container
readonly _NR_CLI_VIEW='for n in $(nr-cli --dump 2>/dev/null); do
  case "$n" in imsi-*) set -- status ps-list rls-state ;; *) set -- status amf-list ue-list ;; esac
  for c; do echo "== nr-cli $n -e $c"; nr-cli "$n" -e "$c" 2>&1; done
done'

# stack_save_evidence RENDER_DIR DIR [SERVICE...]: what a failed stack shows, kept before anyone
# tears it down (docs/stack.md "When the stack fails"): every container's log with timestamps
# (DIR/logs/<service>.log), `docker compose ps -a` (DIR/ps.txt), each container's state and health
# as the engine recorded them (DIR/states.json, testbed/stackfailure.py: never the environment) and,
# in every running container of the UERANSIM image, nr-cli's view (DIR/nr-cli-<service>.txt). With
# SERVICEs, only those containers' logs and views. Each engine call is bounded by EVIDENCE_TIMEOUT
# seconds (default 120: under emulation one `docker compose ps` took 55 s and a 30 s bound kept
# nothing); the logs are fetched in parallel, by container id with the plain docker CLI where the
# listing named the container (in the guest two dozen parallel `docker compose logs`, each loading
# the project, all passed 120 s and left empty files), else per service through compose (for the
# services of the compose files when the engine does not list them); a call that fails or times
# out is named in DIR/evidence-errors.txt. Nothing here fails the caller.
stack_save_evidence() {
  local dir="$1" out="$2" t="${EVIDENCE_TIMEOUT:-120}" svc image state id ids=() dc=() listed=() pids=()
  shift 2
  [[ -f "$dir/compose.env" && -f "$dir/compose.files" ]] || return 0
  mkdir -p "$out/logs" 2>/dev/null || return 0
  stack_compose_argv "$dir"
  dc=("${STACK_CMD[@]}" "${STACK_ALL_PROFILES[@]}")
  local -A only=() image_of=() state_of=() id_of=()
  for svc in "$@"; do only[$svc]=1; done
  _evidence_call "$out" "$t" "docker compose ps -a" "$out/ps.txt" "${dc[@]}" ps -a
  _evidence_call "$out" "$t" "docker compose ps (services)" "$out/.services" \
    "${dc[@]}" ps -a --format '{{.Service}} {{.Image}} {{.State}} {{.ID}}'
  while read -r svc image state id; do
    [[ -n "$svc" ]] || continue
    listed+=("$svc"); image_of[$svc]="$image"; state_of[$svc]="$state"; id_of[$svc]="$id"
    [[ -z "$id" ]] || ids+=("$id")
  done <"$out/.services"
  if ((${#listed[@]} == 0)); then   # the engine did not answer: the services the compose files name
    _evidence_call "$out" "$t" "docker compose config --services" "$out/.services" "${dc[@]}" config --services
    mapfile -t listed < <(grep -v '^$' "$out/.services" || true)
  fi
  rm -f "$out/.services"
  for svc in "${listed[@]}"; do
    ((${#only[@]} == 0)) || [[ -n "${only[$svc]:-}" ]] || continue
    id="${id_of[$svc]:-}"
    if [[ -n "$id" ]]; then     # the container's stdout and stderr, as compose logs merges them
      # shellcheck disable=SC2016  # $1 is the inner shell's
      _evidence_call "$out" "$t" "docker logs $svc" "$out/logs/$svc.log" \
        bash -c 'exec docker logs --timestamps "$1" 2>&1' _ "$id" &
    else
      _evidence_call "$out" "$t" "docker compose logs $svc" "$out/logs/$svc.log" \
        "${dc[@]}" logs --no-color --timestamps "$svc" &
    fi
    pids+=($!)
    if [[ -n "$id" && "${image_of[$svc]:-}" == "${UERANSIM_IMAGE:-}" && "${state_of[$svc]:-}" == running ]]; then
      _evidence_call "$out" "$t" "nr-cli in $svc" "$out/nr-cli-$svc.txt" docker exec "$id" sh -c "$_NR_CLI_VIEW" &
      pids+=($!)
    fi
  done
  ((${#pids[@]} == 0)) || wait "${pids[@]}" 2>/dev/null || true
  if ((${#ids[@]})); then       # the containers the listing above named: no further listing
    timeout "$t" docker inspect "${ids[@]}" 2>/dev/null \
      | (cd "$STACK_REPO" && "$PYTHON" -m testbed.stackfailure record "$out") || true
  else
    echo "container states: the engine listed no container within ${t}s (states.json not written)" >>"$out/evidence-errors.txt"
  fi
}

# _evidence_call DIR SECONDS WHAT FILE CMD...: CMD's output into FILE within SECONDS; a failure or
# timeout is one line in DIR/evidence-errors.txt with CMD's last error line (exit 124: timed out).
_evidence_call() {
  local out="$1" t="$2" what="$3" file="$4" rc=0 err
  shift 4
  err="$(timeout "$t" "$@" 2>&1 >"$file")" || rc=$?
  if ((rc == 124)); then
    echo "$what: no answer within ${t}s (EVIDENCE_TIMEOUT)" >>"$out/evidence-errors.txt"
  elif ((rc != 0)); then
    echo "$what: exit $rc${err:+: ${err##*$'\n'}}" >>"$out/evidence-errors.txt"
  fi
  return 0
}

# stack_failure_lines DIR: the order of the failures stack_save_evidence saw in DIR (the first in
# time, its last log line, the later ones as consequences, those never started); nothing if none.
stack_failure_lines() {
  (cd "$STACK_REPO" && "$PYTHON" -m testbed.stackfailure summary "$1") 2>/dev/null || true
}

# stack_wait_healthy RENDER_DIR DEADLINE_EPOCH SERVICE...: wait until each service is healthy
# (running without healthcheck counts); fail at once if one exits or turns unhealthy.
stack_wait_healthy() {
  local dir="$1" deadline="$2"
  shift 2
  local svc status health code
  for svc in "$@"; do
    while true; do
      read -r status health code <<<"$(stack_state "$dir" "$svc")"
      case "$status/$health" in
        running/healthy|running/-) break ;;
        exited/*|dead/*|*/unhealthy)
          stack_log "service $svc is $status (health $health, exit code $code)"
          return 1 ;;
      esac
      if (($(date +%s) >= deadline)); then
        stack_log "deadline reached: service $svc still $status (health $health)"
        return 1
      fi
      sleep 1  # polling interval; the deadline above bounds the wait
    done
    stack_log "$svc is ready"
  done
}

# stack_down RENDER_DIR: stop and remove every container, network and volume of the project.
stack_down() {
  stack_compose "$1" "${STACK_ALL_PROFILES[@]}" down --volumes --remove-orphans --timeout 10
}
