# shellcheck shell=bash
# The overlay watcher: the engine's event stream read while a set runs (no polling), the first
# failure in time named.
# Part of scripts/lib/common.sh, which sources it (source that, not this).

# watch_stop: end the overlay watcher started by a driver. The watcher's own TERM trap stops what
# it started (its stream reader, its pacing sleep): killing those first, under it, made bash print a
# bare `Terminated` line and could leave a sleep it started next behind.
# The failures it saw go into the manifest here, after the driver reported them (one Python run
# per entry: in the guest those runs stood between the failure and its report).
watch_stop() {
  [[ -n "${WATCH_PID:-}" ]] || return 0
  kill "$WATCH_PID" 2>/dev/null || true
  wait "$WATCH_PID" 2>/dev/null || true
  WATCH_PID=""
  local nanos what
  while read -r nanos what; do
    run_event error "overlay watcher: $what (engine time $nanos ns)"
  done < <(_overlay_died_entries)
}

# docker_watch_start PING_SERVICE: the Docker drivers' overlay watcher. It reads the engine's
# event stream for the project (pushed by the engine: no polling, no exec in the measured
# window). The overlay entrypoints (ipsec/entrypoint.sh, wireguard/entrypoint.sh) exit when
# their daemon dies, so an overlay lost mid-run is a container `die` (or an `unhealthy`) event:
# the first one interrupts the pings (ping_series then stops the run as invalid), and every one is
# appended to OVERLAY_DIED with the engine's time until watch_stop, so that the reason names the
# first failure in time and lists the later ones as its consequences (overlay_died_reason).
# The pings are stopped with a plain `docker exec` on the container found before the set (a
# `compose exec` loads the whole project first: seconds in the guest, between failure and report).
docker_watch_start() {
  [[ "$DRY_RUN" != 1 && "$PROTOCOL" != none ]] || return 0
  local svc="$1" id
  id="$("${DC[@]}" "${STACK_ALL_PROFILES[@]}" ps -q "$svc" 2>/dev/null | head -n 1)" || id=""
  if [[ -n "$id" ]]; then
    _WATCH_STOP=(docker exec "$id" pkill -INT -x ping)
  else
    mapfile -d '' -t _WATCH_STOP < <(dc_exec "$svc" pkill -INT -x ping)
  fi
  overlay_watch docker events --filter "label=com.docker.compose.project=$COMPOSE_PROJECT" \
    --filter type=container --filter event=die --filter event=kill --filter event=oom \
    --filter event=health_status --format '{{.TimeNano}}|{{.Actor.Attributes.name}}|{{.Action}}'
}

# overlay_watch STREAM...: the watcher in the background until watch_stop, reading the engine's
# stream of "NANOS|NAME|ACTION" lines (docker events; on a cluster testbed/runtime/k8s/stackctl.py
# watch) into _overlay_lost; _WATCH_STOP, the command that stops the pings, set by the caller.
overlay_watch() {
  OVERLAY_DIED="$RUN_DIR/overlay-died.txt"
  _overlay_watch "$@" &
  WATCH_PID=$!
  cleanup_push watch_stop
}

_overlay_watch() {
  _WATCH_STOPPED=0
  # the stream (and a ping stop under way) is ended on every way out (a TERM from watch_stop included)
  trap 'kill "${_STREAM_PID:-}" 2>/dev/null; wait; exit 0' TERM
  stream_until _overlay_lost "$@" || return 1
}

# _overlay_lost "TIMENANO|NAME|ACTION": an engine event that ends a container: appended to
# OVERLAY_DIED ("<ns since the epoch> container NAME: ACTION"); the first stops the pings. Never a
# match: the stream is read on until watch_stop, the later failures being the first one's consequences.
_overlay_lost() {
  local nanos="${1%%|*}" rest="${1#*|}" name action
  name="${rest%%|*}"
  action="${rest#*|}"
  case "$action" in
    die | kill | oom | "health_status: unhealthy") ;;
    *) return 1 ;;
  esac
  printf '%s container %s: %s\n' "$nanos" "$name" "$action" >>"$OVERLAY_DIED"
  if ((_WATCH_STOPPED == 0)); then
    _WATCH_STOPPED=1
    "${_WATCH_STOP[@]}" >/dev/null 2>&1 &
    # the run knows now, not only once the pings ended and the reason settled
    log "overlay watcher: container $name: $action (the engine's event at $(_clock "$nanos")): stopping the pings"
  fi
  return 1
}

# _clock NANOS: nanoseconds since the epoch as HH:MM:SS.mmmZ (UTC).
_clock() {
  printf '%s.%03dZ' "$(date -u -d "@$(($1 / 1000000000))" +%H:%M:%S)" $(($1 / 1000000 % 1000))
}

# _overlay_died_entries: OVERLAY_DIED's lines with the engine's time, the first per container, in
# time order ("NANOS container NAME: WHAT"). A container that died is timed by its exit (docker
# inspect's FinishedAt, "exited (code N)", as testbed/stackfailure.py words it): the engine sends
# `die` after it has cleaned up, seconds later on a loaded host, and one death has one time.
_overlay_died_entries() {
  [[ -s "${OVERLAY_DIED:-}" ]] || return 0
  local nanos what name fin code dead=()
  local -A exited=()
  mapfile -t dead < <(awk '$1 ~ /^[0-9]+$/ && $NF == "die" { sub(/:$/, "", $3); print $3 }' "$OVERLAY_DIED" | sort -u)
  if ((${#dead[@]})); then
    while read -r name fin code; do
      [[ "$code" =~ ^[0-9]+$ && "$fin" != 0001-* ]] || continue
      fin="$(date -u -d "$fin" +%s%N 2>/dev/null)" || continue
      exited["${name#/}"]="$fin exited (code $code)"
    done < <(docker inspect --format '{{.Name}} {{.State.FinishedAt}} {{.State.ExitCode}}' "${dead[@]}" 2>/dev/null || true)
  fi
  while read -r nanos what; do
    [[ "$nanos" =~ ^[0-9]+$ ]] || continue
    name="${what#container }"
    name="${name%%: *}"
    if [[ "$what" == *": die" && -n "${exited[$name]:-}" ]]; then
      printf '%s container %s %s\n' "${exited[$name]%% *}" "$name" "${exited[$name]#* }"
    else
      printf '%s %s\n' "$nanos" "$what"
    fi
  done <"$OVERLAY_DIED" | sort -n -k1,1 | awk '{ key = $3; sub(/:$/, "", key) } !seen[key]++'
}

# overlay_died_reason: OVERLAY_DIED as a reason: the first failure in time, then its consequences
# (+seconds), one entry per container. Its consequences follow within seconds, so it first waits
# until the watcher added nothing for 2 s, counted from its last line (the time the pings took to
# stop counts), at most WATCH_SETTLE_S (default 10; the measurement has ended). A line without the
# engine's time (run-overlay's watcher) is taken as it is.
overlay_died_reason() {
  local f="$OVERLAY_DIED" end=$((SECONDS + ${WATCH_SETTLE_S:-10})) changed now
  while ((SECONDS < end)); do
    changed="$(stat -c %.6Y "$f" 2>/dev/null || echo 0.0)"
    now="$EPOCHREALTIME"
    ((${now/./} - ${changed/./} < 2000000)) || break
    sleep 0.2              # pacing of the settle wait, after the measured window
  done
  local first="" t0=0 nanos what out="" later=()
  while read -r nanos what; do
    out+="${out:+; }$nanos $what"
  done < <(grep -Ev '^[0-9]+ ' "$f" 2>/dev/null)
  while read -r nanos what; do
    if [[ -z "$first" ]]; then
      first="$what"
      t0="$nanos"
      out="first failure: $what at $(_clock "$nanos")"
    else
      later+=("${what#container } (+$(awk -v d="$((nanos - t0))" 'BEGIN { printf "%.1f", d / 1e9 }') s)")
    fi
  done < <(_overlay_died_entries)
  ((${#later[@]} == 0)) || out+="; then (consequences): $(printf '%s, ' "${later[@]}" | sed 's/, $//')"
  printf '%s\n' "$out"
}

# _reason_add_stack_failure LINE: the stack's `first failure: SERVICE (NAME) ... at TIME; its last
# log line: ...` into the run's reason, unless it says nothing new. When the overlay watcher's reason
# (overlay_died_reason) names that container already, its exit and time (the engine's same record,
# FinishedAt), only its last log line is added: one death, one time.
_reason_add_stack_failure() {
  local first="$1" name=""
  [[ -n "$first" && "$RUN_REASON" != *"${first#first failure: }"* ]] || return 0
  [[ "$first" =~ ^first\ failure:\ [^\ ]+\ \(([^\)]+)\) ]] && name="${BASH_REMATCH[1]}"
  if [[ -n "$name" && "$RUN_REASON" == *"container $name "* ]]; then
    [[ "$first" != *"; its last log line: "* ]] || RUN_REASON+="; $name's last log line: ${first#*; its last log line: }"
  else
    RUN_REASON="${RUN_REASON:+$RUN_REASON; in the stack, }$first"
  fi
}

# stream_until MATCH CMD...: run CMD, hand each line it prints to the function MATCH until MATCH
# succeeds (0) or the stream ends (1); CMD is stopped either way. Reads a stream the engine or a
# log pushes (no polling); _STREAM_PID is CMD's pid for a caller's TERM trap.
stream_until() {
  local match="$1" line rc=1
  shift
  coproc STREAM { exec "$@" 2>&1; }
  # shellcheck disable=SC2153  # STREAM_PID is set by coproc
  _STREAM_PID="$STREAM_PID"
  while IFS= read -r -u "${STREAM[0]}" line; do
    if "$match" "$line"; then
      rc=0
      break
    fi
  done
  kill "$_STREAM_PID" 2>/dev/null || true
  wait "$_STREAM_PID" 2>/dev/null || true
  return "$rc"
}
