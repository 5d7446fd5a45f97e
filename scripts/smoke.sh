#!/usr/bin/env bash
# Smoke test of the 5G stack: up, UE 1 registers and gets its PDU session, 5 pings from the
# UE through the UPF to the Docker host (n6 gateway) succeed, down. Prints PASS or FAIL.
# Documentation: docs/stack.md.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib/compose.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/compose.sh"

readonly PINGS=5

usage() {
  cat <<USAGE
usage: smoke.sh [--profile ID] [--plane PLANE] [--keep]

  --keep   leave the stack up afterwards (default: take it down)
Exit: 0 PASS, 1 FAIL, 2 usage error, 130 interrupted.
USAGE
}

KEEP=0
UP_ARGS=()
RESULT="FAIL"
RENDER=""

finish() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n "$RENDER" && "$KEEP" == 0 ]]; then
    stack_down "$RENDER" >/dev/null 2>&1 || stack_log "teardown failed: run \`make down\`"
    rm -f "$(stack_current_file)"
  fi
  if ((rc == 0)); then
    echo "SMOKE PASS: UE 1 registered, PDU session up, $PINGS/$PINGS pings through the UPF answered"
  else
    ((rc == 130)) && RESULT="INTERRUPTED"
    echo "SMOKE $RESULT (exit $rc): see the messages above"
  fi
  exit "$rc"
}

main() {
  while (($#)); do
    case "$1" in
      --profile|--plane) UP_ARGS+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
      --keep) KEEP=1; shift ;;
      -h|--help) usage; exit 0 ;;
      *) echo "smoke.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
  done
  # the user's input first (an unknown profile lists the valid ones), the host after it
  local profile="${PROFILE:-baseline}" plane="${PLANE:-}" i
  for ((i = 0; i < ${#UP_ARGS[@]}; i += 2)); do
    case "${UP_ARGS[i]}" in --profile) profile="${UP_ARGS[i + 1]}" ;; --plane) plane="${UP_ARGS[i + 1]}" ;; esac
  done
  (cd "$STACK_REPO" && "$PYTHON" -m testbed check-profile "$profile" ${plane:+--plane "$plane"} >/dev/null) || exit 2
  state_lock "scripts/smoke.sh" "${UP_ARGS[@]}"
  trap finish EXIT
  trap 'exit 130' INT TERM
  "$(dirname "${BASH_SOURCE[0]}")/up.sh" "${UP_ARGS[@]}" || stack_die "bring-up failed"
  RENDER="$(<"$(stack_current_file)")"
  local target cid
  target="$(stack_env "$RENDER" PING_TARGET)"
  cid="$(stack_container "$RENDER" ue1)"
  [[ -n "$cid" ]] || stack_die "no ue1 container after bring-up"
  stack_log "pinging $target from UE 1 (uesimtun0) through the UPF, $PINGS times"
  # ping from a tools container inside UE 1's network namespace (the UERANSIM image need not have ping),
  # holding only NET_RAW for ping's raw socket (least privilege, as the stack: docs/stack.md)
  local out
  out="$(docker run --rm --network "container:$cid" --label testbed.role=smoke \
    --cap-drop ALL --cap-add NET_RAW --security-opt no-new-privileges:true --read-only "$TOOLS_IMAGE" \
    ping -n -c "$PINGS" -W 2 -I uesimtun0 "$target" 2>&1)" || true
  printf '%s\n' "$out"
  grep -q " $PINGS received" <<<"$out" \
    || stack_die "not all $PINGS pings from UE 1 to $target were answered (UPF NAT/forwarding? \`make logs SERVICE=upf\`)"
  RESULT="PASS"
}

main "$@"
