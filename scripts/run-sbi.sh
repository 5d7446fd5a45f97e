#!/usr/bin/env bash
# run-sbi: UE attach time with PROFILE's overlay on the SBI (paper 4.2), or on the planes PLANE names
# (n2, n4, n3, several: PLANE=n2,n4,n3,sbi; all). Per iteration: a fresh core and gNB
# (scripts/up.sh --no-ue), whole-packet captures on every covered plane's bridge (validation) and
# on N2 (timing), started before the first NF; when N2 itself is protected the wire shows no NGAP,
# so the timing capture is the gNB's own plaintext view (nflog in its namespace, see
# plaintext_view_start in scripts/lib/common.sh). UE 1 attaches
# (cold: no SBI security associations yet), then - mode warm/both - UE 2 (warm: well within the
# 118 s after which Open5GS's HTTP/2 client drops idle connections: curl's default connection age); stack down.
# A UE without a PDU session within ATTACH_TIMEOUT is a failed sample (recorded with the reason)
# and is retried up to RETRIES attempts; nothing is dropped silently. The attach times are
# computed by the analysis from the N2 captures. Docs: docs/experiments.md.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=scripts/lib/keylog.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/keylog.sh"

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
itNN-n2-gnb.pcap, the gNB's plaintext view), per-iteration logs; with KEYS=1 the key material of
the iteration's traffic (itNN-tls-keys.log, itNN-esp-keys-<node>.log: 0600, kind keylog).
Exit: 0 valid run, 1 failure or invalid run, 2 usage error, 130 interrupted.
EOF
}

# plane_captures IT TAG: one whole-packet capture per covered plane's network (validation), and
# N2 for the attach timing where N2 is not covered (there the wire shows NGAP in the clear); the
# runtime's engine_net_capture: the bridges on Compose, capture containers in the pods on a cluster.
plane_captures() {
  local it="$1" tag="$2" plane net name
  while read -r plane net; do
    name="$tag-$plane"
    # the baseline on N2: the timing capture below keeps the name itNN-n2.pcap
    [[ "$plane" == n2 ]] && ! protects n2 && name="$tag-n2-wire"
    engine_net_capture "$name" "$name.pcap" "" "$net" -- "iface=$plane" purpose=validation "iteration=$it"
  done < <("$PYTHON" -c 'import sys; from testbed import planes
for p in planes.split(sys.argv[1]): print(p, planes.network(p))' "$PLANE")
  protects n2 && return 0
  # timed where the N2 client is (one clock: on a cluster the gNB's pod, on Compose the bridge)
  engine_net_capture "$tag-n2" "$tag-n2.pcap" "$(plane_client n2)" "$(plane_value n2 network)" -- \
    iface=n2 purpose=timing "iteration=$it"
}

iteration() {
  local it="$1" tag
  tag="$(printf 'it%02d' "$it")"
  log "=== iteration $it/$ITERATIONS: fresh core and gNB ($PROFILE on $PLANE)"
  # whole packets, from before the first NF starts: the start-up NF-to-NRF channels are checked
  # too, and a TLS record is never cut (a cut record cannot prove anything)
  stack_create "$tag-stack-up.log" --no-ue
  plane_captures "$it" "$tag"
  stack_run_start "$tag-stack-up.log" --no-ue
  if protects n2; then
    # N2 is protected: the bridge shows no NGAP; time the attach from the N2 client's own plaintext view
    local n2_client
    n2_client="$(plane_client n2)"
    plaintext_view_start "$tag-n2-gnb" "$tag-n2-gnb.pcap" "$n2_client" n2 38 iface=n2 purpose=timing \
      "view=$n2_client-plaintext" "iteration=$it"
  fi
  local failed=0
  # the overlay's own steps before the cold UE (WireGuard forgets every session: the cold attach
  # must include its handshakes; validity checks the capture for new ones)
  stack_holder_commands "$tag" before-cold
  attach_ue "$it" ue1 cold "$tag-stack.log" || failed=1
  if [[ "$MODE" != cold ]]; then
    if ((failed)); then
      warn "iteration $it: UE 1 never attached, so UE 2 would not be warm: warm sample skipped (recorded)"
      [[ "$DRY_RUN" == 1 ]] || tbm add-failure "$RUN_DIR" --attr ue=ue2 --attr attempt=1 \
        --attr "iteration=$it" --attr final=true --attr "reason=not started: UE 1 did not attach"
    else
      # pacing only (the warm UE must come within the 118 s idle limit; checked by params)
      [[ "$DRY_RUN" == 1 ]] || sleep "$WARM_GAP"
      # ... and before the warm one (WireGuard: every session's age, recorded)
      stack_holder_commands "$tag" before-warm
      attach_ue "$it" ue2 warm "$tag-stack.log" || true
    fi
  fi
  ! protects n2 || plaintext_view_stop "$tag-n2-gnb" "$(plane_client n2)"
  capture_stop_all
  # the key logs (KEYS=1) while the stack is up, then the boot's records and the teardown
  keylog_collect "$tag" "$it"
  stack_boot_end
}

main() {
  docker_driver_begin "$EXPERIMENT" "$@"
  # NAS (--nas or NAS=) reaches the render of every iteration's stack (scripts/up.sh -> render);
  # so does KEYS (testbed/keylog/plugin.py: the overlay plug-in's key logs)
  export NAS KEYS
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
