#!/usr/bin/env bash
# Build the patched Open5GS NFs the namespace tests run (patches/open5gs-host.env NFS) on this
# host, outside the repository: copy a release tree, apply patches/open5gs/*.patch in order,
# meson setup (no downloads), ninja the NFs, then build-info.txt (the commits of the tree and its
# subprojects, the patches' digest), written last. By default into G5TB_CACHE
# (/var/cache/g5tb/open5gs-host-<version>-<patches>/), like the post-quantum roots: the tests and
# CI find a build there whose build-info names the pinned commits (testbed/open5gs_host.py).
# Documentation: docs/patches.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
EXT="$(dirname "$REPO")/ext"
readonly HERE REPO EXT
readonly MARK=.testbed-patches
# shellcheck source=images/open5gs/sources.env
source "$REPO/images/open5gs/sources.env"
# shellcheck source=patches/open5gs-host.env
source "$HERE/open5gs-host.env"
TARGETS=()
for nf in $NFS; do TARGETS+=("src/$nf/open5gs-${nf}d"); done
readonly TARGETS

patches_digest() {
  find "$HERE/open5gs" -maxdepth 1 -name '*.patch' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum \
    | sed "s#$HERE/##"
}
PATCHES_SHA="$(patches_digest | sha256sum | cut -d' ' -f1)"
CACHE="${G5TB_CACHE:-/var/cache/g5tb}"
HOME_DIR="$CACHE/open5gs-host-$OPEN5GS_VERSION-${PATCHES_SHA:0:12}"
readonly PATCHES_SHA CACHE HOME_DIR

SRC="${OPEN5GS_SRC:-$EXT/open5gs-src}"
WORK="${OPEN5GS_WORK:-$HOME_DIR/src}"
BUILD="${OPEN5GS_BUILD:-$HOME_DIR/build}"
JOBS="${JOBS:-2}"

usage() {
  cat <<EOF
usage: patches/build-host.sh [-h|--help]

Environment:
  OPEN5GS_SRC    Open5GS $OPEN5GS_VERSION tree with subprojects/freeDiameter and
                 subprojects/prometheus-client-c in place (git clones at the pinned
                 commits make a build the tests find by themselves) [$SRC]
  OPEN5GS_WORK   patched copy (re-made when the patches change) [$WORK]
  OPEN5GS_BUILD  meson build dir the tests use                 [$BUILD]
  G5TB_CACHE     where the two go by default                   [$CACHE]
  JOBS           ninja jobs                                    [$JOBS]
EOF
}

log() { printf 'build-host: %s\n' "$*" >&2; }
die() { printf 'build-host: ERROR: %s\n' "$*" >&2; exit 1; }

check_source() {
  [[ -f "$SRC/meson.build" && -f "$SRC/lib/sbi/client.c" ]] \
    || die "no Open5GS source tree at $SRC: set OPEN5GS_SRC (docs/patches.md)"
  [[ -f "$SRC/subprojects/freeDiameter/meson.build" && -f "$SRC/subprojects/prometheus-client-c/meson.build" ]] \
    || die "$SRC lacks subprojects/freeDiameter or subprojects/prometheus-client-c (the offline build needs both; docs/patches.md)"
  local tool
  for tool in meson ninja patch; do
    command -v "$tool" >/dev/null || die "$tool not found: install the build dependencies (the open5gs-build stage of images/open5gs/Dockerfile lists them)"
  done
}

prepare_work() {
  local want
  want="$(patches_digest)"
  if [[ -f "$WORK/$MARK" && "$(cat "$WORK/$MARK")" == "$want" ]]; then
    log "$WORK already carries these patches"
    return
  fi
  log "copying $SRC to $WORK and applying patches/open5gs"
  rm -rf "$WORK"
  mkdir -p "$(dirname "$WORK")"
  cp -a "$SRC" "$WORK"
  local p
  while IFS= read -r -d '' p; do
    log "applying ${p#"$REPO"/}"
    patch -d "$WORK" -p1 --batch --forward --fuzz=0 --no-backup-if-mismatch -i "$p" >/dev/null \
      || die "${p#"$REPO"/} does not apply to $SRC: rebase it (patches/README.md)"
  done < <(find "$HERE/open5gs" -maxdepth 1 -name '*.patch' -print0 | LC_ALL=C sort -z)
  printf '%s\n' "$want" >"$WORK/$MARK"
  if [[ -d "$BUILD" ]] && ! grep -qs "$WORK" "$BUILD/meson-info/meson-info.json"; then
    log "removing $BUILD (configured for another source tree)"
    rm -rf "$BUILD"
  fi
}

build() {
  if [[ ! -f "$BUILD/build.ninja" ]]; then
    log "meson setup $BUILD"
    meson setup --wrap-mode=nodownload "$BUILD" "$WORK" >"$BUILD.setup.log" 2>&1 \
      || die "meson setup failed for $WORK: see $BUILD.setup.log"
  fi
  rm -f "$BUILD/build-info.txt"
  log "ninja -j$JOBS ${TARGETS[*]}"
  ninja -C "$BUILD" -j"$JOBS" "${TARGETS[@]}" || die "ninja failed in $BUILD"
  curl8
  write_info
  log "built: ${TARGETS[*]} in $BUILD (build-info.txt)"
}

# curl8: libcurl 8 unpacked beside the build where this host's libcurl-gnutls is older
# (patches/open5gs-host.env CURL8_*); sets LIBPATH ("" where the host's own will do)
LIBPATH=""
curl8() {
  local have dir tmp deb
  have="$(dpkg-query -W -f='${Version}' libcurl3-gnutls 2>/dev/null || true)"
  [[ -n "$have" ]] && dpkg --compare-versions "$have" lt 8 || return 0
  dir="$(dirname "$BUILD")/libcurl8"
  if [[ ! -f "$dir/lib/libcurl-gnutls.so.4" ]]; then
    log "this host's libcurl-gnutls is $have: unpacking libcurl 8 from $CURL8_SUITE into $dir (not installed)"
    tmp="$(mktemp -d)"
    chmod 755 "$tmp"     # apt-get download fetches as _apt
    # shellcheck disable=SC2086  # a list of package names
    (cd "$tmp" && apt-get download ${CURL8_PACKAGES// //$CURL8_SUITE }/"$CURL8_SUITE" >/dev/null) \
      || { rm -rf "$tmp"; die "apt-get download of $CURL8_PACKAGES from $CURL8_SUITE failed (sudo make host-tools adds that source)"; }
    for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$tmp/root"; done
    mkdir -p "$dir/lib"
    cp -a "$tmp"/root/usr/lib/*/*.so* "$dir/lib/"
    rm -rf "$tmp"
  fi
  LIBPATH="$dir/lib"
}

# commit DIR: the git commit of a source tree, "unknown" for an unpacked archive
commit() {
  git -C "$1" rev-parse --verify -q 'HEAD^{commit}' 2>/dev/null || echo unknown
}

# write_info: what the build is made of, in the image's build-info.txt keys; written last, so a
# build that stopped half way has none and is never taken for a finished one
write_info() {
  local have
  have="$(commit "$SRC")"
  [[ "$have" == "$OPEN5GS_COMMIT" ]] \
    || log "note: $SRC is at $have, not the pinned $OPEN5GS_VERSION ($OPEN5GS_COMMIT): the tests use this build only through OPEN5GS_BUILD"
  {
    echo "open5gs_version=$OPEN5GS_VERSION"
    echo "open5gs_commit=$have"
    echo "subproject_freeDiameter=$(commit "$SRC/subprojects/freeDiameter")"
    echo "subproject_prometheus-client-c=$(commit "$SRC/subprojects/prometheus-client-c")"
    echo "patches_sha256=$PATCHES_SHA"
    echo "nfs=$NFS"
    echo "library_path=$LIBPATH"
    echo "built=$(date -u +%FT%TZ)"
  } >"$BUILD/build-info.txt.tmp"
  mv "$BUILD/build-info.txt.tmp" "$BUILD/build-info.txt"
}

main() {
  if (($#)); then
    case "$1" in
      -h|--help) usage; exit 0 ;;
      *) usage >&2; exit 2 ;;
    esac
  fi
  trap 'log "interrupted"; exit 130' INT
  check_source
  prepare_work
  build
}

main "$@"
