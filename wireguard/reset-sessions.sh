#!/usr/bin/env bash
# reset-sessions.sh: forget every WireGuard session in this network namespace and keep the
# configuration (each interface's peers are removed and set again from its own `wg showconf`), so
# the next packet to a peer starts a fresh handshake. run-sbi calls it in every holder right before
# the cold UE: a WireGuard "cold" attach then includes its handshakes whatever time passed since
# the holders started (REKEY/REJECT_AFTER_TIME would otherwise decide). Prints one line with the
# time after the reset and the time it began (unix s), then `wg show all latest-handshakes`: every
# peer 0, unless the live core (an NF's NRF heartbeat) made a new session in between, whose time is
# then not before the reset began. Docs: docs/overlays/wireguard.md.
set -euo pipefail

# With Rosenpass (wireguard-rosenpass: its daemon's pid file in this namespace's /run/testbed), a
# cold start includes its first exchange too: every peer's pre-shared key is replaced by a random one
# (no handshake completes until Rosenpass has made the new key) and the daemon is restarted by its
# supervisor (wireguard/entrypoint.sh), which exchanges at once; wireguard/run_checks.py then
# requires a complete Rosenpass exchange after the reset in the iteration's capture.
reset_rosenpass() {
    local run_dir=/run/testbed ifc peer
    [[ -f "$run_dir/rosenpass.pid" ]] || return 0
    for ifc in $(wg show interfaces); do
        for peer in $(wg show "$ifc" peers); do
            wg set "$ifc" peer "$peer" preshared-key <(wg genpsk)
        done
    done
    touch "$run_dir/rosenpass.restart"
    kill "$(cat "$run_dir/rosenpass.pid")"
}

main() {
    local ifc conf peer began
    command -v wg >/dev/null || { echo "reset-sessions.sh: wg not found" >&2; exit 1; }
    began="$(date +%s)"
    reset_rosenpass
    for ifc in $(wg show interfaces); do
        conf="$(mktemp)"
        wg showconf "$ifc" >"$conf"
        for peer in $(wg show "$ifc" peers); do
            wg set "$ifc" peer "$peer" remove
        done
        wg setconf "$ifc" "$conf"
        rm -f "$conf"
    done
    printf '%s %s\n' "$(date +%s)" "$began"
    wg show all latest-handshakes
}

main "$@"
