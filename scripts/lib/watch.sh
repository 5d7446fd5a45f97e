# shellcheck shell=bash
# The overlay watcher: the engine's event stream read while a set runs (no polling), the first
# failure in time named.
# Part of scripts/lib/common.sh, which sources it (source that, not this).

# watch_stop: end the overlay watcher started by a driver. The watcher's own TERM trap stops what
# it started (its stream reader, its pacing sleep): killing those first, under it, made bash print a
# bare `Terminated` line and could leave a sleep it started next behind.
watch_stop() {
  [[ -n "${WATCH_PID:-}" ]] || return 0
  kill "$WATCH_PID" 2>/dev/null || true
  wait "$WATCH_PID" 2>/dev/null || true
  WATCH_PID=""
}

# docker_watch_start PING_SERVICE: the Docker drivers' overlay watcher. It reads the engine's
# event stream for the project (pushed by the engine: no polling, no exec in the measured
# window). The overlay entrypoints (ipsec/entrypoint.sh, wireguard/entrypoint.sh) exit when
# their daemon dies, so an overlay lost mid-run is a container `die` (or an `unhealthy`) event:
# the first one interrupts the pings (ping_series then stops the run as invalid), and every one is
# appended to OVERLAY_DIED with the engine's time until watch_stop, so that the reason names the
# first failure in time and lists the later ones as its consequences (overlay_died_reason).
docker_watch_start() {
  [[ "$DRY_RUN" != 1 && "$PROTOCOL" != none ]] || return 0
  local svc="$1"
  OVERLAY_DIED="$RUN_DIR/overlay-died.txt"
  _docker_watch "$svc" &
  WATCH_PID=$!
  cleanup_push watch_stop
}

_docker_watch() {
  local svc="$1"
  mapfile -d '' -t _WATCH_STOP < <(dc_exec "$svc" pkill -INT -x ping)
  _WATCH_STOPPED=0
  # the stream (and a ping stop under way) is ended on every way out (a TERM from watch_stop included)
  trap 'kill "${_STREAM_PID:-}" 2>/dev/null; wait; exit 0' TERM
  stream_until _overlay_lost docker events --filter "label=com.docker.compose.project=$COMPOSE_PROJECT" \
    --filter type=container --filter event=die --filter event=kill --filter event=oom \
    --filter event=health_status --format '{{.TimeNano}}|{{.Actor.Attributes.name}}|{{.Action}}' || return 1
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
  fi
  return 1
}

# overlay_died_reason: OVERLAY_DIED as a reason: the first failure in time, then its consequences
# (+seconds), one entry per container. Its consequences follow within seconds, so it first waits
# until the watcher added nothing for 2 s (at most WATCH_SETTLE_S, default 10; the measurement has
# ended). A line without the engine's time (run-overlay's watcher) is taken as it is.
overlay_died_reason() {
  local f="$OVERLAY_DIED" end=$((SECONDS + ${WATCH_SETTLE_S:-10})) size last=-1 still=0
  while ((SECONDS < end && still < 10)); do
    size="$(wc -c <"$f" 2>/dev/null || echo 0)"
    if ((size == last)); then still=$((still + 1)); else still=0; last="$size"; fi
    sleep 0.2              # pacing of the settle wait, after the measured window
  done
  local first="" t0=0 nanos what out="" later=()
  while read -r nanos what; do
    if [[ ! "$nanos" =~ ^[0-9]+$ ]]; then
      out+="${out:+; }$nanos $what"
      continue
    fi
    run_event error "overlay watcher: $what (engine time $nanos ns)"
    if [[ -z "$first" ]]; then
      first="$what"
      t0="$nanos"
      out="first failure: $what at $(date -u -d "@$((nanos / 1000000000))" +%H:%M:%S).$(printf '%03d' $((nanos / 1000000 % 1000)))Z"
    else
      later+=("${what#container } (+$(awk -v d="$((nanos - t0))" 'BEGIN { printf "%.1f", d / 1e9 }') s)")
    fi
  done < <(sort -n -k1,1 "$f" 2>/dev/null | awk '{ key = $3 } !seen[key]++')
  ((${#later[@]} == 0)) || out+="; then (consequences): $(printf '%s, ' "${later[@]}" | sed 's/, $//')"
  printf '%s\n' "$out"
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
