#!/usr/bin/env bash
# run-sbi: UE attach time with PROFILE's overlay on the SBI (paper 4.2), or on the planes PLANE names
# (n2, n4, n3, several: PLANE=n2,n4,n3,sbi; all). Per iteration: a fresh core and gNB
# (scripts/up.sh --no-ue), whole-packet captures on every covered plane's bridge (validation) and
# on N2 (timing), started before the first NF; when N2 itself is protected the wire shows no NGAP,
# so the timing capture is the gNB's own plaintext view (nflog in its namespace, see
# gnb_timing_capture). UE 1 attaches
# (cold: no SBI security associations yet), then - mode warm/both - UE 2 (warm: well within the
# 118 s after which Open5GS's HTTP/2 client drops idle connections, FACTS.md 1.4); stack down.
# A UE without a PDU session within ATTACH_TIMEOUT is a failed sample (recorded with the reason)
# and is retried up to RETRIES attempts; nothing is dropped silently. The attach times are
# computed by the analysis from the N2 captures. Docs: docs/experiments.md.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

readonly EXPERIMENT=sbi

usage() {
  cat <<EOF
Usage: $(basename "$0") [--profile P] [--mode cold|warm|both] [--iterations N] [--attach-timeout S] ...
       make run-sbi | run-sbi-cold | run-sbi-warm PROFILE=<p> [ITERATIONS=...]

Needs root, Docker Engine + Compose v2 and the images (make build; make doctor checks).
Parameters (flags --name, or the Make/environment variable NAME):
$(tb params "$EXPERIMENT" --format help)
  PROFILE         a profile of those planes (make profiles PLANE=...) [default: baseline]
  RESULTS         results root [default: results]
  DRY_RUN=1       print the commands, start nothing

Writes \$RESULTS/<campaign>/sbi/<profile>[@<planes>]/<run>/: manifest.json (ues, attach_failures),
itNN-<plane>.pcap per covered plane (validation), itNN-n2.pcap (timing; with N2 covered:
itNN-n2-gnb.pcap, the gNB's plaintext view), per-iteration logs.
Exit: 0 valid run, 1 failure or invalid run, 2 usage error, 130 interrupted.
EOF
}

# protects PLANE: true when the run's overlay covers that plane (the baseline protects none)
protects() {
  [[ "$PROTOCOL" != none && ",$PLANE," == *",$1,"* ]]
}

# plane_captures IT TAG: one whole-packet capture per covered plane's network (validation), and
# N2 for the attach timing where N2 is not covered (there the bridge shows NGAP in the clear).
plane_captures() {
  local it="$1" tag="$2" plane net name
  while read -r plane net; do
    name="$tag-$plane"
    # the baseline on N2: the timing capture below keeps the name itNN-n2.pcap
    [[ "$plane" == n2 ]] && ! protects n2 && name="$tag-n2-wire"
    capture_start "$name" "$name.pcap" "iface=$plane" purpose=validation "iteration=$it" -- \
      dumpcap -q -i "$(bridge_of "$net")" -w "${RUN_DIR:-.}/$name.pcap"
  done < <("$PYTHON" -c 'import sys; from testbed import planes
for p in planes.split(sys.argv[1]): print(p, planes.network(p))' "$PLANE")
  protects n2 && return 0
  capture_start "$tag-n2" "$tag-n2.pcap" iface=n2 purpose=timing "iteration=$it" -- \
    dumpcap -q -i "$(bridge_of "$(plane_value n2 network)")" -w "${RUN_DIR:-.}/$tag-n2.pcap"
}

# plane_value PLANE FIELD: a field of the plane (nf-configs/channels.yaml); port = its number.
plane_value() {
  "$PYTHON" -c 'import sys; from testbed import planes, stack
p = planes.get(sys.argv[1])
print(p.port(stack.load()) if sys.argv[2] == "port" else getattr(p, sys.argv[2]))' "$1" "$2" \
    || die "no field $2 of plane $1 in nf-configs/channels.yaml" 1
}

readonly NFLOG_GROUP=38
# gnb_timing_capture IT TAG: N2 is protected, so the n2 bridge carries ESP/WireGuard only. The gNB's
# own namespace sees NGAP in the clear: an nftables log rule sends every NGAP packet to and from the
# AMF (output before encryption, input after decryption, whatever the datapath) to nflog group
# NFLOG_GROUP, and dumpcap in the gNB's holder (tools image) writes them whole. Started after the
# gNB's NG Setup, before UE 1: the attach window is inside it; the holder has NET_ADMIN as an
# overlay endpoint. Its timestamps are the gNB's, so the window includes the gNB's own crypto.
gnb_timing_capture() {
  local it="$1" tag="$2" amf port proto
  amf="$(stack_address amf "$(plane_value n2 network)")"
  port="$(plane_value n2 port)"
  proto="$(plane_value n2 transport)"
  run_cmd "${DC[@]}" exec -T gnb-net nft -f - <<NFT || die "could not add the NGAP log rule in gnb-net" 1
table inet testbed_timing {
  chain out { type filter hook output priority 0; policy accept; ip daddr $amf $proto dport $port log group $NFLOG_GROUP; }
  chain in { type filter hook input priority 0; policy accept; ip saddr $amf $proto sport $port log group $NFLOG_GROUP; }
}
NFT
  # shellcheck disable=SC2016  # the inner script expands its own arguments
  capture_start "$tag-n2-gnb" "$tag-n2-gnb.pcap" iface=n2 purpose=timing view=gnb-plaintext "iteration=$it" -- \
    bash -c 'out="$1"; shift; exec "$@" >"$out"' _ "${RUN_DIR:-.}/$tag-n2-gnb.pcap" \
    "${DC[@]}" exec -T gnb-net dumpcap -q -i "nflog:$NFLOG_GROUP" -w -
}

# gnb_timing_stop TAG: dumpcap in the holder ends its file on SIGINT; then the stream closes.
gnb_timing_stop() {
  protects n2 || return 0
  [[ "$DRY_RUN" == 1 ]] || "${DC[@]}" exec -T gnb-net pkill -INT -x dumpcap >/dev/null 2>&1 || true
  capture_stop "$1-n2-gnb"
}

iteration() {
  local it="$1" tag
  tag="$(printf 'it%02d' "$it")"
  log "=== iteration $it/$ITERATIONS: fresh core and gNB ($PROFILE on $PLANE)"
  # whole packets, from before the first NF starts: the start-up NF-to-NRF channels are checked
  # too, and a TLS record is never cut (a cut record cannot prove anything)
  stack_create "$tag-stack-up.log" --no-ue
  plane_captures "$it" "$tag"
  stack_up "$tag-stack-up.log" --no-ue
  ! protects n2 || gnb_timing_capture "$it" "$tag"
  render_hashes "$RENDER" "$tag-rendered-configs.sha256"
  local failed=0
  # WireGuard: no session may exist when the cold UE starts (whatever time passed since the
  # holders' start-up handshakes): forget them all; validity checks the capture for new ones
  stack_wg_holders "$tag-wg-reset" bash /opt/testbed/wireguard/reset-sessions.sh
  attach_ue "$it" ue1 cold "$tag-stack.log" || failed=1
  if [[ "$MODE" != cold ]]; then
    if ((failed)); then
      warn "iteration $it: UE 1 never attached, so UE 2 would not be warm: warm sample skipped (recorded)"
      [[ "$DRY_RUN" == 1 ]] || tbm add-failure "$RUN_DIR" --attr ue=ue2 --attr attempt=1 \
        --attr "iteration=$it" --attr final=true --attr "reason=not started: UE 1 did not attach"
    else
      # pacing only (the warm UE must come within the 118 s idle limit; checked by params)
      [[ "$DRY_RUN" == 1 ]] || sleep "$WARM_GAP"
      # the warm UE needs every session younger than WireGuard's 120 s rekey time: recorded
      stack_wg_holders "$tag-wg-before-warm" sh -c 'date +%s; wg show all latest-handshakes'
      attach_ue "$it" ue2 warm "$tag-stack.log" || true
    fi
  fi
  gnb_timing_stop "$tag"
  capture_stop_all
  stack_overlay_state "$tag-sa-after"
  stack_logs "$tag-containers.log"
  [[ "$DRY_RUN" == 1 ]] || datapath_from_log "$RUN_DIR/$tag-containers.log"
  stack_teardown
}

main() {
  docker_driver_begin "$EXPERIMENT" "$@"
  local images=() it
  mapfile -t images < <(docker_image_args)
  run_begin "$EXPERIMENT" "${images[@]}"
  for ((it = 1; it <= ITERATIONS; it++)); do
    iteration "$it"
    MEASURED=1
  done
  run_end
}

main "$@"
