#!/usr/bin/env bash
# rehandshake.sh [DIR] PEER_ADDRESS: one fresh WireGuard handshake with the peer whose allowed IPs
# hold PEER_ADDRESS, in the current network namespace: the peer is set up afresh (session forgotten,
# configuration kept) and a datagram to its discard port makes WireGuard initiate; returns once the
# peer's latest handshake is newer than before. With Rosenpass running here (the wireguard-rosenpass
# profile), first one fresh Rosenpass exchange: the peer's pre-shared key replaced by a random one
# (no handshake can complete with a stale key), the daemon restarted by its supervisor
# (wireguard/entrypoint.sh), and wait until it set the new key: the cold path, Rosenpass then
# WireGuard. Prints `rehandshake <peer> <us> us`. The handshake micro-benchmark's initiator
# (testbed/contract.py rehandshake); docs/overlays/wireguard.md.
set -euo pipefail

die() { echo "rehandshake.sh: $*" >&2; exit 1; }
RUN_DIR="$(dirname "${OVERLAY_READY_FILE:-/run/testbed/overlay-ready}")"

# wait_until SECONDS CMD...: CMD every 2 ms until it succeeds (the handshake takes milliseconds)
wait_until() {
    local deadline=$(( $(date +%s%N) + $1 * 1000000000 ))
    shift
    until "$@"; do
        (( $(date +%s%N) < deadline )) || return 1
        sleep 0.002
    done
}

psk_is() { [[ "$(wg show "$ifc" preshared-keys | awk -v k="$key" '$1 == k { print $2 }')" != "$1" ]]; }
newer() { (( $(wg show "$ifc" latest-handshakes | awk -v k="$key" '$1 == k { print $2 }') > before )); }

main() {
    local peer="${2:-${1:?usage: rehandshake.sh [DIR] PEER_ADDRESS}}" ifc="" key="" i ips endpoint before t0 t1 random psk
    for i in $(wg show interfaces); do
        key="$(wg show "$i" allowed-ips | awk -v a="$peer/32" '{ for (n = 2; n <= NF; n++) if ($n == a) print $1 }')"
        [[ -n "$key" ]] && { ifc="$i"; break; }
    done
    [[ -n "$ifc" ]] || die "no WireGuard peer with allowed IP $peer here"
    ips="$(wg show "$ifc" allowed-ips | awk -v k="$key" '$1 == k { $1 = ""; print }' | xargs | tr ' ' ',')"
    endpoint="$(wg show "$ifc" endpoints | awk -v k="$key" '$1 == k { print $2 }')"
    t0="$(date +%s%N)"
    if [[ -f "$RUN_DIR/rosenpass.pid" ]]; then
        random="$(wg genpsk)"
        wg set "$ifc" peer "$key" preshared-key <(echo "$random")
        touch "$RUN_DIR/rosenpass.restart"
        kill "$(cat "$RUN_DIR/rosenpass.pid")" || die "could not restart rosenpass"
        wait_until 30 psk_is "$random" || die "no new Rosenpass key for $peer within 30 s"
    fi
    psk="$(wg show "$ifc" preshared-keys | awk -v k="$key" '$1 == k { print $2 }')"
    wg set "$ifc" peer "$key" remove
    # the peer comes back with its pre-shared key (Rosenpass's): removing a peer drops it
    if [[ "$psk" == "(none)" ]]; then
        wg set "$ifc" peer "$key" endpoint "$endpoint" allowed-ips "$ips"
    else
        wg set "$ifc" peer "$key" endpoint "$endpoint" allowed-ips "$ips" preshared-key <(echo "$psk")
    fi
    # the peer added afresh has no handshake (latest 0): any time now is the new one. Compared with the
    # time before the removal instead, a handshake in the same second as the previous one (latest
    # handshakes are whole seconds; back-to-back in the benchmark) was never seen as newer
    before=0
    # the datagram may precede the handshake: WireGuard stages it and initiates
    until newer; do
        { printf 'x' >"/dev/udp/${peer}/9"; } 2>/dev/null || true
        wait_until 1 newer && break
        (( $(date +%s%N) - t0 < 30000000000 )) || die "no WireGuard handshake with $peer within 30 s"
    done
    t1="$(date +%s%N)"
    echo "rehandshake $peer $(( (t1 - t0) / 1000 )) us"
}

main "$@"
