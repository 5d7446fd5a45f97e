#!/usr/bin/env bash
# The last step of the runtime stage of every compiled image (images/{open5gs,ueransim,snort,oai}):
# write what the image holds to /etc/testbed-image.txt, which testbed/images.py reads out of the
# image into every run manifest, and refuse an install tree that lacks a program or a library.
#
#   record-image.sh IMAGE VERSION SOURCE PREFIX PACKAGES FILE...
#
# IMAGE     the image's name (open5gs)
# VERSION   its IMAGE_VERSION, SOURCE its <IMAGE>_SOURCE (upstream, local:..., prebuilt:...)
# PACKAGES  the Debian packages whose versions are recorded, space separated, as one argument
# PREFIX    the install tree: its share/testbed/build-info.txt (what the build stage recorded:
#           upstream version and commit, compiler ...) is appended
# FILE      the programs and modules that must be there, each with every library it links found
# CONTENTS (default /etc/testbed-image.txt) exists for tests/images/test_image_steps.py only.
set -euo pipefail

if [[ $# -lt 6 ]]; then
  echo "usage: record-image.sh IMAGE VERSION SOURCE PREFIX PACKAGES FILE..." >&2
  exit 2
fi
image=$1 version=$2 source=$3 prefix=$4 packages=$5
shift 5
out="${CONTENTS:-/etc/testbed-image.txt}"

{
  echo "image=$image"
  echo "image_version=$version"
  echo "${image}_source=$source"
  echo "debian=$(cat /etc/debian_version)"
  for p in $packages; do
    echo "$p=$(dpkg-query -W -f='${Version}' "$p")"
  done
  if [[ -f "$prefix/share/testbed/build-info.txt" ]]; then
    cat "$prefix/share/testbed/build-info.txt"
  fi
} > "$out"

for f in "$@"; do
  [[ -e "$f" ]] || { echo "$f is missing from the install tree (docs/images.md)" >&2; exit 1; }
done
missing="$(ldd "$@" | grep 'not found' | sort -u || true)"
if [[ -n "$missing" ]]; then
  echo "runtime libraries missing: $missing" >&2
  exit 1
fi
cat "$out"
