#!/usr/bin/env bash
# Installs what the testbed's host side and its tests need: the overlay programs (strongSwan
# with kernel-libipsec, wireguard-go, OpenSSL), tshark, iperf3, Suricata, D-ITG. Installs only
# what is missing and upgrades nothing installed (apt-get --no-upgrade; a package whose
# installation would upgrade an installed one is left out, named with those upgrades, unless
# SETUP_UPGRADE=1). Idempotent: with everything installed it reads dpkg's database only (no
# network). The Python packages go into the project's venv (scripts/venv.sh), never the system
# Python. Docker Engine + Compose v2 are not installed here (see README: Requirements).
set -euo pipefail

readonly APT_PACKAGES=(
  strongswan-charon strongswan-swanctl charon-systemd libstrongswan-standard-plugins
  libstrongswan-extra-plugins libcharon-extra-plugins
  wireguard-tools wireguard-go tshark iperf3 iputils-ping iproute2 nftables openssl
  procps util-linux kmod jq shellcheck git python3-venv
  d-itg iptables socat gcc libc6-dev libnetfilter-queue-dev
  nghttp2-server nghttp2-client curl
)
# Suricata 7 is in bookworm-backports (Debian 12) and in trixie's main suite (Debian 13+);
# libcurl3-gnutls >= 8 is what the Open5GS image runs (7.88 breaks the SBI client, and ignores
# the GnuTLS priority string that pins the client's TLS suite), for the host-built NF tests.
readonly BACKPORTS_PACKAGES=(suricata libcurl3-gnutls)
readonly BACKPORTS_LIST="${SETUP_APT_SOURCES:-/etc/apt/sources.list.d}/testbed-backports.sources"
readonly OS_RELEASE="${SETUP_OS_RELEASE:-/etc/os-release}"
# 1: allow the upgrades of installed packages that installing a missing one needs (and libcurl 8)
readonly SETUP_UPGRADE="${SETUP_UPGRADE:-0}"
HELD=()            # left out: "package (would upgrade: ...)"
UPDATED=0

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# apt_update: the package lists, once per run (only when something is to be installed)
apt_update() {
  ((UPDATED)) && return 0
  apt_retry update -q
  UPDATED=1
}

# would_upgrade [-t SUITE] PACKAGES...: the installed packages that installing PACKAGES would
# upgrade, one "name old -> new" line each, from apt-get's simulation ("Inst name [old] (new ...)").
would_upgrade() {
  apt-get install -s -y -q --no-install-recommends --no-upgrade "$@" 2>/dev/null \
    | sed -n 's/^Inst \([^ ]*\) \[\([^]]*\)\] (\([^ ]*\).*/\1 \2 -> \3/p'
}

# install_new [-t SUITE] PACKAGES...: install the missing PACKAGES with --no-upgrade. Those whose
# installation would upgrade an installed package (a dependency asking for a newer version) are
# left out and named with those upgrades (HELD), unless SETUP_UPGRADE=1.
install_new() {
  local suite=() ok=() p up
  if [[ "$1" == -t ]]; then suite=(-t "$2"); shift 2; fi
  (($#)) || return 0
  apt_update
  up="$(would_upgrade "${suite[@]}" "$@")"
  if [[ -n "$up" && "$SETUP_UPGRADE" != 1 ]]; then
    for p in "$@"; do
      up="$(would_upgrade "${suite[@]}" "$p")"
      if [[ -n "$up" ]]; then
        HELD+=("$p (would upgrade: $(tr '\n' ',' <<<"$up" | sed 's/,$//; s/,/, /g'))")
      else
        ok+=("$p")
      fi
    done
    set -- "${ok[@]}"
    (($#)) || return 0
    [[ -z "$(would_upgrade "${suite[@]}" "$@")" ]] || { HELD+=("$* (together they would upgrade installed packages)"); return 0; }
  fi
  echo "setup-host: installing ${*}${suite[*]:+ from ${suite[1]}}"
  apt_retry install -y -q --no-install-recommends --no-upgrade "${suite[@]}" "$@"
}

# Suricata: from the distribution where it has a candidate, else from <codename>-backports (the
# source is added once, at backports' default priority, so nothing else is taken from it).
# libcurl3-gnutls 8 (the Open5GS image's; 7.88 breaks the SBI client with the SCP) is an upgrade
# of bookworm's 7.88: only with SETUP_UPGRADE=1 (the host-built NF tests that need it skip naming it).
install_backports() {
  local codename curl="" missing=() suite=() p
  for p in "${BACKPORTS_PACKAGES[@]}"; do
    if [[ "$p" != libcurl3-gnutls ]]; then
      installed "$p" || missing+=("$p")
      continue
    fi
    curl="$(dpkg-query -W -f='${Version}' libcurl3-gnutls 2>/dev/null || true)"
    if [[ -z "$curl" ]] || { dpkg --compare-versions "$curl" lt 8 && [[ "$SETUP_UPGRADE" == 1 ]]; }; then
      missing+=(libcurl3-gnutls)
    elif dpkg --compare-versions "$curl" lt 8; then
      echo "setup-host: keeping libcurl3-gnutls $curl (the Open5GS image runs 8; the host-built NF tests" \
        "with the SCP skip naming it); SETUP_UPGRADE=1 upgrades it from backports"
    fi
  done
  ((${#missing[@]})) || return 0
  export DEBIAN_FRONTEND=noninteractive
  codename="$(sed -n 's/^VERSION_CODENAME=//p' "$OS_RELEASE")"
  if [[ "$codename" == bookworm ]]; then
    if [[ ! -f "$BACKPORTS_LIST" ]]; then
      printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        >"$BACKPORTS_LIST"
      UPDATED=0
    fi
    suite=(-t bookworm-backports)
  fi
  for p in "${missing[@]}"; do
    if [[ "$p" == libcurl3-gnutls && -n "$curl" ]]; then
      # the one upgrade asked for (SETUP_UPGRADE=1): a named package, so without --no-upgrade
      apt_update
      echo "setup-host: upgrading libcurl3-gnutls $curl${suite[*]:+ from ${suite[1]}} (SETUP_UPGRADE=1)"
      apt_retry install -y -q --no-install-recommends "${suite[@]}" libcurl3-gnutls
    else
      install_new "${suite[@]}" "$p"
    fi
  done
}

# apt_retry ARGS...: apt-get, once more after `apt-get update` when it fails (a stale or cleaned
# package cache is the usual cause), then a hint.
apt_retry() {
  apt-get "$@" && return 0
  echo "setup-host: apt-get $1 failed; refreshing the package lists and trying once more" >&2
  apt-get update -q || true
  apt-get "$@" && return 0
  echo "setup-host: apt-get $* failed twice: check the network/proxy and /etc/apt/sources.list.d, then run \`sudo make setup\` again" >&2
  return 1
}

main() {
  if [[ "$(id -u)" != 0 ]]; then
    echo "setup-host: run as root (apt-get and network namespaces need it): sudo make setup" >&2
    exit 1
  fi
  local missing=() pkg
  for pkg in "${APT_PACKAGES[@]}"; do
    installed "$pkg" || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    install_new "${missing[@]}"
  fi
  install_backports
  if ((${#HELD[@]})); then
    printf 'setup-host: left out, installing it would upgrade installed packages: %s\n' "${HELD[@]}" >&2
    echo "setup-host: nothing installed was upgraded; tests that need what was left out skip naming it." \
      "SETUP_UPGRADE=1 (sudo SETUP_UPGRADE=1 make host-tools) allows those upgrades" >&2
  fi
}

main "$@"
