#!/usr/bin/env bash
# Installs what the testbed's host side and its tests need: the overlay programs (strongSwan
# with kernel-libipsec, wireguard-go, OpenSSL), tshark, iperf3, Suricata, D-ITG. Idempotent: with
# everything installed it reads dpkg's database only (no network). The Python packages go into
# the project's venv (scripts/venv.sh), never the system Python. Docker Engine + Compose v2
# are not installed here (see README: Requirements).
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
readonly BACKPORTS_LIST=/etc/apt/sources.list.d/testbed-backports.sources

# Suricata: from the distribution where it has a candidate, else from <codename>-backports
# (the source is added once, at backports' default priority, so nothing else is upgraded).
install_backports() {
  if dpkg-query -W -f='${Status}' suricata 2>/dev/null | grep -q "install ok installed" \
     && dpkg --compare-versions "$(dpkg-query -W -f='${Version}' libcurl3-gnutls 2>/dev/null || echo 0)" ge 8; then
    return 0
  fi
  export DEBIAN_FRONTEND=noninteractive
  local codename
  codename="$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release)"
  if [[ "$codename" == bookworm ]]; then
    # Debian 12: both come from bookworm-backports (the source is added once, at backports'
    # default priority, so nothing else is upgraded)
    if [[ ! -f "$BACKPORTS_LIST" ]]; then
      printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        >"$BACKPORTS_LIST"
    fi
    apt_retry update -q
    apt_retry install -y -q --no-install-recommends -t bookworm-backports "${BACKPORTS_PACKAGES[@]}"
  else
    apt_retry install -y -q --no-install-recommends "${BACKPORTS_PACKAGES[@]}"
  fi
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
  local missing=()
  local pkg
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    echo "setup-host: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt_retry update -q
    apt_retry install -y -q --no-install-recommends "${missing[@]}"
  fi
  install_backports
}

main "$@"
