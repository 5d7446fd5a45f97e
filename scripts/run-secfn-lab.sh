#!/usr/bin/env bash
# run-secfn-lab: the UPF security function between network namespaces, no Docker (docs/secfn.md).
# UE -> gNB -(PROFILE's N3 overlay)- UPF (NAT, IDS/IPS engine) -> N6 server; D-ITG TCP/UDP,
# 512 B, Poisson, PROTOCOLS x RATES x RUNS in a seeded random order. The run itself is
# python -m testbed secfn (testbed/secfn/run.py); this driver checks the parameters first and is
# what `make run-secfn-lab`, `make run-overlay SECFN=...` and the campaign call.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

readonly EXPERIMENT=secfn-lab
SMALL=0

usage() {
  cat <<EOF
Usage: $(basename "$0") [--small] [--profile P] [--secfn F] [--ids E] [--rates "100 1000"] [--runs N] ...
       make run-secfn-lab SECFN=<f> IDS=<e> [PROFILE=<n3 profile>] [RATES=...] [RUNS=...] [DURATION=...]
       make run-overlay PROFILE=<n3 profile> SECFN=<f> IDS=<e>         (small defaults, see --small)

Needs root, iptables(-legacy), D-ITG, socat, dumpcap/tshark, the engine (suricata; snort with
SNORT_INSTALL=<install tree>; passthrough: gcc + libnetfilter-queue-dev), and for an overlay
profile strongSwan or wireguard-go. Parameters (flags --name, or the Make/environment variable NAME):
$(tb params "$EXPERIMENT" --format help)
  PROFILE         the N3 profile between gnb and upf (make profiles PLANE=n3) [default: baseline]
  SECFN_UNIT      <function>-<engine> instead of SECFN and IDS (campaigns), e.g. ips-nat-snort
  RESULTS         results root [default: results]
  --small         defaults for a quick look: RATES="100 1000" RUNS=3 DURATION=2 (given values win)
  DRY_RUN=1       print what would run, start nothing

Writes \$RESULTS/<campaign>/secfn-lab/<profile>.<secfn>-<engine>/<run>/ (manifest.json, ditg.csv,
ditg/, engine/, server/, n3/n6/ue captures). Exit: 0 valid run, 1 failure or invalid run,
2 usage error, 130 interrupted.
EOF
}

main() {
  local args=()
  while (($#)); do
    case "$1" in
      --small) SMALL=1; shift ;;
      *) args+=("$1"); shift ;;
    esac
  done
  PROFILE="${PROFILE:-baseline}"
  if [[ -n "${SECFN_UNIT:-}" ]]; then
    local pair
    pair="$("$PYTHON" -c 'import sys; from testbed import secfn
f, e = secfn.parse_unit(sys.argv[1]); print(f, e or "")' "$SECFN_UNIT")" || exit 2
    read -r SECFN IDS <<<"$pair"
    export SECFN IDS
  fi
  if ((SMALL)); then
    RATES="${RATES:-100 1000}"
    RUNS="${RUNS:-3}"
    DURATION="${DURATION:-2}"
  fi
  parse_params "$EXPERIMENT" "${args[@]}"
  load_params "$EXPERIMENT"
  driver_lock                    # one run at a time per STATE; the exec'd run keeps the lock
  local cmd=("$PYTHON" -m testbed secfn "${PARAM_ARGS[@]}" --profile "$PROFILE" --results "$RESULTS" --state "$STATE")
  if [[ "$DRY_RUN" == 1 ]]; then
    printf '+'
    printf ' %q' "${cmd[@]}"
    printf '\n'
    return 0
  fi
  require_root
  exec "${cmd[@]}"
}

main "$@"
