#!/usr/bin/env bash
# Stop and remove the 5G stack (containers, networks, volumes) that `make up` started.
# Documentation: docs/stack.md.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib/compose.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/compose.sh"

usage() {
  cat <<USAGE
usage: down.sh [--profile ID] [--plane PLANE]

Takes down the stack recorded in \$STATE/stack.current (the last \`make up\`); without a
record, the stack of --profile/--plane (default \$PROFILE, \$PLANE). Idempotent.
USAGE
}

main() {
  local profile="${PROFILE:-baseline}" plane="${PLANE:-}"
  while (($#)); do
    case "$1" in
      --profile) profile="${2:?--profile needs a value}"; shift 2 ;;
      --plane) plane="${2:?--plane needs a value}"; shift 2 ;;
      -h|--help) usage; exit 0 ;;
      *) echo "down.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
  done
  trap 'exit 130' INT TERM
  # the user's input first (an unknown profile lists the valid ones), the host after it
  (cd "$STACK_REPO" && "$PYTHON" -m testbed check-profile "$profile" ${plane:+--plane "$plane"} >/dev/null) || exit 2
  state_lock "scripts/down.sh" "$@"
  stack_require_compose
  local cur dir=""
  cur="$(stack_current_file)"
  [[ -f "$cur" ]] && dir="$(<"$cur")"
  if [[ -z "$dir" || ! -d "$dir" ]]; then
    dir="$(stack_render "$profile" "$plane")"
  fi
  stack_log "taking the stack down ($dir)"
  stack_down "$dir" || stack_die "\`docker compose down\` failed for $dir; inspect with \`docker ps -a --filter label=testbed.profile\`"
  rm -f "$cur"
  stack_log "stack down"
}

main "$@"
