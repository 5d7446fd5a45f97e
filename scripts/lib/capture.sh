# shellcheck shell=bash
# shellcheck disable=SC2004  # _CAPTURE_* are associative arrays declared in common.sh
# Captures: whole-packet captures started before the first packet, with deadlines, recorded as pcap.
# Part of scripts/lib/common.sh, which sources it (source that, not this).

# ----------------------------------------------------------------- captures

# capture_start NAME REL [ATTR=VALUE ...] -- CMD...: start a capture that writes RUN_DIR/REL (CMD
# carries its own -w); wait (deadline) until it captures. capture_stop records REL in the manifest
# as kind pcap with the attributes (also when the run is cut short: the exit trap stops captures).
capture_start() {
  local name="$1" rel="$2" attrs=() cmd=()
  shift 2
  _split_command capture_start attrs cmd "$@"
  set -- "${cmd[@]}"
  # the measuring tools on their own CPUs (CPUSET_TOOLS), apart from the stack's
  [[ -z "${CPUSET_TOOLS:-}" ]] || set -- taskset -c "$CPUSET_TOOLS" "$@"
  _record_command "$@"
  [[ "$DRY_RUN" == 1 ]] && return 0
  setsid "$@" >>"$RUN_DIR/${rel%.*}.capture.log" 2>&1 3>&- 4>&- 9>&- &
  _CAPTURE_PID[$name]=$!
  _CAPTURE_FILE[$name]="$rel"
  _CAPTURE_ATTRS[$name]="${attrs[*]}"
  if ! wait_for 20 "capture $name ($rel)" _capture_ready "$name"; then
    die "capture $name did not start; see $RUN_DIR/${rel%.*}.capture.log" 1
  fi
  log "capture $name running: $rel"
}

_capture_ready() {
  local name="$1" rel="${_CAPTURE_FILE[$1]}"
  # dumpcap opens the interface before it writes the file header: a header means it captures
  kill -0 "${_CAPTURE_PID[$name]}" 2>/dev/null && [[ -s "$RUN_DIR/$rel" ]]
}

capture_stop() {
  local name="$1" pid rel attrs
  pid="${_CAPTURE_PID[$name]:-}"
  [[ -n "$pid" ]] || return 0
  rel="${_CAPTURE_FILE[$name]}"
  # dumpcap/tshark flush and close the file on TERM (INT may be ignored in background jobs)
  kill -TERM "$pid" 2>/dev/null || true
  local end=$((SECONDS + ${_CAPTURE_GRACE[$name]:-10}))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < end)); do
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    warn "capture $name did not stop within ${_CAPTURE_GRACE[$name]:-10} s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  unset "_CAPTURE_PID[$name]"
  read -r -a attrs <<<"${_CAPTURE_ATTRS[$name]}"
  if [[ -s "$RUN_DIR/$rel" ]]; then
    tbm add-file "$RUN_DIR" --path "$rel" --kind pcap "${attrs[@]/#/--attr=}" >/dev/null \
      || log "error: could not record capture $rel in the manifest"
  else
    warn "capture $name wrote nothing ($rel)"
  fi
  [[ ! -s "$RUN_DIR/${rel%.*}.capture.log" ]] \
    || tbm add-file "$RUN_DIR" --path "${rel%.*}.capture.log" --kind log >/dev/null || true
}

capture_stop_all() {
  local name
  for name in "${!_CAPTURE_PID[@]}"; do
    capture_stop "$name"
  done
}

# stack_leak_captures PLANE: per overlay endpoint of PLANE, a capture of every network its
# namespace is on (the runtime's engine_net_capture: on Compose the Docker bridges, each of the
# holder's interfaces being a veth on one of them; on a cluster a container in its pod), started
# before the stack, as leak-<node>.pcap (purpose leak): a packet of the plane that a dead
# overlay lets out of any interface, in the clear, shows there and makes the run invalid
# (testbed/validity.py leak_verdict). Nothing for the baseline.
stack_leak_captures() {
  local plane="$1" node nets=()
  protects "$plane" || return 0
  while IFS= read -r node; do
    [[ -n "$node" ]] || continue
    if [[ "$DRY_RUN" == 1 ]]; then
      nets=("$plane")
    else
      mapfile -t nets < <("$PYTHON" -c 'import sys; from testbed import stack
print(*stack.load()["nodes"][sys.argv[1]]["networks"], sep="\n")' "$node") \
        || die "no networks of $node in nf-configs/stack.yaml" 1
    fi
    engine_net_capture "leak-$node" "leak-$node.pcap" "$node" "${nets[@]}" -- "iface=$plane" purpose=leak "node=$node"
  done < <(overlay_endpoints)
}
