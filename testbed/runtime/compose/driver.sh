# shellcheck shell=bash
# shellcheck disable=SC2153  # PROFILE, PLANE ...: globals of scripts/lib/common.sh
# shellcheck disable=SC2034  # ENGINE_EXPERIMENTS is read by scripts/lib/stack.sh docker_begin
# The Compose runtime's side of the experiment drivers (testbed/contract.py DRIVER_FUNCTIONS): the
# stack of one Docker host through scripts/up.sh and the compose wrapper scripts/lib/compose.sh.
# Sourced by scripts/lib/stack.sh docker_begin for ENGINE=compose (the default); docs/stack.md.

# Every driver runs on Compose.
ENGINE_EXPERIMENTS="*"

engine_require() {
  stack_require_compose
}

# engine_check EXPERIMENT: Compose runs every driver as it is.
engine_check() {
  return 0
}

# engine_create REL_LOG [up.sh args...]: networks and containers, nothing started (up.sh
# --create-only): the captures started next on the bridges see the first NF's first packet.
engine_create() {
  local rel="$1"
  shift
  engine_up "$rel" --create-only "$@"
}

# engine_pin: every created container of the stack on CPUSET_STACK (before any of them starts);
# nothing when it is empty. The manifest's parameters record both sets.
engine_pin() {
  [[ -n "${CPUSET_STACK:-}" ]] || return 0
  local ids=()
  if [[ "$DRY_RUN" == 1 ]]; then
    _record_command docker update --cpuset-cpus "$CPUSET_STACK" "(every container of the stack)"
    return 0
  fi
  mapfile -t ids < <("${DC[@]}" "${STACK_ALL_PROFILES[@]}" ps -aq)
  ((${#ids[@]})) || return 0
  run_cmd docker update --cpuset-cpus "$CPUSET_STACK" "${ids[@]}" >/dev/null \
    || die "could not pin the stack to CPUs $CPUSET_STACK (docker update --cpuset-cpus)" 1
}

# engine_up REL_LOG [up.sh args...]: fresh stack for PROFILE on PLANE (up.sh takes down any previous
# one, unless engine_create made this one), output kept in RUN_DIR/REL_LOG; sets RENDER and DC (the
# exact docker compose argv).
engine_up() {
  local rel="$1"
  shift
  export RUN_ID="${RUN_DIR:+$(basename "$RUN_DIR")}"
  RUN_ID="${RUN_ID:-dry-run}"
  if [[ "$DRY_RUN" == 1 ]]; then
    local dry_phase=()
    if [[ " $* " != *" --create-only "* && "${_STACK_CREATED:-0}" == 1 ]]; then
      dry_phase=(--start-created)
      _STACK_CREATED=0
    fi
    _record_command "$TESTBED_ROOT/scripts/up.sh" --profile "$PROFILE" --plane "$PLANE" --timeout "$UP_TIMEOUT" "$@" "${dry_phase[@]}"
    # render once per dry run (pure Python, no Docker) to show the exact compose command lines
    [[ -n "$_DRY_RENDER" ]] || _DRY_RENDER="$(stack_render "$PROFILE" "$PLANE" 2>/dev/null)" || _DRY_RENDER="none"
    RENDER="$_DRY_RENDER"
    if [[ -n "$RENDER" && -f "$RENDER/compose.env" ]]; then
      stack_compose_argv "$RENDER"
      DC=("${STACK_CMD[@]}")
    else
      DC=(docker compose -p "${COMPOSE_PROJECT:-g5tb}" "<files of the render dir>")
    fi
    return 0
  fi
  if ((!_STACK_CLEANUP)); then
    cleanup_push stack_teardown
    _STACK_CLEANUP=1
  fi
  local phase=()
  if [[ " $* " != *" --create-only "* && "${_STACK_CREATED:-0}" == 1 ]]; then
    phase=(--start-created)
    _STACK_CREATED=0
  fi
  local evidence="failure/${rel%.log}"
  if ! run_bg_wait "$TESTBED_ROOT/scripts/up.sh" --profile "$PROFILE" --plane "$PLANE" --timeout "$UP_TIMEOUT" "$@" \
         "${phase[@]}" --evidence "$RUN_DIR/$evidence" >>"$RUN_DIR/$rel" 2>&1; then
    RENDER=""               # up.sh took down what it started, its evidence kept in $evidence
    local first waiting
    first="$(grep -o 'first failure: .*' "$RUN_DIR/$rel" | tail -n 1 || true)"
    if [[ -z "$first" ]]; then   # nothing failed: up.sh's own first error (the deadline) and what was still pending
      first="$(grep -m 1 '^error: ' "$RUN_DIR/$rel" | sed 's/^error: //' || true)"
      waiting="$(grep -oE '(still starting|never started)[^:]*: .*' "$RUN_DIR/$rel" | paste -sd ';' - || true)"
      [[ -z "$first" || -z "$waiting" ]] || first="$first; $waiting"
    fi
    die "stack for $PROFILE ($PLANE) did not come up: ${first:-$(tail -n 3 "$RUN_DIR/$rel" | tr '\n' ' ')} (every container's log, ps and health: $evidence/; full log: $rel; make doctor)" 1
  fi
  RENDER="$(<"$(stack_current_file)")"
  stack_compose_argv "$RENDER"
  DC=("${STACK_CMD[@]}")
}

engine_down() {
  stack_down "$RENDER"
}

# engine_net_capture [-c COUNT] NAME REL NODE NETWORK... -- ATTRS...: whole packets of NODE's
# NETWORKs into RUN_DIR/REL, from the networks' bridges on this host (every endpoint's packets are
# on them); -c: the first COUNT packets only.
engine_net_capture() {
  local count=()
  if [[ "$1" == -c ]]; then
    count=(-c "$2")
    shift 2
  fi
  local name="$1" rel="$2" args=()
  shift 3
  while (($#)) && [[ "$1" != -- ]]; do
    args+=(-i "$(bridge_of "$1")")
    shift
  done
  shift
  capture_start "$name" "$rel" "$@" -- dumpcap -q "${args[@]}" "${count[@]}" -w "${RUN_DIR:-.}/$rel"
}

engine_watch_start() {
  docker_watch_start "$@"
}

# engine_evidence DIR [SERVICE...]: scripts/lib/compose.sh stack_save_evidence of the running render.
engine_evidence() {
  stack_save_evidence "$RENDER" "$@"
}

# engine_record: one Docker host, recorded by the manifest's host block already.
engine_record() {
  return 0
}

# engine_n6_server_start REL PORT ADDRESS -- CMD...: CMD on this host, which holds the n6 gateway
# ADDRESS (Docker's bridge), its output into RUN_DIR/REL; returns once it listens on PORT (10 s).
_N6_SERVER_PID=""
_N6_SERVER_REL=""
engine_n6_server_start() {
  local rel="$1" port="$2" address="$3"
  shift 4
  _record_command "$@"
  [[ "$DRY_RUN" != 1 ]] || return 0
  "$@" >"$RUN_DIR/$rel" 2>&1 &
  _N6_SERVER_PID=$!
  _N6_SERVER_REL="$rel"
  cleanup_push engine_n6_server_stop
  wait_for 10 "server on $address:$port" _n6_server_listening "$port" \
    || die "the server on $address:$port did not start; see $rel" 1
}

_n6_server_listening() {
  ss -Hltn "sport = :$1" | grep -q .
}

engine_n6_server_stop() {
  [[ -n "$_N6_SERVER_PID" ]] || return 0
  kill -TERM "$_N6_SERVER_PID" 2>/dev/null || true
  wait "$_N6_SERVER_PID" 2>/dev/null || true
  _N6_SERVER_PID=""
  record_file "$_N6_SERVER_REL" log role=n6-server ran=host
}

# engine_cpu_read SNAPS LABEL [TABLE]: this host's CPU at one instant: /proc/stat's aggregate line
# appended to SNAPS as LABEL (testbed/hostcpu.py) and, with TABLE, right after it every running
# container's cgroup usage_usec into TABLE (service,cpu_usec).
engine_cpu_read() {
  local snaps="$1" label="$2" table="${3:-}"
  if [[ "$DRY_RUN" == 1 ]]; then
    _record_command head -n 1 /proc/stat "($label)"
    [[ -z "$table" ]] || _record_command cat "/sys/fs/cgroup/.../cpu.stat" "(every running container)"
    return 0
  fi
  printf '%s %s %s\n' "$label" "$(date +%s%N)" "$(head -n 1 /proc/stat)" >>"$snaps"
  [[ -z "$table" ]] || _compose_cpu_table >"$table"
}

# _compose_cpu_usec CONTAINER_ID: usage_usec of the container's cgroup (host path first, then inside).
_compose_cpu_usec() {
  local cid="$1" full f
  full="$(docker inspect -f '{{.Id}}' "$cid")"
  for f in "/sys/fs/cgroup/system.slice/docker-$full.scope/cpu.stat" "/sys/fs/cgroup/docker/$full/cpu.stat"; do
    if [[ -r "$f" ]]; then
      awk '$1 == "usage_usec" {print $2}' "$f"
      return 0
    fi
  done
  docker exec "$cid" cat /sys/fs/cgroup/cpu.stat | awk '$1 == "usage_usec" {print $2}'
}

# _compose_cpu_table: service,cpu_usec for every running container, read at one instant: one
# `docker inspect` for all of them, then every cgroup file in one pass (no per-service round trips
# while the counters keep running).
_compose_cpu_table() {
  local ids=() line full svc f usec
  echo "service,cpu_usec"
  mapfile -t ids < <("${DC[@]}" "${STACK_ALL_PROFILES[@]}" ps -q --status running)
  ((${#ids[@]})) || return 0
  while read -r line; do
    full="${line%% *}"
    svc="${line#* }"
    usec=""
    for f in "/sys/fs/cgroup/system.slice/docker-$full.scope/cpu.stat" "/sys/fs/cgroup/docker/$full/cpu.stat"; do
      if [[ -r "$f" ]]; then
        usec="$(awk '$1 == "usage_usec" {print $2}' "$f")"
        break
      fi
    done
    [[ -n "$usec" ]] || usec="$(_compose_cpu_usec "$full")" || { warn "no cpu.stat for $svc ($full)"; continue; }
    echo "$svc,$usec"
  done < <(docker inspect -f '{{.Id}} {{index .Config.Labels "com.docker.compose.service"}}' "${ids[@]}")
}
