#!/usr/bin/env bash
# run-throughput: iperf3 TCP and UDP from UE 1 through its PDU session (and so through N3 with
# PROFILE's overlay) to an iperf3 server on the host's n6 gateway address: throughput, and for
# UDP jitter and loss. Raw `iperf3 -J` JSON kept (client side; the server's beside it as a log).
# A capture on n3 checks the overlay. Docs: docs/experiments.md.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

readonly EXPERIMENT=throughput
readonly IPERF_PORT=5201
SERVER_PID=""

usage() {
  cat <<EOF
Usage: $(basename "$0") [--profile P] [--transports "tcp udp"] [--duration S] [--reps N] [--udp-bitrate 100M]
       make run-throughput PROFILE=<p> [DURATION=...] [REPS=...]

$(usage_parameters "$EXPERIMENT" n3 " (iperf3 in the UERANSIM image), iperf3 on the host")

Writes \$RESULTS/<campaign>/throughput/<profile>/<run>/: manifest.json,
iperf3-<tcp|udp>-rNN.json (raw iperf3 -J), n3.pcap (validation), logs.
Exit: 0 valid run, 1 failure or invalid run, 2 usage error, 130 interrupted.
EOF
}

server_stop() {
  [[ -n "$SERVER_PID" ]] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

server_listening() {
  ss -Hltn "sport = :$IPERF_PORT" | grep -q .
}

main() {
  docker_driver_begin "$EXPERIMENT" "$@" -- iperf3 ss
  TARGET="$(stack_value 'networks.n6.gateway')"
  local images=()
  mapfile -t images < <(docker_image_args)
  run_begin "$EXPERIMENT" "${images[@]}"

  # whole packets from before the first NF starts; iperf3 fills a disk in seconds, so the
  # validation capture stops after its first VALIDATION_PACKETS packets (whole, never cut)
  stack_create stack-up.log
  capture_start n3 n3.pcap iface=n3 purpose=validation -- \
    dumpcap -q -i "$(bridge_of n3)" -c "${VALIDATION_PACKETS:-200000}" -w "${RUN_DIR:-.}/n3.pcap"
  stack_up stack-up.log
  render_hashes "$RENDER" rendered-configs.sha256
  stack_overlay_state sa-before
  cleanup_push stack_logs containers.log

  local ue_ip
  ue_ip="$(ue1_address)"
  _record_command iperf3 -s -B "$TARGET" -p "$IPERF_PORT" -J
  if [[ "$DRY_RUN" != 1 ]]; then
    iperf3 -s -B "$TARGET" -p "$IPERF_PORT" -J >"$RUN_DIR/iperf3-server.json" 2>&1 &
    SERVER_PID=$!
    cleanup_push server_stop
    wait_for 10 "iperf3 server on $TARGET:$IPERF_PORT" server_listening \
      || die "the iperf3 server on $TARGET:$IPERF_PORT did not start; see iperf3-server.json" 1
  fi

  local transport rep rel cmd=() rc
  for transport in $TRANSPORTS; do
    for ((rep = 1; rep <= REPS; rep++)); do
      rel="$(printf 'iperf3-%s-r%02d.json' "$transport" "$rep")"
      cmd=(iperf3 -c "$TARGET" -p "$IPERF_PORT" -B "$ue_ip" -J -t "$DURATION" -P "$STREAMS")
      [[ "$transport" == udp ]] && cmd+=(-u -b "$UDP_BITRATE")
      log "iperf3 $transport, repetition $rep/$REPS, ${DURATION}s -> $rel"
      mapfile -d '' -t cmd < <(dc_exec ue1 timeout $((DURATION + 30)) "${cmd[@]}")
      rc=0
      measure "$rel" iperf3 "transport=$transport" "rep=$rep" -- "${cmd[@]}" || rc=$?
      ((rc == 0)) || die "iperf3 $transport (repetition $rep) failed (exit $rc); see $rel" 1
    done
  done
  server_stop
  stack_overlay_state sa-after
  stack_logs containers.log
  [[ "$DRY_RUN" == 1 ]] || datapath_from_log "$RUN_DIR/containers.log"
  run_end
}

main "$@"
