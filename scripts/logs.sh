#!/usr/bin/env bash
# Show the logs of the running 5G stack (all services or the ones named).
# Documentation: docs/stack.md.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib/compose.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/compose.sh"

usage() {
  cat <<USAGE
usage: logs.sh [--follow] [--tail N] [SERVICE...]

Logs of the stack recorded by the last \`make up\` (\$STATE/stack.current).
USAGE
}

main() {
  local args=(--no-color) services=()
  while (($#)); do
    case "$1" in
      -f|--follow) args+=(--follow); shift ;;
      --tail) args+=(--tail "${2:?--tail needs a value}"); shift 2 ;;
      -h|--help) usage; exit 0 ;;
      -*) echo "logs.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
      *) services+=("$1"); shift ;;
    esac
  done
  trap 'exit 130' INT TERM
  # the user's input first: services are those of the compose files (no Docker needed to know)
  local known s
  known="$(cd "$STACK_REPO" && "$PYTHON" -c 'import sys, yaml
names = set()
for f in sys.argv[1:]:
    names |= set((yaml.safe_load(open(f)) or {}).get("services") or {})
print(" ".join(sorted(names)))' compose/*.yaml)" || stack_die "cannot read the service names of compose/*.yaml"
  for s in "${services[@]}"; do
    [[ " $known " == *" $s "* ]] || { printf 'error: no service %s; services: %s\n' "$s" "$known" >&2; exit 2; }
  done
  stack_require_compose
  local cur
  cur="$(stack_current_file)"
  [[ -f "$cur" ]] || stack_die "no stack recorded in $cur: start one with \`make up\`"
  stack_compose "$(<"$cur")" "${STACK_ALL_PROFILES[@]}" logs "${args[@]}" "${services[@]}"
}

main "$@"
