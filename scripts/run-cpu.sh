#!/usr/bin/env bash
# run-cpu: CPU time per container (cgroup v2 cpu.stat usage_usec) from core boot to the last
# UE's PDU session (paper 4.3), for each UE count in UES, REPS times. Each repetition boots a
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

# cpu_usec CONTAINER_ID: usage_usec of the container's cgroup (host path first, then inside).
cpu_usec() {
  local cid="$1" full f
  full="$(docker inspect -f '{{.Id}}' "$cid")"
  for f in "/sys/fs/cgroup/system.slice/docker-$full.scope/cpu.stat" "/sys/fs/cgroup/docker/$full/cpu.stat"; do
    if [[ -r "$f" ]]; then
      awk '$1 == "usage_usec" {print $2}' "$f"
      return 0
    fi
  done
  docker exec "$cid" cat /sys/fs/cgroup/cpu.stat | awk '$1 == "usage_usec" {print $2}'
}

# host_snapshot FILE LABEL: one /proc/stat aggregate line with the time (testbed/hostcpu.py).
host_snapshot() {
  [[ "$DRY_RUN" == 1 ]] && { _record_command host_snapshot "$2"; return 0; }
  printf '%s %s %s\n' "$2" "$(date +%s%N)" "$(head -n 1 /proc/stat)" >>"$1"
}

# cpu_table: service,cpu_usec for every running container, read at one instant: one `docker
# inspect` for all of them, then every cgroup file in one pass (no per-service round trips
# while the counters keep running).
cpu_table() {
  local ids=() line full svc f usec
  echo "service,cpu_usec"
  mapfile -t ids < <("${DC[@]}" "${STACK_ALL_PROFILES[@]}" ps -q --status running)
  ((${#ids[@]})) || return 0
  while read -r line; do
    full="${line%% *}"
    svc="${line#* }"
    usec=""
    for f in "/sys/fs/cgroup/system.slice/docker-$full.scope/cpu.stat" "/sys/fs/cgroup/docker/$full/cpu.stat"; do
      if [[ -r "$f" ]]; then
        usec="$(awk '$1 == "usage_usec" {print $2}' "$f")"
        break
      fi
    done
    [[ -n "$usec" ]] || usec="$(cpu_usec "$full")" || { warn "no cpu.stat for $svc ($full)"; continue; }
    echo "$svc,$usec"
  done < <(docker inspect -f '{{.Id}} {{index .Config.Labels "com.docker.compose.service"}}' "${ids[@]}")
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
  capture_start "sbi-$tag" "sbi-$tag.pcap" iface=sbi purpose=validation -- \
    dumpcap -q -i "$(bridge_of sbi)" -w "${RUN_DIR:-.}/sbi-$tag.pcap"
  local snaps="${RUN_DIR:-.}/hostcpu-$tag.txt"
  host_snapshot "$snaps" boot-start
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
  if [[ "$DRY_RUN" == 1 ]]; then
    _record_command cat "/sys/fs/cgroup/.../cpu.stat" "(every running container)"
    host_snapshot "$snaps" last-pdu
  else
    host_snapshot "$snaps" last-pdu
    cpu_table >"$RUN_DIR/cpu-$tag.csv"
  fi
  capture_stop "sbi-$tag"
  # what the overlay negotiated (the validity check needs it), the logs, the teardown
  stack_boot_end
  # an idle window of the measured window's length, measured the same way, stack down
  local idle_s=$(( $(stack_window_s "$snaps") ))
  host_snapshot "$snaps" idle-start
  [[ "$DRY_RUN" == 1 ]] || sleep "$idle_s"      # pacing: the idle window itself
  host_snapshot "$snaps" idle-end
  if [[ "$DRY_RUN" != 1 ]]; then
    "$PYTHON" -m testbed.hostcpu rows "$snaps" >>"$RUN_DIR/cpu-$tag.csv" \
      || die "host CPU snapshots of $tag unreadable (see $snaps)" 1
    record_file "cpu-$tag.csv" cpu "ues=$n" "rep=$rep"
    record_file "hostcpu-$tag.txt" log "ues=$n" "rep=$rep"
  fi
}

# stack_window_s SNAPSHOTS: whole seconds between boot-start and last-pdu (at least 1).
stack_window_s() {
  [[ "$DRY_RUN" == 1 ]] && { echo 1; return 0; }
  awk '$1 == "boot-start" {a = $2} $1 == "last-pdu" {b = $2} END {s = int((b - a) / 1e9 + 0.5); print (s < 1 ? 1 : s)}' "$1"
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
