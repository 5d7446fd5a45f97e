#!/usr/bin/env bash
# The `*-git` stages of images/*/Dockerfile: fetch one pinned upstream source into DEST and prove
# it is the pinned commit, so that a moved tag fails the build instead of changing the image.
#
#   clone-pinned.sh REPO REF COMMIT DEST PIN
#
# REF is a release tag (a shallow clone that keeps the tag, for `git describe`), or COMMIT itself
# (a shallow fetch of that commit: nothing upstream can move it). PIN says what to update when the
# tag moved, e.g. "OPEN5GS_COMMIT in images/open5gs/Dockerfile". git and the CA certificates are
# installed from the stage's Debian suite when the stage lacks them.
set -euo pipefail

if [[ $# -ne 5 ]]; then
  echo "usage: clone-pinned.sh REPO REF COMMIT DEST PIN" >&2
  exit 2
fi
repo=$1 ref=$2 commit=$3 dest=$4 pin=$5

if ! command -v git >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends ca-certificates git
  rm -rf /var/lib/apt/lists/*
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
  echo "$repo $ref resolved to $got, expected $commit: the tag moved; check upstream and update $pin" >&2
  exit 1
fi
echo "$repo $ref: $got"
