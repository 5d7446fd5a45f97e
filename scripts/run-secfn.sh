#!/usr/bin/env bash
# run-secfn: the UPF security function in the Docker stack (docs/secfn.md). The stack comes up
# with PROFILE's N3 overlay and the function (SECFN x IDS, rendered by testbed/secfn/compose.py):
# UE 1 -> gNB -> N3 -> UPF (NAT, engine in its namespace) -> N6 server `dn`. Test traffic that
# each seed rule matches, then D-ITG from UE 1's namespace (ue-ditg) to the server: TCP and UDP,
# 512 B, Poisson, PROTOCOLS x RATES x RUNS in a seeded random order; raw D-ITG logs, the engine's
# alerts and counters kept; validity from the n6 (and n3) captures and the engine's counters.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

readonly EXPERIMENT=secfn
readonly DITG_AT=/var/lib/testbed/ditg      # testbed/secfn/compose.py: $SECFN_OUT/ditg in ue-ditg and dn

usage() {
  cat <<EOF
Usage: $(basename "$0") [--profile P] [--secfn F] [--ids E] [--rates "100 1000"] [--runs N] [--duration S] ...
       make run-secfn PROFILE=<n3 profile> SECFN=<none|nat|ids-nat|ips-nat> IDS=<suricata|snort|passthrough>

Needs root, Docker Engine + Compose v2, the images (D-ITG, socat, Suricata and the pass-through in
the tools image; IDS=snort: \`make build IMAGES=snort\`), dumpcap and tshark on the host.
Parameters (flags --name, or the Make/environment variable NAME):
$(tb params "$EXPERIMENT" --format help)
  PROFILE         an n3 profile (make profiles PLANE=n3) [default: baseline]
  SECFN_UNIT      <function>-<engine> instead of SECFN and IDS (campaigns), e.g. ips-nat-snort
  RESULTS         results root [default: results]
  DRY_RUN=1       print the commands, start nothing

Writes \$RESULTS/<campaign>/secfn/<profile>.<secfn>-<engine>/<run>/: manifest.json, ditg.csv,
ditg/ (raw ITGSend/ITGRecv logs and ITGDec's text), engine/ (alerts, the engine's counters,
the queue's), server/, probe.log, n6.pcap and n3.pcap (validation), logs.
Exit: 0 valid run, 1 failure or invalid run, 2 usage error, 130 interrupted.
EOF
}

from_unit() {
  [[ -n "${SECFN_UNIT:-}" ]] || return 0
  local pair
  pair="$("$PYTHON" -c 'import sys; from testbed import secfn
f, e = secfn.parse_unit(sys.argv[1]); print(f, e or "")' "$SECFN_UNIT")" || exit 2
  read -r SECFN IDS <<<"$pair"
  export SECFN IDS
}

engine_running() {
  [[ -n "$("${DC[@]}" ps --status running -q secfn 2>/dev/null)" ]]
}

# flow PROTO RATE RUN ITGSEND_ARGV...: one D-ITG flow from UE 1 (the command from
# `python -m testbed secfn-plan`), then ITGDec of both logs (raw kept).
flow() {
  local proto="$1" rate="$2" run="$3" tag cmd=() side rel
  shift 3
  tag="$proto-$rate-$run"
  mapfile -d '' -t cmd < <(dc_exec ue-ditg "$@")
  log "D-ITG $proto at $rate packets/s, run $run (${DURATION}s)"
  if ! run_bg_wait timeout $((${DURATION%.*} + 60)) "${cmd[@]}" >"$(out_path "ditg/itgsend-$tag.out")" 2>&1; then
    warn "ITGSend $tag failed; see ditg/itgsend-$tag.out (the run counts its flows)"
    return 0
  fi
  [[ "$DRY_RUN" == 1 ]] && return 0
  for side in send recv; do
    rel="ditg/$side-$tag.log"
    [[ -f "$RUN_DIR/$rel" ]] || { warn "no $rel"; continue; }
    mapfile -d '' -t cmd < <(dc_exec ue-ditg ITGDec "$DITG_AT/$side-$tag.log")
    "${cmd[@]}" </dev/null >"$RUN_DIR/$rel.txt" 2>>"$RUN_DIR/driver-stderr.log" || warn "ITGDec $rel failed"
    record_file "$rel" ditg "protocol=$proto" "rate=$rate" "run=$run" "side=$side"
  done
}

main() {
  from_unit
  docker_driver_begin "$EXPERIMENT" "$@"
  export SECFN IDS QUEUE_MAXLEN QUEUES FAIL_OPEN   # the render reads them (testbed/cli/render.py)
  local images=()
  mapfile -t images < <(docker_image_args)
  [[ "$IDS" != snort || "$SECFN" == none || "$SECFN" == nat ]] || images+=(--image "$SNORT_IMAGE")
  run_begin "$EXPERIMENT" "${images[@]}"
  SERVER="$(stack_value 'dn_server.address')"
  if [[ "$DRY_RUN" != 1 ]]; then
    export SECFN_OUT="$RUN_DIR"                   # engine/, server/, ditg/ of the containers
    mkdir -p "$RUN_DIR/engine" "$RUN_DIR/server" "$RUN_DIR/ditg"
  fi

  # whole packets from before the first NF starts; the first VALIDATION_PACKETS of each
  stack_create stack-up.log
  capture_start n6 n6.pcap iface=n6 purpose=validation -- \
    dumpcap -q -i "$(bridge_of n6)" -c "$VALIDATION_PACKETS" -w "${RUN_DIR:-.}/n6.pcap"
  capture_start n3 n3.pcap iface=n3 purpose=validation -- \
    dumpcap -q -i "$(bridge_of n3)" -c "$VALIDATION_PACKETS" -w "${RUN_DIR:-.}/n3.pcap"
  stack_run_start stack-up.log

  UE_IP="$(ue1_address)"
  local cmd=()
  mapfile -d '' -t cmd < <(dc_exec ue-ditg /opt/testbed/secfn/probe.sh "$SERVER" 9999 "$UE_IP")
  measure probe.log log -- "${cmd[@]}" || warn "the probes failed (see probe.log); the validity check decides"

  local plan fields=()
  if [[ "$DRY_RUN" == 1 ]]; then
    plan="$(printf 'udp\t100\t0\tITGSend\t-T\tUDP\t-a\t::ffff:%s\t-sa\t::ffff:%s\t-Ssa\t::ffff:%s\t-c\t512\t-O\t100\t...' \
      "$SERVER" "$UE_IP" "$UE_IP")"
    log "DRY_RUN: the flow order is drawn at the start of a real run (python -m testbed secfn-plan)"
  else
    plan="$(tb secfn-plan "$RUN_DIR" --server "$SERVER" --source "$UE_IP" --log-dir "$DITG_AT")" \
      || die "could not plan the D-ITG flows of $RUN_DIR" 1
  fi
  # the plan on its own descriptor: `docker compose exec` reads its standard input, and read from
  # the loop's it swallowed every flow after the first (seen in the guest: 1 of 8 flows)
  while IFS=$'\t' read -r -u 5 -a fields; do
    ((${#fields[@]} > 3)) && flow "${fields[@]}"
  done 5<<<"$plan"

  local died=() stop=(dn)
  if [[ "$SECFN" != none && "$SECFN" != nat ]]; then
    stop=(secfn dn)
    if [[ "$DRY_RUN" != 1 ]] && ! engine_running; then
      died=(--died "the secfn container was not running when the measurement ended (containers.log)")
    fi
  fi
  stack_overlay_state sa-after
  # SIGTERM: the entrypoint saves the queue's counters, the engine writes its own
  run_cmd "${DC[@]}" stop -t 45 "${stop[@]}" >/dev/null 2>&1 || warn "could not stop ${stop[*]} cleanly"
  [[ "$DRY_RUN" == 1 ]] || tb secfn-finish "$RUN_DIR" "${died[@]}" || die "could not collect $RUN_DIR" 1
  stack_logs containers.log
  [[ "$DRY_RUN" == 1 ]] || datapath_from_log "$RUN_DIR/containers.log"
  run_end
}

main "$@"
