#!/usr/bin/env bash
# The patch step of images/open5gs and images/oai (`*-build` stages): every DIR/*.patch, in sorted
# (C locale) order, applied to the source tree SRC without fuzz; the sha256 of each applied patch
# goes to RECORD (the image's share/testbed/patches.txt). Run from the root of the build context,
# so that DIR and the recorded names are repository paths (patches/open5gs/0001-....patch).
#
#   apply-patches.sh DIR SRC RECORD APPLY
#
# APPLY is the Dockerfile's APPLY_PATCHES: 1 applies, anything else skips (a local tree that
# already carries the patches). An absent or empty DIR is fine: nothing to apply.
set -euo pipefail

if [[ $# -ne 4 ]]; then
  echo "usage: apply-patches.sh DIR SRC RECORD APPLY" >&2
  exit 2
fi
dir=$1 src=$2 record=$3 apply=$4

mkdir -p "$(dirname "$record")"
: > "$record"
if [[ "$apply" == 1 && -d "$dir" ]]; then
  while IFS= read -r p; do
    echo "applying $p"
    patch -d "$src" -p1 --batch --forward --fuzz=0 --no-backup-if-mismatch < "$p" \
      || { echo "patch $p does not apply to the source in $src; rebase it or build with APPLY_PATCHES=0" >&2; exit 1; }
    sha256sum "$p" >> "$record"
  done < <(find "$dir" -maxdepth 1 -type f -name '*.patch' | LC_ALL=C sort)
fi
echo "patches applied: $(wc -l < "$record")"
