#!/usr/bin/env bash
# run-sbi: UE attach time with PROFILE's SBI overlay (paper 4.2). Per iteration: a fresh core
# and gNB (scripts/up.sh --no-ue), captures on N2 (timing) and the SBI (validation), UE 1 attaches
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
  PROFILE         an SBI profile (make profiles PLANE=sbi) [default: baseline]
  RESULTS         results root [default: results]
  DRY_RUN=1       print the commands, start nothing

Writes \$RESULTS/<campaign>/sbi/<profile>/<run>/: manifest.json (ues, attach_failures),
itNN-n2.pcap (timing), itNN-sbi.pcap (validation), per-iteration logs.
Exit: 0 valid run, 1 failure or invalid run, 2 usage error, 130 interrupted.
EOF
}

iteration() {
  local it="$1" tag
  tag="$(printf 'it%02d' "$it")"
  log "=== iteration $it/$ITERATIONS: fresh core and gNB ($PROFILE on the SBI)"
  # whole packets, from before the first NF starts: the start-up NF-to-NRF channels are checked
  # too, and a TLS record is never cut (a cut record cannot prove anything)
  stack_create "$tag-stack-up.log" --no-ue
  capture_start "$tag-n2" "$tag-n2.pcap" iface=n2 purpose=timing "iteration=$it" -- \
    dumpcap -q -i "$(bridge_of n2)" -w "${RUN_DIR:-.}/$tag-n2.pcap"
  capture_start "$tag-sbi" "$tag-sbi.pcap" iface=sbi purpose=validation "iteration=$it" -- \
    dumpcap -q -i "$(bridge_of sbi)" -w "${RUN_DIR:-.}/$tag-sbi.pcap"
  stack_up "$tag-stack-up.log" --no-ue
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
  capture_stop "$tag-n2"
  capture_stop "$tag-sbi"
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
