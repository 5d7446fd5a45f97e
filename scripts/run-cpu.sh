#!/usr/bin/env bash
# run-cpu: CPU time per container (cgroup v2 cpu.stat usage_usec) from core boot to the last
# UE's PDU session (paper 4.3), for each UE count in UES, REPS times; on a cluster (ENGINE=k8s) per
# pod container and node (testbed/runtime/k8s/cpu.py). Each repetition boots a
# fresh stack (scripts/up.sh --no-ue), starts UES UEs in the ue-scale container, waits until all
# have a PDU session and reads every running container's CPU time (containers start at zero, so
# the reading is the boot -> last-PDU-session total). The namespace holders (<nf>-net) carry the
# overlay's own CPU time. A capture on the SBI checks the overlay. Docs: docs/experiments.md.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

readonly EXPERIMENT=cpu

usage() {
  cat <<EOF
Usage: $(basename "$0") [--profile P] [--ues "1 5 10 20"] [--reps N] [--attach-timeout S]
       make run-cpu PROFILE=<p> UES="1 5 10 20" [REPS=...]

$(usage_parameters "$EXPERIMENT" sbi)

Writes \$RESULTS/<campaign>/cpu/<profile>/<run>/: manifest.json, cpu-uNN-rNN.csv
(service,cpu_usec), sbi-uNN-rNN.pcap (validation), logs.
Exit: 0 valid run, 1 failure or invalid run, 2 usage error, 130 interrupted.
EOF
}

# scale_attach_failed N REP TAG: the boot's failed attach in the manifest (attach_failures: the
# ue-scale container, how many of its N UEs had a session, where its evidence is), not only in the
# reason; the UEs' and the gNB's logs and nr-cli views are kept before the teardown.
scale_attach_failed() {
  local n="$1" rep="$2" tag="$3" boot evidence="failure/$3-attach"
  [[ "$DRY_RUN" != 1 ]] || return 0
  boot=$(( $(ues_index "$n") * REPS + rep ))
  engine_evidence "$RUN_DIR/$evidence" ue-scale "$(ran_value RAN_READY)"
  tbm add-failure "$RUN_DIR" --attr ue=ue-scale --attr attempt=1 --attr "iteration=$boot" --attr final=true \
    --attr "ues=$n" --attr "rep=$rep" --attr "evidence=$evidence" \
    --attr "reason=$(ue_sessions ue-scale) of $n UEs had a PDU session after ${ATTACH_TIMEOUT}s ($tag)" \
    || warn "could not record the failed attach of $tag"
}

# ues_index N: the position of N in UES (0-based): boots are numbered in the order they run.
ues_index() {
  local i=0 u
  for u in $UES; do
    [[ "$u" != "$1" ]] || { echo "$i"; return 0; }
    i=$((i + 1))
  done
  echo 0
}

one_rep() {
  local n="$1" rep="$2" tag
  tag="$(printf 'u%02d-r%02d' "$n" "$rep")"
  log "=== $n UE(s), repetition $rep/$REPS: fresh stack ($PROFILE on the SBI)"
  # whole packets from before the first NF starts (the NF-to-NRF channels of the start-up)
  stack_create "$tag-stack-up.log" --no-ue
  engine_net_capture "sbi-$tag" "sbi-$tag.pcap" "" sbi -- iface=sbi purpose=validation
  local snaps="${RUN_DIR:-.}/hostcpu-$tag.txt"
  # the window's edges: one read at one instant each, nothing polled in between (the runtime's
  # engine_cpu_read: this host on Compose, each node and the stack's containers on a cluster)
  engine_cpu_read "$snaps" boot-start
  # the drivers' one start path; nothing exec'd into the stack until the CPU sample is read
  stack_run_start --quiet-start "$tag-stack-up.log" --no-ue
  # UES here is compose's interpolation for the ue-scale container only: never exported, so the
  # next boot's up.sh does not inherit this count
  run_cmd env UES="$n" "${DC[@]}" "${STACK_ALL_PROFILES[@]}" up -d --no-deps ue-scale \
    >>"$(out_path "$tag-stack.log")" 2>&1 || die "could not start ue-scale with $n UEs; see $tag-stack.log" 1
  if ! wait_for "$ATTACH_TIMEOUT" "$n UE PDU sessions ($tag)" ue_has_session ue-scale "$n"; then
    scale_attach_failed "$n" "$rep" "$tag"
    die "only $(ue_sessions ue-scale) of $n UEs got a PDU session within ${ATTACH_TIMEOUT}s ($tag): the CPU sample is not taken" 1
  fi
  engine_cpu_read "$snaps" last-pdu "${RUN_DIR:-.}/cpu-$tag.csv"
  capture_stop "sbi-$tag"
  # what the overlay negotiated (the validity check needs it), the logs, the teardown
  stack_boot_end
  # an idle window of the measured window's length, measured the same way, stack down
  local idle_s=$(( $(stack_window_s "$snaps") ))
  engine_cpu_read "$snaps" idle-start
  [[ "$DRY_RUN" == 1 ]] || sleep "$idle_s"      # pacing: the idle window itself
  engine_cpu_read "$snaps" idle-end
  if [[ "$DRY_RUN" != 1 ]]; then
    "$PYTHON" -m testbed.hostcpu rows "$snaps" >>"$RUN_DIR/cpu-$tag.csv" \
      || die "host CPU snapshots of $tag unreadable (see $snaps)" 1
    record_file "cpu-$tag.csv" cpu "ues=$n" "rep=$rep"
    record_file "hostcpu-$tag.txt" log "ues=$n" "rep=$rep"
  fi
}

# stack_window_s SNAPSHOTS: whole seconds between boot-start and last-pdu (at least 1); the longest
# of the nodes' windows where the labels name nodes (label@node, testbed/hostcpu.py).
stack_window_s() {
  [[ "$DRY_RUN" == 1 ]] && { echo 1; return 0; }
  awk '{split($1, l, "@")} l[1] == "boot-start" {a[l[2]] = $2} l[1] == "last-pdu" {b[l[2]] = $2}
       END {s = 0; for (n in b) if (n in a && (b[n] - a[n]) / 1e9 > s) s = (b[n] - a[n]) / 1e9
            s = int(s + 0.5); print (s < 1 ? 1 : s)}' "$1"
}

main() {
  docker_driver_begin "$EXPERIMENT" "$@"
  local images=() n rep
  mapfile -t images < <(docker_image_args)
  run_begin "$EXPERIMENT" "${images[@]}"
  for n in $UES; do
    for ((rep = 1; rep <= REPS; rep++)); do
      one_rep "$n" "$rep"
    done
  done
  run_end
}

main "$@"
