#!/usr/bin/env bash
# run-f1u: user-plane RTT over the OpenAirInterface RAN (paper 5.1 and 6.1; docs/ran.md). One run =
# one stack boot: the core and the RAN (RAN=split: CU-CP, CU-UP, DU; RAN=oai: the monolithic gNB)
# with PROFILE's overlay come up with UE 1's PDU session; warm-up pings (kept, not counted), then
# SETS x PINGS pings of each size in SIZES from UE 1 through its PDU session to the UPF (its ogstun
# address: the paper pings the UPF), as run-n3 does; then (IPERF=1) iperf3 TCP and UDP from UE 1 to
# the host as run-throughput does. SCOPE=f1u is the F1-U measurement; SCOPE=e2e the end-to-end ping
# with PROFILE on every user-plane interface of the RAN variant (and UU=nea2-nia2 on the radio, as
# the paper). Whole-packet captures on F1-U (split) and N3 validate the overlay. Docs: docs/ran.md.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

readonly EXPERIMENT=f1u

usage() {
  cat <<EOF
Usage: $(basename "$0") [--profile P] [--scope f1u|e2e] [--ran split|oai] [--sizes 1032] [--sets N] ...
       make run-f1u PROFILE=<p> [SCOPE=...] [RAN=...] [UU=...] [SETS=...] [PINGS=...] [IPERF=0]

EXPERIMENTAL (docs/ran.md): needs root, Docker Engine + Compose v2 with SCTP in the kernel, the
images incl. the OpenAirInterface one (make build IMAGES=oai), and iperf3 on the host (IPERF=1).
Parameters (flags --name, or the Make/environment variable NAME):
$(tb params "$EXPERIMENT" --format help)
  PROFILE         a profile of the F1-U plane (make profiles PLANE=f1u) [default: baseline]
  RESULTS         results root [default: results]
  DRY_RUN=1       print the commands, start nothing

Writes \$RESULTS/<campaign>/f1u/<profile>/<run>/: manifest.json (parameters ran, scope, uu),
warmup-*.txt and ping-s<size>-set<NN>.txt (raw \`LC_ALL=C ping -D -n\`, attribute path=SCOPE),
iperf3-<tcp|udp>-rNN.json, f1u.pcap (split) and n3.pcap (validation), logs.
Exit: 0 valid run, 1 failure or invalid run, 2 usage error, 130 interrupted.
EOF
}

main() {
  local tools=(iperf3 ss)
  docker_driver_begin "$EXPERIMENT" "$@" -- "${tools[@]}"
  export RAN UU                 # the render (scripts/up.sh) takes the RAN variant from them
  PING_ATTRS=("path=$SCOPE")
  TARGET="$(stack_value 'ue_subnet.gateway')"        # the UPF's own address on its ogstun
  local images=() ifaces=(n3) iface
  [[ "$RAN" != split ]] || ifaces=(f1u n3)
  mapfile -t images < <(docker_image_args)
  run_begin "$EXPERIMENT" "${images[@]}"

  log "stack up: profile $PROFILE, RAN=$RAN, scope $SCOPE (waits for UE 1's PDU session)"
  stack_create stack-up.log
  # whole packets from before the first node starts; iperf3 would fill a disk, so each capture
  # stops after its first VALIDATION_PACKETS packets (whole, never cut; the pings come first)
  for iface in "${ifaces[@]}"; do
    capture_start "$iface" "$iface.pcap" "iface=$iface" purpose=validation -- \
      dumpcap -q -i "$(bridge_of "$iface")" -c "${VALIDATION_PACKETS:-200000}" -w "${RUN_DIR:-.}/$iface.pcap"
  done
  stack_run_start stack-up.log

  ue1_ping_series
  if [[ "$IPERF" == 1 ]]; then
    TARGET="$(stack_value 'networks.n6.gateway')"     # the iperf3 server runs on the host (n6)
    iperf_series ue1
  fi
  for iface in "${ifaces[@]}"; do
    capture_stop "$iface"
  done
  stack_run_end
}

main "$@"
