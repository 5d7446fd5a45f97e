# shellcheck shell=bash
# Image names for scripts/build.sh and scripts/doctor.sh: images/defaults.env is their one home;
# a variable already set in the environment (or by make) wins. Source it; it starts nothing.

# load_image_defaults ROOT: set every NAME=value of ROOT/images/defaults.env that is not set yet.
load_image_defaults() {
  local file="$1/images/defaults.env" line name value
  [[ -r "$file" ]] || { printf 'error: %s is missing (it holds the default image names)\n' "$file" >&2; return 1; }
  while IFS= read -r line; do
    [[ "$line" =~ ^([A-Z0-9_]+)=(.*)$ ]] || continue
    name="${BASH_REMATCH[1]}"
    value="${BASH_REMATCH[2]}"
    [[ -n "${!name:-}" ]] || printf -v "$name" '%s' "$value"
    export "${name?}"
  done <"$file"
}
