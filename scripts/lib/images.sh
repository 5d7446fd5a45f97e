# shellcheck shell=bash
# Image names for scripts/build.sh, scripts/doctor.sh and the stack (scripts/lib/compose.sh).
# images/defaults.env is their one home; the images built here carry the content hash of their
# build inputs in their tag (testbed/images.py), so a changed Dockerfile or patch is a new name.
# A variable already set in the environment (or by make) wins and is used as it is.
# Source it; it starts nothing.

# load_image_defaults ROOT: set and export every *_IMAGE (python3 -m testbed.cli.images env).
load_image_defaults() {
  local root="$1" lines
  [[ -r "$root/images/defaults.env" ]] \
    || { printf 'error: %s is missing (it holds the default image names)\n' "$root/images/defaults.env" >&2; return 1; }
  lines="$(cd "$root" && "${PYTHON:-python3}" -m testbed.cli.images env)" \
    || { printf 'error: cannot work out the image names (python3 -m testbed.cli.images env failed, see above)\n' >&2; return 1; }
  local line name
  while IFS= read -r line; do
    [[ "$line" =~ ^([A-Z0-9_]+_IMAGE)= ]] || continue
    name="${BASH_REMATCH[1]}"
    eval "$line"          # one NAME='value' assignment, quoted by shlex.quote
    export "${name?}"
  done <<<"$lines"
}

# images_to_build ROOT NAME...: the images among NAME... that must be built before the stack
# runs (no image for the current build inputs); warns about explicitly named images built from
# other inputs. Prints one name a line.
images_to_build() {
  local root="$1" name action reason out
  shift
  out="$(cd "$root" && "${PYTHON:-python3}" -m testbed.cli.images plan "$@")" || return 1
  while IFS=$'\t' read -r name action _ reason; do
    case "$action" in
      build) printf '%s\n' "$name" ;;
      stale) printf 'warning: %s\n' "$reason" >&2 ;;
    esac
  done <<<"$out"
}
