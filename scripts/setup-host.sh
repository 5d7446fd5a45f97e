#!/usr/bin/env bash
# Installs what the testbed's host side and its tests need: the overlay programs (strongSwan
# with kernel-libipsec, wireguard-go, OpenSSL), tshark, iperf3, Suricata, D-ITG. Installs what
# is missing, with the upgrades of installed packages apt needs for them as long as those come
# from this host's own release (its point releases, -updates and -security: apt's simulation
# says which, scripts/lib/apt-plan.sh), named before they are made. Never: an upgrade from
# another suite or archive (a newer Debian is what scripts/suite-root.sh's roots are for), a
# removal, an upgrade of anything the packages do not need. SETUP_UPGRADE=0: no upgrade at all;
# what would need one is left out, named with the command that installs it. SETUP_SIMULATE=1:
# apt-get -s for every install (the tests run it so in Debian 12 and 13 roots). Idempotent:
# with everything installed it reads dpkg's database only (no network). The Python packages go
# into the project's venv (scripts/venv.sh), never the system Python. Docker Engine + Compose
# v2 are not installed here (see README: Requirements).
set -euo pipefail

# shellcheck source=scripts/lib/apt-plan.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt-plan.sh"

# "a|b": one of them, the first this release can install (Debian 13 names libcurl3t64-gnutls).
# strongswan-charon, never charon-systemd (Debian 13: the two conflict): ipsec/entrypoint.sh runs
# /usr/lib/ipsec/charon; charon-systemd takes no options and cannot be run that way.
readonly APT_PACKAGES=(
  strongswan-charon strongswan-swanctl libstrongswan-standard-plugins
  libstrongswan-extra-plugins libcharon-extra-plugins
  wireguard-tools wireguard-go tshark iperf3 iputils-ping iproute2 nftables openssl
  procps util-linux kmod jq shellcheck git python3-venv
  d-itg iptables socat gcc libc6-dev libnetfilter-queue-dev
  nghttp2-server nghttp2-client curl "libcurl3-gnutls|libcurl3t64-gnutls"
)
# Suricata 7 is in bookworm-backports (Debian 12) and in trixie's main suite (Debian 13+); on
# Debian 12 it alone is taken from backports (with what it needs that is not installed yet).
readonly BACKPORTS_PACKAGES=(suricata)
readonly BACKPORTS_LIST="${SETUP_APT_SOURCES:-/etc/apt/sources.list.d}/testbed-backports.sources"
readonly OS_RELEASE="${SETUP_OS_RELEASE:-/etc/os-release}"
# 1 (default): allow the upgrades of installed packages apt needs, from this host's release; 0: none
readonly SETUP_UPGRADE="${SETUP_UPGRADE:-1}"
readonly SETUP_SIMULATE="${SETUP_SIMULATE:-0}"
# more entries ("a|b" as above) from the caller: `make host-tools` passes the runtime libraries of a
# cached Open5GS host build when there is one (testbed/open5gs_host.py packages)
read -r -a EXTRA_PACKAGES <<<"${SETUP_EXTRA_PACKAGES:-}"
readonly EXTRA_PACKAGES
HELD=()            # left out: "what (why): the command that installs it"
UPDATED=0
VID="" CODENAME="" OWN=""
TARGET=()          # -t SUITE while installing what is taken from another archive (backports)

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# satisfied ENTRY: one of ENTRY's alternatives ("a|b") is installed
satisfied() {
  local p
  for p in ${1//|/ }; do installed "$p" && return 0; done
  return 1
}

# apt_update: the package lists, once per run (only when something is to be installed)
apt_update() {
  ((UPDATED)) && return 0
  apt_retry update -q
  UPDATED=1
}

# judge "EXTRA_ARCHIVES" PACKAGES...: apt's simulation of installing PACKAGES, judged
# (scripts/lib/apt-plan.sh apt_judge). Sets VERDICT (ok, upgrades, held, refused, or failed: apt
# cannot install them, e.g. a conflict) and REASONS (one a line).
VERDICT="" REASONS=""
judge() {
  local extra="$1" out rc=0
  shift
  out="$(apt-get install -s -y -q --no-install-recommends --no-upgrade "${TARGET[@]}" "$@" 2>&1)" || rc=$?
  if ((rc)); then
    VERDICT=failed
    REASONS="$(grep -E '^(E: | [^ ].*: (Depends|Conflicts|Breaks|PreDepends))' <<<"$out" | sed 's/^ *//' | head -n 4)"
    [[ -n "$REASONS" ]] || REASONS="apt-get exit $rc"
    return 0
  fi
  local verdict
  # a release without a version (testing, sid) is known by its archives' names
  [[ -n "$VID" || -n "$OWN" ]] || OWN="$(apt-cache policy | suite_archives "$CODENAME")"
  verdict="$(apt_plan <<<"$out" | apt_judge "$VID" "$SETUP_UPGRADE" "$extra" "$OWN")"
  VERDICT="${verdict%%$'\n'*}"
  REASONS="$(sed 1d <<<"$verdict")"
}

# joined [N]: stdin's lines as one "a; b; c"; with N, the first N and how many more
joined() {
  awk -v n="${1:-0}" 'n == 0 || NR <= n { out = out (NR > 1 ? "; " : "") $0 }
    END { print out (n && NR > n ? "; and " NR - n " more" : "") }'
}

# hold ENTRY PACKAGE: ENTRY left out for the VERDICT/REASONS of PACKAGE, named with the command
# that installs it
hold() {
  local cmd="sudo apt-get install --no-install-recommends ${TARGET[*]:+${TARGET[*]} }$2"
  case "$VERDICT" in
    held) HELD+=("$1 (needs these upgrades from this host's release: $(joined 6 <<<"$REASONS")):\
 \`sudo make host-tools\` (without SETUP_UPGRADE=0) or \`$cmd\` installs it with them") ;;
    refused) HELD+=("$1 (installing it $(joined 6 <<<"$REASONS"); setup-host does not): \`$cmd\` would, if you accept that") ;;
    *) HELD+=("$1 (apt cannot install it here: $(joined 6 <<<"$REASONS")): \`$cmd\` shows why") ;;
  esac
}

# acceptable: the last judge() allows the install
acceptable() { [[ "$VERDICT" == ok || "$VERDICT" == upgrades ]]; }

# install_set "EXTRA_ARCHIVES" ENTRIES...: install the missing ENTRIES (an entry is "pkg" or "a|b";
# new packages may come from EXTRA_ARCHIVES, with TARGET naming that suite). All at once when
# apt's plan for them is acceptable, else each on its own (an alternative's first acceptable
# member); the rest is left out (HELD).
install_set() {
  local extra="$1" entry p ok=() chosen
  shift
  (($#)) || return 0
  apt_update
  local firsts=()
  for entry in "$@"; do firsts+=("${entry%%|*}"); done
  judge "$extra" "${firsts[@]}"
  if acceptable; then
    apt_install "${firsts[@]}"
    return 0
  fi
  for entry in "$@"; do
    chosen=""
    for p in ${entry//|/ }; do
      judge "$extra" "$p"
      if acceptable; then chosen="$p"; break; fi
    done
    if [[ -n "$chosen" ]]; then
      ok+=("$chosen")
    else
      judge "$extra" "${entry%%|*}"          # the reason given is the preferred member's
      hold "$entry" "${entry%%|*}"
    fi
  done
  ((${#ok[@]})) || return 0
  judge "$extra" "${ok[@]}"
  if acceptable; then
    apt_install "${ok[@]}"
  else                                        # acceptable one by one, not together: one by one
    for p in "${ok[@]}"; do judge "$extra" "$p"; if acceptable; then apt_install "$p"; else hold "$p" "$p"; fi; done
  fi
}

# apt_install PACKAGES...: the install the last judge() accepted, its upgrades named first.
# --no-remove: apt stops rather than remove anything (the plan had no removal).
apt_install() {
  local sim=()
  if [[ "$SETUP_SIMULATE" == 1 ]]; then sim=(-s); fi
  echo "setup-host: installing $*${TARGET[*]:+ (${TARGET[*]})}"
  if [[ "$VERDICT" == upgrades ]]; then
    echo "setup-host: upgrading for them (apt needs these; from this host's release $VID):" \
      "$(joined <<<"$REASONS")"
  fi
  apt_retry install "${sim[@]}" -y -q --no-install-recommends --no-upgrade --no-remove "${TARGET[@]}" "$@"
}

# Suricata: from the distribution where it has a candidate, else from <codename>-backports (the
# source is added once, at backports' default priority, so nothing else is taken from it; with
# -t the new packages it needs come from there too, which apt_judge allows for new ones only).
install_backports() {
  local missing=() p
  for p in "${BACKPORTS_PACKAGES[@]}"; do installed "$p" || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  if [[ "$CODENAME" != bookworm ]]; then
    install_set "" "${missing[@]}"
    return 0
  fi
  if [[ ! -f "$BACKPORTS_LIST" ]]; then
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      >"$BACKPORTS_LIST"
    UPDATED=0
  fi
  TARGET=(-t bookworm-backports)
  apt_update
  install_set "$(apt-cache policy | suite_archives bookworm-backports)" "${missing[@]}"
  TARGET=()
}

# libcurl 8 (the Open5GS image's; bookworm's 7.88 breaks the SBI client with the SCP) is Debian
# 12's only from backports: an installed package from another suite, so not setup's to upgrade.
curl_note() {
  local curl
  curl="$(dpkg-query -W -f='${Version}' libcurl3-gnutls 2>/dev/null || true)"
  [[ -n "$curl" ]] && dpkg --compare-versions "$curl" lt 8 || return 0
  local how="this release has no libcurl 8"
  [[ "$CODENAME" != bookworm ]] \
    || how="\`sudo apt-get install --no-install-recommends -t bookworm-backports libcurl3-gnutls\` upgrades it (and curl) from bookworm-backports, which \`sudo make host-tools\` adds"
  echo "setup-host: keeping libcurl3-gnutls $curl (the Open5GS image runs 8; \`make open5gs-host-build\`" \
    "unpacks libcurl 8 beside the host build for its NF tests, without installing it): $how"
}

# apt_retry ARGS...: apt-get, once more after `apt-get update` when it fails (a stale or cleaned
# package cache is the usual cause), then a hint.
apt_retry() {
  apt-get "$@" && return 0
  echo "setup-host: apt-get $1 failed; refreshing the package lists and trying once more" >&2
  apt-get update -q || true
  apt-get "$@" && return 0
  echo "setup-host: apt-get $* failed twice: check the network/proxy and /etc/apt/sources.list.d, then run \`sudo make host-tools\` again" >&2
  return 1
}

main() {
  if [[ "$(id -u)" != 0 ]]; then
    echo "setup-host: run as root (apt-get and network namespaces need it): sudo make host-tools" >&2
    exit 1
  fi
  [[ "$SETUP_UPGRADE" == 0 || "$SETUP_UPGRADE" == 1 ]] \
    || { echo "setup-host: SETUP_UPGRADE=$SETUP_UPGRADE: 1 (default) or 0" >&2; exit 2; }
  VID="$(sed -n 's/^VERSION_ID=//p' "$OS_RELEASE" | tr -d '"')"
  CODENAME="$(sed -n 's/^VERSION_CODENAME=//p' "$OS_RELEASE" | tr -d '"')"
  export DEBIAN_FRONTEND=noninteractive
  local missing=() entry
  for entry in "${APT_PACKAGES[@]}" "${EXTRA_PACKAGES[@]}"; do
    satisfied "$entry" || missing+=("$entry")
  done
  if ((${#missing[@]})); then
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    install_set "" "${missing[@]}"
  fi
  install_backports
  curl_note
  if ((${#HELD[@]})); then
    printf 'setup-host: left out: %s\n' "${HELD[@]}" >&2
    echo "setup-host: the tests that need what was left out skip naming it" >&2
  fi
}

main "$@"
