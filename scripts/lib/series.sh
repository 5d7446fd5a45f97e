# shellcheck shell=bash
# Measured series: ping (exact counts, deadlines) and iperf3.
# Part of scripts/lib/common.sh, which sources it (source that, not this).

# ----------------------------------------------------------------- ping

# ping_deadline COUNT: seconds one set may take (PING_DEADLINE, or from PINGS x INTERVAL + slack).
ping_deadline() {
  local count="$1"
  if ((${PING_DEADLINE:-0} > 0)); then
    echo "$PING_DEADLINE"
  else
    awk -v n="$count" -v i="$INTERVAL" 'BEGIN { d = n * (i > 0.002 ? i : 0.002) * 2 + 30; printf "%d\n", d }'
  fi
}

# ping_argv COUNT SIZE: ping's options for one set: exactly COUNT requests (-c without -w: with a
# deadline, iputils keeps sending past COUNT until COUNT replies arrive, so losses would be
# counted over more than COUNT), ICMP message SIZE, 2 s per reply; the set's deadline is enforced
# from outside by `timeout`, and a set cut short shows as fewer than COUNT transmitted.
ping_argv() {
  local count="$1" size="$2"
  printf '%s\0' timeout --signal=INT "$(ping_deadline "$count")" env LC_ALL=C ping -D -n -c "$count" \
    -i "$INTERVAL" -W 2 -s "$(ping_payload "$size")"
}

# ping_payload SIZE: ping's -s for an ICMP message of SIZE bytes. SIZES are ICMP message sizes as
# the papers mean "64 bytes" (ping's default: 56 B of data + the 8 B ICMP header = 64 B).
ping_payload() {
  echo $(($1 - 8))
}

# ping_sent FILE: the requests ping says it transmitted ("N packets transmitted"), 0 if none.
ping_sent() {
  local n
  n="$(sed -n 's/^\([0-9][0-9]*\) packets transmitted.*/\1/p' "$1" 2>/dev/null | tail -n 1)"
  echo "${n:-0}"
}

# flag_loss FILE SET SIZE: a set that lost more than LOSS_MAX % (default 1) of its requests is
# flagged in the manifest (a warning event the report lists): the number may hide a sick overlay.
flag_loss() {
  local pct
  pct="$(sed -n 's/.* received, \([0-9.]*\)% packet loss.*/\1/p' "$1" | tail -n 1)"
  [[ -n "$pct" ]] || return 0
  if awk -v p="$pct" -v m="${LOSS_MAX:-1}" 'BEGIN { exit !(p > m) }'; then
    warn "set $2 (size $3) lost $pct % of its requests (more than LOSS_MAX=${LOSS_MAX:-1} %)"
    tbm event "$RUN_DIR" --level warning --message "loss: set $2 size $3 lost $pct % (> ${LOSS_MAX:-1} %)" \
      || warn "could not record the loss flag"
  fi
}

# ping_series WHO: the warm-up (kept, not counted), then SETS x PINGS pings for every size in
# SIZES, each set into its own raw file. `ping_cmd COUNT SIZE` (NUL-separated argv; UE 1 by
# default, run-overlay defines its own) and TARGET; WHO names the sender; PING_ATTRS (A=V words) go into
# every ping file's manifest entry (run-f1u: path=f1u|e2e).
PING_ATTRS=()
ping_series() {
  local who="$1" size set rel rc cmd=()
  size="${SIZES%% *}"
  rel="warmup-s$size.txt"
  log "warm-up: $WARMUP pings (tunnel established; kept as $rel, not counted)"
  mapfile -d '' -t cmd < <(ping_cmd "$WARMUP" "$size")
  rc=0
  measure "$rel" ping "size=$size" set=0 warmup=true "${PING_ATTRS[@]}" -- "${cmd[@]}" || rc=$?
  [[ "$DRY_RUN" == 1 ]] || ping_rc_ok "$rc" "$RUN_DIR/$rel" \
    || die "warm-up: $who got no reply from $TARGET (ping exit $rc): profile $PROFILE passes no traffic; see $RUN_DIR/$rel" 1
  for size in $SIZES; do
    for ((set = 1; set <= SETS; set++)); do
      rel="$(printf 'ping-s%s-set%02d.txt' "$size" "$set")"
      log "size $size B, set $set/$SETS: $PINGS pings every ${INTERVAL}s -> $rel"
      mapfile -d '' -t cmd < <(ping_cmd "$PINGS" "$size")
      rc=0
      measure "$rel" ping "size=$size" "set=$set" warmup=false "payload=$(ping_payload "$size")" \
        "ip_len=$((size + 20))" "${PING_ATTRS[@]}" -- "${cmd[@]}" || rc=$?
      [[ "$DRY_RUN" == 1 ]] && continue
      # a watcher (run-overlay, docker_watch_start) that saw the overlay die says so, with the time
      [[ -z "${OVERLAY_DIED:-}" || ! -s "$OVERLAY_DIED" ]] \
        || die "the overlay died during set $set (size $size): $(overlay_died_reason); the run is invalid" 1
      ping_rc_ok "$rc" "$RUN_DIR/$rel" \
        || die "ping set $set (size $size) from $who to $TARGET failed (exit $rc); see $RUN_DIR/$rel" 1
      # exactly PINGS requests per set: a set that sent fewer (deadline, a signal caught by ping
      # alone) is partial, and the run with it is not complete
      local sent
      sent="$(ping_sent "$RUN_DIR/$rel")"
      ((sent == PINGS)) \
        || die "ping set $set (size $size) is partial: $sent of $PINGS requests transmitted; see $RUN_DIR/$rel" 1
      flag_loss "$RUN_DIR/$rel" "$set" "$size"
    done
  done
}

# ----------------------------------------------------------------- iperf3

IPERF_PORT=5201

# iperf_series UE_SERVICE: iperf3 from the UE's PDU session address to a server on TARGET (the n6
# gateway: the runtime's engine_n6_server_start runs it where that address is, this host on
# Compose, the UPF's node on a cluster): TRANSPORTS x REPS tests of DURATION s (UDP at
# UDP_BITRATE, STREAMS streams), raw `iperf3 -J` JSON each into iperf3-<transport>-rNN.json, the
# server's output beside them (iperf3-server.json).
iperf_series() {
  local svc="$1" ue_ip transport rep rel cmd=() rc
  ue_ip="$(ue_address "$svc")"
  engine_n6_server_start iperf3-server.json "$IPERF_PORT" "$TARGET" -- iperf3 -s -B "$TARGET" -p "$IPERF_PORT" -J
  for transport in $TRANSPORTS; do
    for ((rep = 1; rep <= REPS; rep++)); do
      rel="$(printf 'iperf3-%s-r%02d.json' "$transport" "$rep")"
      cmd=(iperf3 -c "$TARGET" -p "$IPERF_PORT" -B "$ue_ip" -J -t "$DURATION" -P "$STREAMS")
      [[ "$transport" == udp ]] && cmd+=(-u -b "$UDP_BITRATE")
      log "iperf3 $transport, repetition $rep/$REPS, ${DURATION}s -> $rel"
      mapfile -d '' -t cmd < <(dc_exec "$svc" timeout $((DURATION + 30)) "${cmd[@]}")
      rc=0
      measure "$rel" iperf3 "transport=$transport" "rep=$rep" -- "${cmd[@]}" || rc=$?
      ((rc == 0)) || die "iperf3 $transport (repetition $rep) failed (exit $rc); see $rel" 1
    done
  done
  engine_n6_server_stop
}
