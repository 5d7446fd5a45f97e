#!/usr/bin/env bash
# suite-root.sh SPEC...: a Debian root file system of another suite (trixie, sid) with a few
# packages, made with debootstrap and kept in a cache outside the repository, for the namespace
# tests and benchmarks that need newer programs than this host's (OpenSSL 3.5, strongSwan 6).
# Prints the root's path (one line per SPEC). Idempotent: a complete root of the same SPEC is
# reused without network.
#
#   scripts/suite-root.sh ipsec/pq-root.env            # -> /var/cache/g5tb/roots/<name>-<hash>
#   scripts/suite-root.sh --path ipsec/pq-root.env     # its path; exit 1 if it is not made yet
#
# SPEC is a KEY=VALUE file (read, never sourced) beside the plug-in that needs it:
#   ROOT_NAME=strongswan-sid               name of the root (the directory's prefix)
#   ROOT_SUITE=sid                         Debian suite
#   ROOT_PACKAGES=strongswan-charon ...    packages (their dependencies come along, no recommends)
#   ROOT_MIN=strongswan-charon:6.0.2 ...   minimum upstream versions, checked after the install
# The directory name carries a hash of the SPEC, so a changed package list is a new root. Cache:
# G5TB_ROOTS (default $G5TB_CACHE/roots, G5TB_CACHE default /var/cache/g5tb); DEBIAN_MIRROR (default http://deb.debian.org/debian).
# Needs root and debootstrap. Exit: 0 ok, 1 failure (named), 2 usage.
set -euo pipefail

CACHE="${G5TB_ROOTS:-${G5TB_CACHE:-/var/cache/g5tb}/roots}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

die() { echo "suite-root: $*" >&2; exit "${2:-1}"; }

# spec_value FILE KEY: the value of KEY in FILE ('' if absent)
spec_value() {
  local k v
  while IFS='=' read -r k v; do
    [[ "$k" == "$2" ]] && { printf '%s\n' "$v"; return 0; }
  done <"$1"
  echo ""
}

# check_min DIR PKG:VERSION...: every package installed in DIR at least at VERSION (upstream part)
check_min() {
  local dir="$1" pair pkg want have
  shift
  for pair in "$@"; do
    pkg="${pair%%:*}" want="${pair#*:}"
    # shellcheck disable=SC2016  # ${Version} is dpkg-query's
    have="$(chroot "$dir" dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null)" \
      || die "$pkg is not installed in $dir"
    have="${have#*:}"
    dpkg --compare-versions "${have%-*}" ge "$want" \
      || die "$pkg in $dir is $have, older than the minimum $want"
  done
}

make_root() {
  local spec="$1" name suite packages min hash dir tmp
  [[ -r "$spec" ]] || die "$spec: no such spec file" 2
  name="$(spec_value "$spec" ROOT_NAME)" suite="$(spec_value "$spec" ROOT_SUITE)"
  packages="$(spec_value "$spec" ROOT_PACKAGES)" min="$(spec_value "$spec" ROOT_MIN)"
  [[ -n "$name" && -n "$suite" && -n "$packages" ]] || die "$spec needs ROOT_NAME, ROOT_SUITE and ROOT_PACKAGES" 2
  hash="$(grep -E '^ROOT_' "$spec" | sha256sum | cut -c1-12)"
  dir="$CACHE/$name-$hash"
  if [[ -f "$dir/.g5tb-root" ]]; then
    echo "$dir"
    return 0
  fi
  if ((PATH_ONLY)); then
    echo "$dir"
    return 1
  fi
  [[ "$(id -u)" == 0 ]] || die "making $dir needs root (debootstrap)"
  command -v debootstrap >/dev/null || die "debootstrap not found: sudo apt-get install --no-install-recommends debootstrap"
  mkdir -p "$CACHE"
  tmp="$(mktemp -d "$CACHE/.$name.XXXXXX")"
  # shellcheck disable=SC2064  # the path is fixed now
  trap "rm -rf '$tmp'" EXIT
  echo "suite-root: debootstrap $suite into $dir ($packages)" >&2
  local t0=$SECONDS
  # shellcheck disable=SC2086  # the package list is words
  debootstrap --variant=minbase --include="$(tr ' ' ',' <<<$packages)" "$suite" "$tmp" "$MIRROR" \
    >"$tmp.log" 2>&1 || die "debootstrap $suite failed: $(tail -n 3 "$tmp.log" | tr '\n' ' ')(log $tmp.log)"
  # shellcheck disable=SC2086
  check_min "$tmp" $min
  chmod 0755 "$tmp"
  # shellcheck disable=SC2016,SC2086  # dpkg-query's fields; the package list is words
  chroot "$tmp" dpkg-query -W -f='${Package}=${Version}\n' $packages >"$tmp/.g5tb-root"
  rm -rf "$tmp/var/cache/apt/archives/"*.deb "$tmp.log"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  trap - EXIT
  echo "suite-root: $dir ready in $((SECONDS - t0)) s" >&2
  echo "$dir"
}

PATH_ONLY=0
main() {
  [[ "${1:-}" != --path ]] || { PATH_ONLY=1; shift; }
  (($#)) || die "usage: suite-root.sh [--path] SPEC..." 2
  local spec rc=0
  for spec in "$@"; do make_root "$spec" || rc=$?; done
  return "$rc"
}

main "$@"
