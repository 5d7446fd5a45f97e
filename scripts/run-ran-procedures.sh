#!/usr/bin/env bash
# run-ran-procedures: F1 UE Context Setup and E1 Bearer Context Setup times per UE registration on
# the split OpenAirInterface RAN (paper 5.1; docs/ran.md). One run = one stack boot: the core and
# the CU-CP, CU-UP and DU come up with PROFILE's overlay; whole-packet captures on F1-C, E1 and N2
# run from before the first node starts; then REGISTRATIONS fresh registrations of UE 1 (started,
# attached with its PDU session, removed; a failed one is retried and recorded, never dropped).
# The procedure times are computed by the analysis from the captures (both start points: the F1/E1
# request, and NGAP PDUSessionResourceSetupRequest as the authors' scripts); the F1-C and E1
# captures also prove the overlay on their interface. Docs: docs/ran.md, docs/experiments.md.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

readonly EXPERIMENT=ran-procedures
readonly IFACES=(f1c e1 n2)
# nflog groups of the CU-CP's plaintext views (plaintext_view_start), one per interface
declare -rA VIEW_GROUP=([n2]=38 [f1c]=39 [e1]=40)

usage() {
  cat <<EOF
Usage: $(basename "$0") [--profile P] [--registrations N] [--attach-timeout S] [--gap S] ...
       make run-ran-procedures PROFILE=<p> [REGISTRATIONS=...] [BOOTS=...]

EXPERIMENTAL (docs/ran.md): needs root, Docker Engine + Compose v2 with SCTP in the kernel, and the
images incl. the OpenAirInterface one (make build IMAGES=oai; make doctor checks the rest).
Parameters (flags --name, or the Make/environment variable NAME):
$(tb params "$EXPERIMENT" --format help)
  PROFILE         a profile of the F1-C plane (make profiles PLANE=f1c) [default: baseline]
  RESULTS         results root [default: results]
  DRY_RUN=1       print the commands, start nothing

Writes \$RESULTS/<campaign>/ran-procedures/<profile>/<run>/: manifest.json (ues, attach_failures),
f1c.pcap, e1.pcap, n2.pcap (timing: the bridge's whole packets, or for an interface PROFILE protects
the CU-CP's own plaintext view, view=cucp-plaintext, beside <iface>-wire.pcap validating the
overlay), registrations.log, containers.log, rendered-configs.sha256.
Exit: 0 valid run, 1 failure or invalid run, 2 usage error, 130 interrupted.
EOF
}

# register N: one fresh registration of UE 1, then its container is removed (the next one is a
# new UE to the RAN and the core), with GAP seconds of pacing after it.
register() {
  local n="$1" rc=0
  attach_ue "$n" ue1 registration registrations.log || rc=$?
  run_cmd "${DC[@]}" "${STACK_ALL_PROFILES[@]}" rm -sf ue1 >>"$(out_path registrations.log)" 2>&1 \
    || warn "registration $n: could not remove UE 1"
  [[ "$DRY_RUN" == 1 ]] || sleep "$GAP"     # pacing only: the RAN releases the old context
  return "$rc"
}

main() {
  docker_driver_begin "$EXPERIMENT" "$@"
  export RAN UU                 # the render (scripts/up.sh) takes the RAN variant from them
  local images=() n failed=0 iface
  mapfile -t images < <(docker_image_args)
  run_begin "$EXPERIMENT" "${images[@]}"

  log "stack up: profile $PROFILE on $PLANE, RAN=$RAN (core, CU-CP, CU-UP, DU; UE 1 per registration)"
  stack_create stack-up.log --no-ue
  # whole packets from before the first node starts. An interface in the clear is timed from its
  # bridge (F1-C and E1 also validate a baseline run); a protected one shows only ESP/WireGuard
  # there: its bridge capture validates the overlay and the CU-CP's own plaintext view times it
  for iface in "${IFACES[@]}"; do
    if protects "$iface"; then
      capture_start "$iface-wire" "$iface-wire.pcap" "iface=$iface" purpose=validation -- \
        dumpcap -q -i "$(bridge_of "$iface")" -w "${RUN_DIR:-.}/$iface-wire.pcap"
    else
      capture_start "$iface" "$iface.pcap" "iface=$iface" purpose=timing -- \
        dumpcap -q -i "$(bridge_of "$iface")" -w "${RUN_DIR:-.}/$iface.pcap"
    fi
  done
  stack_run_start stack-up.log --no-ue
  for iface in "${IFACES[@]}"; do
    ! protects "$iface" || plaintext_view_start "$iface" "$iface.pcap" cucp "$iface" "${VIEW_GROUP[$iface]}" \
      "iface=$iface" purpose=timing view=cucp-plaintext
  done

  for ((n = 1; n <= REGISTRATIONS; n++)); do
    register "$n" || failed=$((failed + 1))
    MEASURED=1
  done
  ((failed == 0)) || warn "$failed of $REGISTRATIONS registrations failed (recorded in attach_failures)"
  for iface in "${IFACES[@]}"; do
    if protects "$iface"; then
      plaintext_view_stop "$iface" cucp
      capture_stop "$iface-wire"
    else
      capture_stop "$iface"
    fi
  done
  stack_run_end
}

main "$@"
