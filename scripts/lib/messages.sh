# shellcheck shell=bash
# Messages and small helpers: log/warn/loud/die, the testbed's Python (tb, tbm), stack values,
# root and tools, wait_for.
# Part of scripts/lib/common.sh, which sources it (source that, not this).

log() { printf '%s %s: %s\n' "$(date -u +%H:%M:%S)" "$SCRIPT_NAME" "$*" >&2; }
warn() { log "WARNING: $*"; }

# A banner nobody can miss (invalid runs, userspace datapath).
loud() {
  local bar
  bar="$(printf '%*s' 78 '' | tr ' ' '!')"
  printf '%s\n%s: %s\n%s\n' "$bar" "$SCRIPT_NAME" "$*" "$bar" >&2
}

# die MESSAGE [CODE]: what failed, for which object, what to do next.
die() {
  local code="${2:-1}"
  log "error: $1"
  RUN_REASON="${RUN_REASON:-$1}"
  exit "$code"
}

# The testbed's Python CLI, from the repository root (so `testbed` imports without installing).
tb() {
  "$PYTHON" -m testbed "$@"
}

# `python -m testbed manifest ...` without loading every other command (called often per run)
tbm() {
  "$PYTHON" -m testbed.cli.manifest "$@"
}

# stack_address NODE NETWORK: the node's address from nf-configs/stack.yaml (never typed twice).
stack_address() {
  "$PYTHON" -c 'import sys; from testbed import stack; print(stack.address(sys.argv[1], sys.argv[2]))' "$1" "$2" \
    || die "no address for $1 on network $2 in nf-configs/stack.yaml" 1
}

# out_path REL: RUN_DIR/REL, or /dev/null in a dry run (for redirections).
out_path() {
  if [[ "$DRY_RUN" == 1 || -z "$RUN_DIR" ]]; then
    echo /dev/null
  else
    echo "$RUN_DIR/$1"
  fi
}

# render_hashes DIR REL: sha256 of every rendered config under DIR into RUN_DIR/REL (a log): which
# configuration ran, without copying secrets into the results.
render_hashes() {
  local dir="$1" rel="$2"
  [[ "$DRY_RUN" == 1 || -z "$RUN_DIR" || ! -d "$dir" ]] && return 0
  (cd "$dir" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum) >"$RUN_DIR/$rel" 2>/dev/null \
    || warn "could not hash the rendered configs in $dir"
}

# stack_value DOTTED.KEY: a value of nf-configs/stack.yaml (e.g. networks.n6.gateway).
stack_value() {
  "$PYTHON" -c 'import sys; from testbed import stack
v = stack.load()
for k in sys.argv[1].split("."):
    v = v[k]
print(v)' "$1" || die "nf-configs/stack.yaml has no $1" 1
}

# ping_rc_ok RC FILE: ping exits 1 when replies were lost (losses are data: sequence gaps), 2 on
# errors. Accept 0 and 1 as long as at least one reply came back.
ping_rc_ok() {
  local rc="$1" file="$2"
  ((rc <= 1)) && grep -q ' bytes from ' "$file" 2>/dev/null
}

require_root() {
  [[ "$(id -u)" == 0 ]] || die "$SCRIPT_NAME needs root (network namespaces, captures): run it with sudo" 1
}

# require_tools TOOL...: each on PATH, or in an sbin directory (added to PATH: a plain user's PATH
# often lacks /usr/sbin, where swanctl, nft and ip live), or die naming the missing ones.
require_tools() {
  local missing=() t d
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 && continue
    for d in /usr/local/sbin /usr/sbin /sbin; do
      if [[ -x "$d/$t" && ":$PATH:" != *":$d:"* ]]; then
        PATH="$PATH:$d"
        break
      fi
    done
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  ((${#missing[@]} == 0)) || die "missing programs: ${missing[*]}: \`sudo make host-tools\` installs them (\`make doctor\` says what each is for)" 1
}

# wait_for DEADLINE_S WHAT CMD...: poll CMD (quietly) until it succeeds; fail naming WHAT.
wait_for() {
  local deadline_s="$1" what="$2"
  shift 2
  if [[ "$DRY_RUN" == 1 ]]; then
    printf '+ wait_for %ss %s: %s\n' "$deadline_s" "${what@Q}" "$(shell_join "$@")" >&3
    return 0
  fi
  local end=$((SECONDS + deadline_s))
  while true; do
    if "$@" >/dev/null 2>&1; then
      return 0
    fi
    if ((SECONDS >= end)); then
      log "error: $what: not ready after ${deadline_s}s (probe: $*)"
      return 1
    fi
    sleep 0.2
  done
}
