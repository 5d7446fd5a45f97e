#!/usr/bin/env bash
# The source step of every compiled image (images/*/Dockerfile, `*-build` stages): put the pinned
# upstream source NAME into DEST, unless a named build context already put a tree there.
#
#   clone-pinned.sh PINS NAME DEST
#
# PINS is the image's sources.env (e.g. images/open5gs/sources.env): NAME_REPO, NAME_COMMIT and, for a
# release, NAME_VERSION (its tag). The Dockerfile copies the `<name>-src` stage to DEST first: that
# stage is empty unless `--build-context <name>-src=/path/to/tree` replaced it, so a non-empty DEST is
# the user's tree, used as it is. Otherwise the tag is cloned shallow (keeping it, for `git
# describe`) or, without a tag, the commit is fetched by its hash; either way the result must be
# NAME_COMMIT, so that a moved tag fails the build instead of changing the image. git and the CA
# certificates are installed (images/lib/apt-install.sh, beside this script) when the stage lacks them.
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: clone-pinned.sh PINS NAME DEST" >&2
  exit 2
fi
pins=$1 name=$2 dest=$3

# pin KEY: the value of NAME_KEY in PINS (plain KEY=VALUE lines; the file is read, never sourced)
pin() {
  local key="${name}_$1" k v
  while IFS='=' read -r k v; do
    [[ "$k" == "$key" ]] && { printf '%s\n' "$v"; return 0; }
  done < "$pins"
  return 1
}

[[ -r "$pins" ]] || { echo "clone-pinned.sh: $pins is missing or unreadable" >&2; exit 2; }
if [[ -d "$dest" && -n "$(ls -A "$dest")" ]]; then
  echo "$name: $dest holds the tree given as a named build context; used as it is (no clone)"
  exit 0
fi
if ! repo="$(pin REPO)" || ! commit="$(pin COMMIT)"; then
  echo "clone-pinned.sh: $pins lacks ${name}_REPO or ${name}_COMMIT" >&2
  exit 2
fi
ref="$(pin VERSION)" || ref=$commit

if ! command -v git >/dev/null || [[ ! -e /etc/ssl/certs/ca-certificates.crt ]]; then
  bash "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" ca-certificates git
fi

if [[ "$ref" == "$commit" ]]; then
  git init -q "$dest"
  git -C "$dest" fetch -q --depth 1 "$repo" "$commit"
  git -C "$dest" checkout -q FETCH_HEAD
else
  git clone --depth 1 --branch "$ref" "$repo" "$dest"
fi
got="$(git -C "$dest" rev-parse HEAD)"
if [[ "$got" != "$commit" ]]; then
  echo "$repo $ref resolved to $got, expected $commit: the tag moved; check upstream and update ${name}_COMMIT in $pins" >&2
  exit 1
fi
echo "$repo $ref: $got"
