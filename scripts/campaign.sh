#!/usr/bin/env bash
# campaign: every profile of an experiment's plane (the baseline included) x BOOTS blocks,
# in a seeded shuffled order, one run directory per slot. Resumable: re-running skips slots that
# have a complete, valid run and redoes the others in a new run directory (old ones are kept).
# Progress with ETA on the terminal. Docs: docs/experiments.md.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

EXPERIMENT=""
CAMPAIGN="${CAMPAIGN:-}"
BLOCKS="${BOOTS:-}"     # campaign blocks = boots per profile (REPS belongs to the drivers)
SEED="${SEED:-}"
PROFILES="${PROFILES:-}"
CURRENT_PID=""

usage() {
  cat <<EOF
Usage: $(basename "$0") EXPERIMENT [--campaign NAME] [--reps N] [--seed S] [--profiles "a b"] [--dry-run]
       make campaign-n3 | campaign-sbi | campaign-overlay [CAMPAIGN=...] [BOOTS=...] [SEED=...] [PROFILES=...]

EXPERIMENT: n3, sbi, cpu, throughput, overlay, secfn (Docker) or secfn-lab (namespaces).
For secfn and secfn-lab a slot is one SECFN x IDS unit (<function>-<engine>, docs/secfn.md)
behind PROFILE's N3 overlay, and PROFILES lists units. Every other parameter of the experiment
(SIZES, SETS, PINGS, ITERATIONS, ...) is taken from the environment / Make variables and passed
to each run unchanged (see scripts/run-<experiment>.sh --help).

  CAMPAIGN   results/<campaign>/... [default: main]; the same name resumes
  BOOTS      blocks: every profile once per block, in a seeded random order per block, each run
             one independent boot [default: the experiment's BOOTS, testbed/runparams.py]
  SEED       seed of the shuffled order, recorded in <campaign>/plans/ [default: 1]
  PROFILES   only these profiles [default: every profile of the plane]; secfn*: these units
             [default: every one: none-none nat-none ids-nat-suricata ... ips-nat-passthrough]
  DRY_RUN=1  print the plan (with each slot's status) and its ETA, and start nothing
  ENGINE=k8s up to SHARDS stacks at once on a cluster, one per node group (SHARD_GROUPS,
             SHARD_LABEL; python -m testbed campaign-k8s --help, docs/kubernetes.md): n3, sbi, throughput, cpu

Exit: 0 all slots done, 1 some run failed or was invalid, 2 usage error, 130 interrupted.
EOF
}

hms() {
  local s="$1"
  printf '%02d:%02d:%02d' $((s / 3600)) $((s % 3600 / 60)) $((s % 60))
}

on_campaign_signal() {
  trap '' INT TERM
  if [[ -n "$CURRENT_PID" ]]; then
    kill -TERM "$CURRENT_PID" 2>/dev/null || true
    wait "$CURRENT_PID" 2>/dev/null || true
  fi
  log "campaign interrupted; the current run was marked interrupted. Resume with the same command."
  exit 130
}

main() {
  while (($#)); do
    case "$1" in
      -h | --help) usage; exit 0 ;;
      --campaign) CAMPAIGN="${2:?--campaign needs a value}"; shift 2 ;;
      --reps|--boots) BLOCKS="${2:?--boots needs a value}"; shift 2 ;;
      --seed) SEED="${2:?--seed needs a value}"; shift 2 ;;
      --profiles) PROFILES="${2:?--profiles needs a value}"; shift 2 ;;
      --dry-run) DRY_RUN=1; shift ;;
      -*) die "unknown option $1 (see --help)" 2 ;;
      *)
        [[ -z "$EXPERIMENT" ]] || die "one experiment at a time (got $EXPERIMENT and $1)" 2
        EXPERIMENT="$1"; shift ;;
    esac
  done
  [[ -n "$EXPERIMENT" ]] || { usage >&2; exit 2; }
  case "$EXPERIMENT" in
    n3 | sbi | cpu | throughput | overlay | secfn | secfn-lab | ran-procedures | f1u) ;;
    *) die "unknown experiment '$EXPERIMENT'; valid: n3 sbi cpu throughput overlay secfn secfn-lab ran-procedures f1u" 2 ;;
  esac
  CAMPAIGN="${CAMPAIGN:-main}"
  [[ -n "$BLOCKS" ]] || BLOCKS="$(tb params "$EXPERIMENT" --format json | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["boots"])')"
  SEED="${SEED:-1}"
  [[ "$BLOCKS" =~ ^[0-9]+$ && "$BLOCKS" -ge 1 ]] || die "BOOTS='$BLOCKS': must be a whole number >= 1" 2
  [[ "$SEED" =~ ^[0-9]+$ ]] || die "SEED='$SEED': must be a whole number" 2
  local driver="$TESTBED_ROOT/scripts/run-$EXPERIMENT.sh"
  [[ -x "$driver" ]] || die "no driver for $EXPERIMENT ($driver)" 1
  PROFILE="(campaign $CAMPAIGN $EXPERIMENT)" driver_lock      # its drivers inherit the lock

  # the experiment's own parameters, from the environment, checked once for the whole campaign
  local names=() name params=()
  mapfile -t names < <(tb params "$EXPERIMENT" --format help | awk '{print $1}')
  for name in "${names[@]}"; do
    case "$name" in CAMPAIGN | SLOT | BOOT | BOOTS) continue ;; esac
    params+=("$name=${!name:-}")
  done

  local plan_args=("$EXPERIMENT" "${params[@]}" --results "$RESULTS" --campaign "$CAMPAIGN"
    --reps "$BLOCKS" --seed "$SEED" --profiles "$PROFILES")
  if [[ "${ENGINE:-compose}" == k8s ]]; then
    # up to SHARDS stacks at once, one per node group of the cluster (docs/kubernetes.md)
    [[ "$DRY_RUN" != 1 ]] || plan_args+=(--dry-run)
    local rc=0
    tb campaign-k8s "${plan_args[@]}" || rc=$?
    exit "$rc"
  fi
  local plan
  if [[ "$DRY_RUN" == 1 ]]; then
    plan="$(tb campaign "${plan_args[@]}")" || exit 2
    printf 'campaign %s, experiment %s, seed %s, %s repetition(s); plan (slot profile rep status):\n' \
      "$CAMPAIGN" "$EXPERIMENT" "$SEED" "$BLOCKS"
    printf '%s\n' "$plan"
    printf '%s slots, %s to run\n' "$(grep -c . <<<"$plan")" "$(grep -cvE $'\tdone$' <<<"$plan" || true)"
    tb campaign "${plan_args[@]}" --eta || exit 2
    exit 0
  fi
  plan="$(tb campaign "${plan_args[@]}" --record --mark-stale)" || exit 2

  trap on_campaign_signal INT TERM
  local total todo=0 k=0 failed=0 started=$SECONDS done_runs=0 line slot profile rep status rc
  total="$(grep -c . <<<"$plan")"
  todo="$(grep -cvE $'\tdone$' <<<"$plan" || true)"
  log "campaign $CAMPAIGN: $EXPERIMENT, $total slots, $((total - todo)) already done, $todo to run (seed $SEED)"
  while IFS=$'\t' read -r slot profile rep status; do
    [[ -n "$slot" ]] || continue
    if [[ "$status" == "done" ]]; then
      continue
    fi
    k=$((k + 1))
    local eta="--:--:--"
    if ((done_runs > 0)); then
      eta="$(hms $(((SECONDS - started) * (todo - k + 1) / done_runs)))"
    fi
    printf '\n=== [%d/%d] %s: profile %s, repetition %s (%s) | elapsed %s | ETA %s ===\n' \
      "$k" "$todo" "$CAMPAIGN" "$profile" "$rep" "$status" "$(hms $((SECONDS - started)))" "$eta" >&2
    rc=0
    local unit=()
    if [[ "$profile" == *.* ]]; then      # secfn*: <n3 profile>.<function>-<engine>
      unit=(SECFN_UNIT="${profile#*.}")
      profile="${profile%%.*}"
    fi
    env PROFILE="$profile" "${unit[@]}" CAMPAIGN="$CAMPAIGN" SLOT="$slot" BOOT="$rep" BOOTS="$BLOCKS" RESULTS="$RESULTS" "$driver" </dev/null &
    CURRENT_PID=$!
    wait "$CURRENT_PID" || rc=$?
    CURRENT_PID=""
    done_runs=$((done_runs + 1))
    case "$rc" in
      0) ;;
      130) log "run $slot interrupted; resume with the same command"; exit 130 ;;
      2) die "run $slot rejected its parameters (exit 2); fix them and re-run" 2 ;;
      *) failed=$((failed + 1)); warn "run $slot failed or is invalid (exit $rc); the campaign goes on, re-run to redo it" ;;
    esac
  done <<<"$plan"
  log "campaign $CAMPAIGN ($EXPERIMENT) finished in $(hms $((SECONDS - started))): $done_runs run(s), $failed failed or invalid"
  ((failed == 0)) || exit 1
}

main "$@"
