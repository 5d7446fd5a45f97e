#!/usr/bin/env bash
# Every package install of images/*/Dockerfile: Debian packages without their recommends, from the
# stage's own suite or, with -t, from another suite of the same mirror (bookworm-backports: a newer
# libcurl, Go, Suricata). Packages come by suite, never by an exact version (a point release moves;
# docs/images.md): a Dockerfile that needs a floor checks it after the install.
#
#   apt-install.sh [-t SUITE] PKG...
#
# A failed update or install is retried once after a pause (a mirror that is being synced or a
# dropped connection), and says so; the package lists are removed afterwards, as the image does not
# need them. DEBIAN_MIRROR (the Dockerfile's ARG, default deb.debian.org) is where SUITE comes from.
# APT_SOURCES, APT_LISTS and APT_RETRY_PAUSE exist for tests/images/test_image_steps.py only.
set -euo pipefail

sources_dir="${APT_SOURCES:-/etc/apt/sources.list.d}"
lists_dir="${APT_LISTS:-/var/lib/apt/lists}"
pause="${APT_RETRY_PAUSE:-10}"

usage() {
  echo "usage: apt-install.sh [-t SUITE] PKG..." >&2
  exit 2
}

suite=""
if [[ "${1:-}" == -t ]]; then
  [[ $# -ge 2 ]] || usage
  suite=$2
  shift 2
fi
(($#)) || usage
export DEBIAN_FRONTEND=noninteractive
opts=(-y --no-install-recommends)

if [[ -n "$suite" ]]; then
  printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" "$suite" > "$sources_dir/$suite.sources"
  opts+=(-t "$suite")
fi

attempt() {
  apt-get update && apt-get install "${opts[@]}" "$@"
}

if ! attempt "$@"; then
  echo "apt-install.sh: installing $* failed; retrying once in ${pause} s" >&2
  sleep "$pause"
  attempt "$@" || { echo "apt-install.sh: installing $* failed twice; is the Debian mirror reachable from the build?" >&2; exit 1; }
fi
rm -rf "${lists_dir:?}"/*
