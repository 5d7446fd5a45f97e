#!/usr/bin/env bash
# rerun.sh --run RUN_DIR | --spec FILE: run one run from its specification (testbed/runspec.py).
#   --run RUN_DIR  repeat a run from the spec its manifest stores (make rerun RUN=...): a NEW run
#                  directory whose manifest names the original (rerun_of); the original is untouched
#   --spec FILE    the run a spec file describes (make run SPEC=...; `make spec` prints one)
# The spec is validated and completed first (one line and exit 2 when it is wrong, nothing
# started); the experiment's own driver (scripts/run-<experiment>.sh) then reads it
# (RUN_SPEC_FILE, scripts/lib/driver.sh load_params) and stores it in the new manifest.
# One spec is one run: the BOOT it names of its BOOTS (make run-<experiment> runs them all).
# Docs: docs/manifest.md ("The run specification"). Exit: the driver's (0 valid run, 1 failure
# or invalid run, 2 usage error or bad spec, 130 interrupted).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

usage_error() {
  echo "error: rerun.sh: $1 (usage: make rerun RUN=<run dir> | make run SPEC=<spec file>)" >&2
  exit 2
}

main() {
  local mode="${1:-}" source="${2:-}" spec experiment driver rc=0 rerun_of=""
  case "$mode" in
    --run) [[ -n "$source" ]] || usage_error "RUN is empty: name a run directory (results/.../<run>)"
           [[ -f "$source/manifest.json" ]] || usage_error "RUN=$source: no manifest.json there (not a run directory)"
           rerun_of="$(cd "$source" && pwd)" ;;
    --spec) [[ -n "$source" ]] || usage_error "SPEC is empty: name a spec file (make spec prints one)" ;;
    *) usage_error "say --run RUN_DIR or --spec FILE" ;;
  esac
  spec="$(mktemp "${TMPDIR:-/tmp}/testbed-spec.XXXXXX")"
  # the driver is a child: the completed spec outlives it, then goes (the manifest keeps it)
  trap 'rm -f "$spec"' EXIT
  "$PYTHON" -m testbed spec "${mode/--spec/--file}" "$source" --format json >"$spec" || exit 2
  experiment="$("$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["experiment"])' <"$spec")"
  driver="$ROOT/scripts/run-$experiment.sh"
  [[ -f "$driver" ]] || usage_error "experiment $experiment has no driver ($driver)"
  echo "rerun.sh: $experiment from ${rerun_of:-$source} -> scripts/run-$experiment.sh" >&2
  RUN_SPEC_FILE="$spec" RERUN_OF="$rerun_of" bash "$driver" || rc=$?
  exit "$rc"
}

main "$@"
