# shellcheck shell=bash
# The STATE directory's stack and its lock (docs/stack.md "One run at a time, two stacks at once").
# Sourced by scripts/lib/compose.sh and scripts/lib/common.sh; starts nothing.
#   state_instance        export STATE_DIR (absolute), COMPOSE_PROJECT, BRIDGE_PREFIX, STACK_SLOT
#                         for $STATE (testbed/instance.py: the default .state keeps g5tb and
#                         stack.yaml's addresses; another directory gets its own, side by side)
#   state_lock COMMAND..  hold $STATE_DIR/lock (fd 9) for the rest of this process, or exit 1 with
#                         one line naming the holder (testbed/statelock.py); children inherit it

[[ -n "${_TESTBED_STATE_SH:-}" ]] && return 0
_TESTBED_STATE_SH=1
_STATE_SH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

state_instance() {
  local out line
  out="$(cd "$_STATE_SH_ROOT" && "${PYTHON:-python3}" -m testbed.cli.instance --env)" || return 1
  while IFS= read -r line; do
    [[ "$line" =~ ^([A-Z_]+)= ]] || continue
    eval "$line"          # NAME='value', quoted by shlex.quote
    export "${BASH_REMATCH[1]?}"
  done <<<"$out"
}

state_lock() {
  local dir="${STATE_DIR:?state_instance first}"
  [[ "${TESTBED_LOCK:-}" == "$dir" ]] && return 0       # a parent run holds it for us
  if ! mkdir -p "$dir" 2>/dev/null || ! exec 9>>"$dir/lock"; then
    printf 'error: cannot write the state directory %s; set STATE=<a writable directory>\n' "$dir" >&2
    exit 1
  fi
  if ! flock -n 9; then
    printf 'error: %s\n' "$(cd "$_STATE_SH_ROOT" && "${PYTHON:-python3}" -m testbed.statelock describe "$dir")" >&2
    exit 1
  fi
  (cd "$_STATE_SH_ROOT" && "${PYTHON:-python3}" -m testbed.statelock holder "$dir" "$*" "$$") 9>&- \
    || printf 'warning: could not record the lock holder in %s\n' "$dir" >&2
  export TESTBED_LOCK="$dir"
}
