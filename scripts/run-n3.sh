#!/usr/bin/env bash
# run-n3: user-plane RTT over N3 (paper 4.1). The stack comes up with PROFILE's N3 overlay and
# UE 1's PDU session; warm-up pings (tunnel established, kept, not counted); then SETS x PINGS
# pings from UE 1 through its PDU session to the host (the n6 gateway) for each payload size;
# a capture of the n3 network (its bridge; on a cluster, in the pods) checks the overlay; the stack goes down. Docs: docs/experiments.md.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

readonly EXPERIMENT=n3

usage() {
  cat <<EOF
Usage: $(basename "$0") [--profile P] [--sizes "64 1024"] [--sets N] [--pings N] [--interval S] ...
       make run-n3 PROFILE=<p> [SIZES=...] [SETS=...] [PINGS=...] [INTERVAL=...]

$(usage_parameters "$EXPERIMENT" n3)

Writes \$RESULTS/<campaign>/n3/<profile>/<run>/: manifest.json, warmup-*.txt and
ping-s<size>-set<NN>.txt (raw \`LC_ALL=C ping -D -n\`), n3.pcap (validation), logs.
Exit: 0 valid run, 1 failure or invalid run, 2 usage error, 130 interrupted.
EOF
}

main() {
  docker_driver_begin "$EXPERIMENT" "$@"
  TARGET="$(stack_value 'networks.n6.gateway')"
  local images=()
  mapfile -t images < <(docker_image_args)
  run_begin "$EXPERIMENT" "${images[@]}"

  log "stack up: profile $PROFILE on n3 (waits for UE 1's PDU session)"
  # whole packets, from before the first NF starts (the overlay's own set-up is on it)
  stack_create stack-up.log
  engine_net_capture n3 n3.pcap "" n3 -- iface=n3 purpose=validation
  stack_leak_captures n3
  stack_run_start stack-up.log

  ue1_ping_series
  stack_run_end
}

main "$@"
