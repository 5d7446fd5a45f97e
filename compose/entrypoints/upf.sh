#!/usr/bin/env bash
# Entrypoint of the UPF program container (in the namespace of upf-ns, with the upf-net holder).
# Sets up what Open5GS does not do itself on Linux (docs/stack.md): the ogstun TUN device with
# the UE subnet's gateway address, and source NAT of UE traffic leaving toward n6, so the UE's
# pings reach the Docker host (n6 gateway) and the replies come back through the UPF.
# IP forwarding is a per-namespace sysctl set by the holder (compose: sysctls).
# Environment: OGSTUN (device), UE_SUBNET (10.45.0.0/16), UE_GATEWAY_CIDR (10.45.0.1/16);
# UPF_NAT=0 leaves the NAT out (SECFN=none, docs/secfn.md: the N6 server routes the UEs back).
set -euo pipefail

readonly NFT_TABLE=testbed_upf

usage() {
  echo "usage: upf.sh <upf.yaml>   (env OGSTUN, UE_SUBNET, UE_GATEWAY_CIDR)"
}

die() {
  echo "upf.sh: $*" >&2
  exit 1
}

setup_tun() {
  if ! ip link show dev "$OGSTUN" >/dev/null 2>&1; then
    ip tuntap add name "$OGSTUN" mode tun \
      || die "cannot create TUN $OGSTUN: the upf container needs cap_add NET_ADMIN and /dev/net/tun"
  fi
  ip addr replace "$UE_GATEWAY_CIDR" dev "$OGSTUN"
  ip link set "$OGSTUN" up
}

setup_nat() {
  if command -v nft >/dev/null 2>&1; then
    nft delete table ip "$NFT_TABLE" 2>/dev/null || true
    nft -f - <<NFT
table ip $NFT_TABLE {
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    ip saddr $UE_SUBNET oifname != "$OGSTUN" masquerade
  }
}
NFT
  elif command -v iptables >/dev/null 2>&1; then
    iptables -t nat -C POSTROUTING -s "$UE_SUBNET" ! -o "$OGSTUN" -j MASQUERADE 2>/dev/null \
      || iptables -t nat -A POSTROUTING -s "$UE_SUBNET" ! -o "$OGSTUN" -j MASQUERADE
  else
    die "neither nft nor iptables in the open5gs image: UE traffic cannot be NATed toward n6 (rebuild with \`make build\`)"
  fi
}

main() {
  case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    ""|-*) usage >&2; exit 2 ;;
  esac
  local config="$1"
  : "${OGSTUN:?set OGSTUN}" "${UE_SUBNET:?set UE_SUBNET}" "${UE_GATEWAY_CIDR:?set UE_GATEWAY_CIDR}"
  [[ -r "$config" ]] || die "config $config not readable (is the render dir mounted?)"
  if [[ "$(cat /proc/sys/net/ipv4/ip_forward)" != 1 ]]; then
    echo "upf.sh: warning: net.ipv4.ip_forward is 0 in this namespace; UE traffic will not be routed" >&2
  fi
  setup_tun
  if [[ "${UPF_NAT:-1}" == 1 ]]; then
    setup_nat
    echo "upf.sh: $OGSTUN has $UE_GATEWAY_CIDR, NAT for $UE_SUBNET toward non-$OGSTUN interfaces" >&2
  else
    echo "upf.sh: $OGSTUN has $UE_GATEWAY_CIDR, no NAT (UPF_NAT=$UPF_NAT)" >&2
  fi
  exec open5gs-upfd -c "$config"
}

main "$@"
