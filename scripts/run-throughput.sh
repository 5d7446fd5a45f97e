#!/usr/bin/env bash
# run-throughput: iperf3 TCP and UDP from UE 1 through its PDU session (and so through N3 with
# PROFILE's overlay) to an iperf3 server on the n6 gateway address (the host's on Compose; on a
# cluster the UPF's node's, in a pod there): throughput, and for UDP jitter and loss. Raw `iperf3
# -J` JSON kept (client side; the server's beside it as a log). A capture on n3 (its bridge; on a
# cluster, in the pods) checks the overlay. Docs: docs/experiments.md, docs/kubernetes.md.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

readonly EXPERIMENT=throughput

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

main() {
  docker_driver_begin "$EXPERIMENT" "$@" -- iperf3 ss
  TARGET="$(stack_value 'networks.n6.gateway')"
  local images=()
  mapfile -t images < <(docker_image_args)
  run_begin "$EXPERIMENT" "${images[@]}"

  # whole packets from before the first NF starts; iperf3 fills a disk in seconds, so the
  # validation capture stops after its first VALIDATION_PACKETS packets (whole, never cut)
  stack_create stack-up.log
  engine_net_capture -c "${VALIDATION_PACKETS:-200000}" n3 n3.pcap "" n3 -- iface=n3 purpose=validation
  stack_run_start stack-up.log

  iperf_series ue1
  stack_run_end
}

main "$@"
