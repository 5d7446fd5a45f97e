#!/usr/bin/env bash
# Test traffic at the UE that each of the seed's rules matches, sent before the measured flows
# (docs/secfn.md): the same script in the stack's UE tools container and in the lab's UE
# namespace.
#
#   probe.sh SERVER [DROP_PORT [SOURCE]]
#
# ICMP echo (sids 1000004, 1000001), TCP to port 80 (1000002) and an established TCP
# exchange with port 445 (2094284), then one UDP datagram to DROP_PORT, which an inline engine
# must drop (sid 1000100). SOURCE: the UE's address, where the default route is not the PDU
# session's (UERANSIM routes only traffic from the UE's address into uesimtun0).
# Prints one line per probe; exit 0 even when a probe is blocked (the verdict is the capture's).
set -euo pipefail

main() {
  case "${1:-}" in
    -h | --help) echo "usage: probe.sh SERVER [DROP_PORT [SOURCE]]"; exit 0 ;;
    "" | -*) echo "usage: probe.sh SERVER [DROP_PORT [SOURCE]]" >&2; exit 2 ;;
  esac
  local server="$1" drop_port="${2:-9999}" source="${3:-}" port reply
  local ping_src=() bind=""
  if [[ -n "$source" ]]; then
    ping_src=(-I "$source")
    bind=",bind=$source"
  fi
  if ping -n -c 2 -i 0.2 -W 2 "${ping_src[@]}" "$server" >/dev/null 2>&1; then
    echo "probe: icmp echo to $server answered"
  else
    echo "probe: icmp echo to $server not answered"
  fi
  for port in 80 445; do
    reply="$(echo hello | timeout 5 socat -T 2 - "TCP:$server:$port$bind" 2>/dev/null || true)"
    echo "probe: tcp $server:$port replied '${reply}'"
  done
  echo probe | socat -u - "UDP-SENDTO:$server:$drop_port$bind"
  echo "probe: udp datagram sent to $server:$drop_port"
  # the last probe needs time to cross the UPF before anything reads the counters (pacing)
  sleep 0.5
}

main "$@"
