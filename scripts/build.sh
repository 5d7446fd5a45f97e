#!/usr/bin/env bash
# Build the testbed's images (docs/images.md). `make build` runs it.
#
#   scripts/build.sh [--dry-run] [IMAGE...]      IMAGE: open5gs ueransim tools mongo ferretdb snort oai
#                                                (default: open5gs ueransim tools mongo)
# Environment (Make variables of the same names):
#   OPEN5GS_IMAGE UERANSIM_IMAGE TOOLS_IMAGE MONGO_IMAGE FERRETDB_IMAGE   image names (tags)
#   OPEN5GS_SRC  UERANSIM_SRC       a local source tree instead of the pinned upstream clone
#   OPEN5GS_INSTALL UERANSIM_INSTALL FERRETDB_INSTALL SNORT_INSTALL  a prebuilt install tree: no compile at all
#   STRONGSWAN_SRC STRONGSWAN_INSTALL ROSENPASS_INSTALL  the tools image's compiled programs
#   SNORT_SRC LIBDAQ_SRC            local snort3 / libdaq source trees (IDS=snort, docs/secfn.md)
#   OAI_SRC OAI_INSTALL ASN1C_SRC SIMDE_SRC OAI_MARCH  the OpenAirInterface image (docs/ran.md)
#   APPLY_PATCHES=0                 do not apply patches/open5gs/*.patch (tree already has them)
#   DEBIAN_IMAGE=ref                another base image than the Dockerfiles' digest-pinned bookworm one
#   DEBIAN13_IMAGE=ref              the same for the images on Debian 13 (open5gs: OpenSSL 3.5)
#   BUILD_JOBS=N                    compile jobs inside the build (default: all cores)
# Default tags carry the content hash of each image's build inputs (testbed/images.py); every
# image gets the labels testbed.inputs (that hash) and testbed.base (its base image).
#   DOCKER=docker                   the Docker CLI
# Exit: 0 ok, 1 a build failed, 2 usage error, 130 interrupted.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

readonly DEFAULT_IMAGES=(open5gs ueransim tools mongo)
readonly ALL_IMAGES=(open5gs ueransim tools mongo ferretdb snort oai)
# shellcheck source=scripts/lib/images.sh
source "$TESTBED_ROOT/scripts/lib/images.sh"
load_image_defaults "$TESTBED_ROOT" || exit 1
DOCKER="${DOCKER:-docker}"

usage() {
  cat <<EOF
usage: scripts/build.sh [--dry-run] [IMAGE...]

Builds the testbed's images with BuildKit (docker buildx build), context = repository root.
IMAGE is one of: ${ALL_IMAGES[*]} (default: ${DEFAULT_IMAGES[*]}).
  open5gs   -> \$OPEN5GS_IMAGE  ($OPEN5GS_IMAGE)   images/open5gs/Dockerfile
  ueransim  -> \$UERANSIM_IMAGE ($UERANSIM_IMAGE)  images/ueransim/Dockerfile
  tools     -> \$TOOLS_IMAGE    ($TOOLS_IMAGE)           images/tools/Dockerfile
  mongo     -> \$MONGO_IMAGE    ($MONGO_IMAGE): pulled if absent (no build)
  ferretdb  -> \$FERRETDB_IMAGE ($FERRETDB_IMAGE) images/ferretdb/Dockerfile:
               a MongoDB-compatible server for hosts without a registry or without AVX;
               use it with MONGO_IMAGE=\$FERRETDB_IMAGE
  snort     -> \$SNORT_IMAGE    ($SNORT_IMAGE) images/snort/Dockerfile: Snort 3 + libdaq,
               the engine of IDS=snort (docs/secfn.md)
  oai       -> \$OAI_IMAGE      ($OAI_IMAGE)       images/oai/Dockerfile: OpenAirInterface
               for RAN=oai|split (experimental, docs/ran.md); not built by default

Local trees (BuildKit named build contexts replace the stage of the same name):
  OPEN5GS_SRC=/path       Open5GS source (with subprojects/: builds offline, --wrap-mode=nodownload)
  UERANSIM_SRC=/path      UERANSIM source
  OPEN5GS_INSTALL=/path   prebuilt Open5GS install tree (prefix /opt/open5gs): skips compiling
  UERANSIM_INSTALL=/path  prebuilt UERANSIM install tree (bin/nr-gnb ...): skips compiling
  FERRETDB_INSTALL=/path  folder holding bin/ferretdb: skips compiling FerretDB
  STRONGSWAN_SRC=/path    strongSwan source (tools image); STRONGSWAN_INSTALL=/path a prebuilt
                          install tree (usr/lib/ipsec/charon, usr/sbin/swanctl ...): skips compiling
  ROSENPASS_INSTALL=/path folder holding bin/rosenpass (tools image; \`make rosenpass\` on Debian 12)
  SNORT_SRC=/path         snort3 source;  LIBDAQ_SRC=/path  libdaq source
  SNORT_INSTALL=/path     prebuilt Snort 3 + libdaq install tree (bin/snort, lib/libdaq.so): skips compiling
  OAI_SRC=/path           OpenAirInterface source tree; OAI_INSTALL=/path a prebuilt install tree
                          (bin/nr-softmodem, bin/nr-cuup, bin/nr-uesoftmodem, lib/*.so): skips compiling
  ASN1C_SRC=/path SIMDE_SRC=/path  the asn1c fork and the simde headers OAI builds with (local trees)
  OAI_MARCH=x86-64-v3     the CPU the OAI binaries are compiled for (native: the build host's)
  APPLY_PATCHES=0         the Open5GS tree already carries patches/open5gs/*.patch
  DEBIAN_IMAGE=ref        another base image (default: the Dockerfiles' debian:bookworm-slim@sha256:...;
                          a host with only an imported debian:bookworm-slim sets DEBIAN_IMAGE=debian:bookworm-slim)
  DEBIAN13_IMAGE=ref      the same for the Debian 13 images (open5gs; e.g. DEBIAN13_IMAGE=debian:trixie-slim)
  BUILD_JOBS=N            compile jobs (default: all cores)

Default tags are <name>:<version>-<hash of the build inputs> (python3 -m testbed.cli.images inputs NAME).

  --dry-run   print the docker commands instead of running them
  -h, --help  this text
Exit: 0 ok, 1 a build failed, 2 usage error, 130 interrupted.
EOF
}

# The tag of an image name (after the last ':' that follows the last '/'), for the version label.
image_version() {
  local name="$1" tail
  tail="${name##*/}"
  if [[ "$tail" == *:* ]]; then
    echo "${tail##*:}"
  else
    echo latest
  fi
}

# What a local tree is, for the image label: local:<dir>@<commit>[-dirty] or local:<dir>.
describe_tree() {
  local dir="$1" rev
  if rev="$(git -C "$dir" describe --always --dirty --abbrev=12 2>/dev/null)"; then
    echo "local:$(basename "$dir")@$rev"
  else
    echo "local:$(basename "$dir")"
  fi
}

require_dir() {
  local var="$1" dir="$2" marker="$3"
  [[ -d "$dir" ]] || die "$var=$dir is not a directory; give the path of the tree (docs/images.md)" 2
  [[ -e "$dir/$marker" ]] || die "$var=$dir does not look right: $dir/$marker is missing (docs/images.md)" 2
}

# common_args NAME [SOURCE]: what every image build gets: its version, and as labels its inputs
# hash, its base and, for a compiled image, what it is built from (SOURCE, default upstream: then
# also the pins of images/NAME/sources.env); the base image override if any.
common_args() {
  local name="$1" image_var="${1^^}_IMAGE" labels=()
  mapfile -t labels < <(cd "$TESTBED_ROOT" && "$PYTHON" -m testbed.cli.images labels "$name" ${2:+--source "$2"}) \
    || die "cannot compute the build inputs hash of $name (see above)" 1
  ((${#labels[@]})) || die "cannot compute the build inputs hash of $name" 1
  printf '%s\n' --build-arg "IMAGE_VERSION=$(image_version "${!image_var}")" "${labels[@]}"
  # the base override of the image's suite (testbed/images.py base_variable: DEBIAN_IMAGE or DEBIAN13_IMAGE)
  local base_var
  base_var="$(cd "$TESTBED_ROOT" && "$PYTHON" -m testbed.cli.images base-variable "$name")" \
    || die "cannot read the base of $name (see above)" 1
  [[ -z "${!base_var:-}" ]] || printf '%s\n' --build-arg "DEBIAN_IMAGE=${!base_var}"
}

run_build() {
  if [[ "$DRY_RUN" == 1 ]]; then
    printf '+'
    printf ' %q' "$@"
    printf '\n'
    return 0
  fi
  log "$*"
  "$@"
}

# build_compiled NAME IMAGE INSTALL_MARKER SRC_MARKER [EXTRA_ARG...]: an image compiled from
# upstream (open5gs, ueransim, snort, oai). $<NAME>_INSTALL (a prebuilt install tree) replaces the
# compile stage, $<NAME>_SRC (a local tree) the source stage, both as BuildKit named build contexts;
# what was used goes into the image (its contents file) and its label testbed.<name>.source.
build_compiled() {
  local name="$1" image="$2" install_marker="$3" src_marker="$4"
  shift 4
  local upper="${name^^}"
  local install_var="${upper}_INSTALL" src_var="${upper}_SRC"
  local args=() context=() source=upstream
  if [[ -n "${!install_var:-}" ]]; then
    require_dir "$install_var" "${!install_var}" "$install_marker"
    context=(--build-context "$name-install=${!install_var}")
    source="prebuilt:$(basename "${!install_var}")"
  elif [[ -n "${!src_var:-}" ]]; then
    require_dir "$src_var" "${!src_var}" "$src_marker"
    context=(--build-context "$name-src=${!src_var}")
    source="$(describe_tree "${!src_var}")"
  fi
  mapfile -t args < <(common_args "$name" "$source")
  ((${#args[@]})) || exit 1
  args+=("${context[@]}" --build-arg "${upper}_SOURCE=$source" "$@")
  [[ -z "${BUILD_JOBS:-}" ]] || args+=(--build-arg "BUILD_JOBS=$BUILD_JOBS")
  run_build "$DOCKER" buildx build --load -f "images/$name/Dockerfile" "${args[@]}" -t "$image" .
}

build_open5gs() {
  local extra=()
  [[ -z "${APPLY_PATCHES:-}" ]] || extra+=(--build-arg "APPLY_PATCHES=$APPLY_PATCHES")
  build_compiled open5gs "$OPEN5GS_IMAGE" bin/open5gs-nrfd meson.build "${extra[@]}"
}

build_ueransim() {
  build_compiled ueransim "$UERANSIM_IMAGE" bin/nr-gnb CMakeLists.txt
}

build_snort() {
  local extra=()
  if [[ -n "${LIBDAQ_SRC:-}" && -z "${SNORT_INSTALL:-}" ]]; then
    require_dir LIBDAQ_SRC "$LIBDAQ_SRC" configure.ac
    extra+=(--build-context "libdaq-src=$LIBDAQ_SRC")
  fi
  build_compiled snort "$SNORT_IMAGE" bin/snort CMakeLists.txt "${extra[@]}"
}

build_oai() {
  local extra=()
  [[ -z "${ASN1C_SRC:-}" ]] || { require_dir ASN1C_SRC "$ASN1C_SRC" configure.ac; extra+=(--build-context "asn1c-src=$ASN1C_SRC"); }
  [[ -z "${SIMDE_SRC:-}" ]] || { require_dir SIMDE_SRC "$SIMDE_SRC" simde-common.h; extra+=(--build-context "simde-src=$SIMDE_SRC"); }
  [[ -z "${OAI_MARCH:-}" ]] || extra+=(--build-arg "OAI_MARCH=$OAI_MARCH")
  [[ -z "${APPLY_PATCHES:-}" ]] || extra+=(--build-arg "APPLY_PATCHES=$APPLY_PATCHES")
  build_compiled oai "$OAI_IMAGE" bin/nr-softmodem CMakeLists.txt "${extra[@]}"
}

# The tools image compiles strongSwan (images/tools/sources.env) and rosenpass: STRONGSWAN_SRC (a
# local tree) or STRONGSWAN_INSTALL (an install tree) and ROSENPASS_INSTALL replace those stages.
build_tools() {
  local args=() context=() source=upstream
  if [[ -n "${STRONGSWAN_INSTALL:-}" ]]; then
    require_dir STRONGSWAN_INSTALL "$STRONGSWAN_INSTALL" usr/lib/ipsec/charon
    context+=(--build-context "strongswan-install=$STRONGSWAN_INSTALL")
    source="prebuilt:$(basename "$STRONGSWAN_INSTALL")"
  elif [[ -n "${STRONGSWAN_SRC:-}" ]]; then
    require_dir STRONGSWAN_SRC "$STRONGSWAN_SRC" configure.ac
    context+=(--build-context "strongswan-src=$STRONGSWAN_SRC")
    source="$(describe_tree "$STRONGSWAN_SRC")"
  fi
  if [[ -n "${ROSENPASS_INSTALL:-}" ]]; then
    require_dir ROSENPASS_INSTALL "$ROSENPASS_INSTALL" bin/rosenpass
    context+=(--build-context "rosenpass-install=$ROSENPASS_INSTALL")
  fi
  mapfile -t args < <(common_args tools "$source")
  ((${#args[@]})) || exit 1
  args+=("${context[@]}")
  [[ -z "${BUILD_JOBS:-}" ]] || args+=(--build-arg "BUILD_JOBS=$BUILD_JOBS")
  run_build "$DOCKER" buildx build --load -f images/tools/Dockerfile "${args[@]}" -t "$TOOLS_IMAGE" .
}

build_ferretdb() {
  local args=()
  mapfile -t args < <(common_args ferretdb)
  ((${#args[@]})) || exit 1
  if [[ -n "${FERRETDB_INSTALL:-}" ]]; then
    require_dir FERRETDB_INSTALL "$FERRETDB_INSTALL" bin/ferretdb
    args+=(--build-context "ferretdb-install=$FERRETDB_INSTALL")
  fi
  run_build "$DOCKER" buildx build --load -f images/ferretdb/Dockerfile "${args[@]}" -t "$FERRETDB_IMAGE" .
}

# MongoDB is not built: pull MONGO_IMAGE when it is not there yet (MONGO_IMAGE=ferretdb: build that).
ensure_mongo() {
  if [[ "$MONGO_IMAGE" == "$FERRETDB_IMAGE" ]]; then
    build_ferretdb || die "building $FERRETDB_IMAGE failed (see the build output above)" 1
    return 0
  fi
  if [[ "$DRY_RUN" != 1 ]] && "$DOCKER" image inspect "$MONGO_IMAGE" >/dev/null 2>&1; then
    log "$MONGO_IMAGE is present"
    return 0
  fi
  run_build "$DOCKER" pull "$MONGO_IMAGE" && return 0
  die "could not pull MONGO_IMAGE=$MONGO_IMAGE; without a registry build the MongoDB-compatible image (\`make build IMAGES=ferretdb\`) and use MONGO_IMAGE=$FERRETDB_IMAGE (docs/images.md)" 1
}

check_docker() {
  [[ "$DRY_RUN" == 1 ]] && return 0
  command -v "$DOCKER" >/dev/null 2>&1 \
    || die "no Docker CLI ($DOCKER) on this host; install Docker Engine (see \`make doctor\`)" 1
  "$DOCKER" info >/dev/null 2>&1 \
    || die "the Docker engine is not reachable ($DOCKER info failed); start it or see \`make doctor\`" 1
  "$DOCKER" buildx version >/dev/null 2>&1 \
    || die "docker buildx (BuildKit) is missing; the images need it for named build contexts: install docker-buildx (see \`make doctor\`)" 1
}

main() {
  local images=() img
  while (($#)); do
    case "$1" in
      -h | --help) usage; exit 0 ;;
      --dry-run) DRY_RUN=1 ;;
      -*) die "unknown option $1 (see --help)" 2 ;;
      *)
        [[ " ${ALL_IMAGES[*]} " == *" $1 "* ]] || die "unknown image '$1'; valid: ${ALL_IMAGES[*]}" 2
        images+=("$1") ;;
    esac
    shift
  done
  ((${#images[@]})) || images=("${DEFAULT_IMAGES[@]}")
  cd "$TESTBED_ROOT"
  trap 'log "interrupted"; exit 130' INT TERM
  check_docker
  for img in "${images[@]}"; do
    case "$img" in
      open5gs) build_open5gs || die "building $OPEN5GS_IMAGE failed (see the build output above)" 1 ;;
      ueransim) build_ueransim || die "building $UERANSIM_IMAGE failed (see the build output above)" 1 ;;
      tools) build_tools || die "building $TOOLS_IMAGE failed (see the build output above)" 1 ;;
      ferretdb) build_ferretdb || die "building $FERRETDB_IMAGE failed (see the build output above)" 1 ;;
      snort) build_snort || die "building $SNORT_IMAGE failed (see the build output above)" 1 ;;
      oai) build_oai || die "building $OAI_IMAGE failed (see the build output above)" 1 ;;
      mongo) ensure_mongo ;;
    esac
  done
  log "done: ${images[*]}"
}

main "$@"
