#!/usr/bin/env bash
# boots.sh EXPERIMENT DRIVER [ARGS...]: run DRIVER once per independent boot. BOOTS (default in
# testbed/runparams.py) boots, each a run directory of its own with BOOT=i in its manifest, so the
# analysis computes its intervals over boots (docs/methodology.md). Stops at the first failure.
set -euo pipefail

main() {
  local experiment="${1:?usage: boots.sh EXPERIMENT DRIVER [ARGS...]}" driver="${2:?usage: boots.sh EXPERIMENT DRIVER [ARGS...]}"
  shift 2
  local boots i rc params
  params="$("${PYTHON:-python3}" -m testbed params "$experiment" --from-env --format json)" || exit 2
  boots="$("${PYTHON:-python3}" -c 'import json, sys; print(json.load(sys.stdin)["boots"])' <<<"$params")"
  for ((i = 1; i <= boots; i++)); do
    ((boots == 1)) || echo "boots.sh: $experiment boot $i of $boots" >&2
    rc=0
    BOOT="$i" BOOTS="$boots" bash "$driver" "$@" || rc=$?
    ((rc == 0)) || exit "$rc"
  done
}

main "$@"
