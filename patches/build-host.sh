#!/usr/bin/env bash
# Build the patched Open5GS NFs the namespace tests run (open5gs-nrfd, open5gs-ausfd) on this
# host, outside the repository: copy a release tree, apply patches/open5gs/*.patch in order,
# meson setup (no downloads), ninja the two NFs. Documentation: docs/patches.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
EXT="$(dirname "$REPO")/ext"
readonly HERE REPO EXT
readonly TARGETS=(src/nrf/open5gs-nrfd src/ausf/open5gs-ausfd)
readonly MARK=.testbed-patches

SRC="${OPEN5GS_SRC:-$EXT/open5gs-src}"
WORK="${OPEN5GS_WORK:-$EXT/open5gs-tls}"
BUILD="${OPEN5GS_BUILD:-$EXT/open5gs-tls-build}"
JOBS="${JOBS:-2}"

usage() {
  cat <<EOF
usage: patches/build-host.sh [-h|--help]

Environment (defaults beside the repository, in $EXT):
  OPEN5GS_SRC    unpacked Open5GS v2.7.7 tree with subprojects/freeDiameter and
                 subprojects/prometheus-client-c in place   [$SRC]
  OPEN5GS_WORK   patched copy (re-made when the patches change) [$WORK]
  OPEN5GS_BUILD  meson build dir the tests use                 [$BUILD]
  JOBS           ninja jobs                                    [$JOBS]
EOF
}

log() { printf 'build-host: %s\n' "$*" >&2; }
die() { printf 'build-host: ERROR: %s\n' "$*" >&2; exit 1; }

patches_digest() {
  find "$HERE/open5gs" -maxdepth 1 -name '*.patch' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum \
    | sed "s#$HERE/##"
}

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
  log "ninja -j$JOBS ${TARGETS[*]}"
  ninja -C "$BUILD" -j"$JOBS" "${TARGETS[@]}" || die "ninja failed in $BUILD"
  log "built: $BUILD/${TARGETS[0]}, $BUILD/${TARGETS[1]}"
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
