#!/usr/bin/env bash
# Installs what the testbed's host side and its tests need: the overlay programs (strongSwan
# with kernel-libipsec, wireguard-go, OpenSSL), tshark, iperf3, and the Python package.
# Idempotent. Docker Engine + Compose v2 are not installed here (see README: Requirements).
set -euo pipefail

readonly APT_PACKAGES=(
  strongswan-charon strongswan-swanctl charon-systemd libstrongswan-standard-plugins
  libstrongswan-extra-plugins libcharon-extra-plugins
  wireguard-tools wireguard-go tshark iperf3 iputils-ping iproute2 nftables openssl
  procps util-linux kmod jq shellcheck git
)

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
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
  local python="${PYTHON:-python3}"
  "$python" -m pip install -q -e ".[test,bench]"
}

main "$@"
