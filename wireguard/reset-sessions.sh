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

# With Rosenpass (wireguard-rosenpass: its daemon's pid file in this namespace's /run/testbed), the
# key the cold attach uses is made after the reset: toward every peer this end initiates with (an
# `endpoint` in the daemon's command line; the other end only responds, wireguard/entrypoint.sh
# start_rosenpass) the pre-shared key is replaced by a random one (no handshake completes until
# Rosenpass has made the new key) and the daemon is restarted by its supervisor, which initiates at
# once; the script returns when those keys are new (RP_RESET_TIMEOUT s at most).
# wireguard/run_checks.py then requires a complete Rosenpass exchange after the reset.
# Only the initiating end's keys are replaced: run-sbi resets the holders one after another, and a
# responder's random key would stay until the initiator's next rekey (130 s): in the guest the N2
# association was lost that way, and tests/integration/test_wireguard_rosenpass_netns.py saw the
# tunnel dark for over 60 s. This runs after the sessions are reset, since `wg setconf` restores the
# keys `wg showconf` saw and would undo a key the daemon had set in between.
RP_RESET_TIMEOUT="${RP_RESET_TIMEOUT:-180}"

# initiated_peers PID: the WireGuard keys of the peers the daemon PID has an endpoint for
# ("peer public-key F [endpoint A] wireguard IF KEY", one block per peer).
initiated_peers() {
    tr '\0' '\n' <"/proc/$1/cmdline" | awk '
        $0 == "peer" { ep = 0 } $0 == "endpoint" { ep = 1 }
        prev == "wireguard" { ifc = $0 } prev2 == "wireguard" && ep { print ifc, $0 }
        { prev2 = prev; prev = $0 }'
}

reset_rosenpass() {
    local run_dir=/run/testbed pid ifc peer psk left deadline
    [[ -f "$run_dir/rosenpass.pid" ]] || return 0
    pid="$(cat "$run_dir/rosenpass.pid")"
    local -A random=()
    while read -r ifc peer; do
        [[ -n "$peer" ]] || continue
        psk="$(wg genpsk)"
        wg set "$ifc" peer "$peer" preshared-key <(echo "$psk")
        random["$ifc $peer"]="$psk"
    done < <(initiated_peers "$pid")
    # an end that only responds keeps its daemon: restarting it would lose an exchange in flight
    # (its InitConf not yet read) and makes nothing new
    (( ${#random[@]} )) || return 0
    touch "$run_dir/rosenpass.restart"
    kill "$pid"
    deadline=$(( $(date +%s) + RP_RESET_TIMEOUT ))
    while :; do
        left=""
        for key in "${!random[@]}"; do
            psk="$(wg show "${key% *}" preshared-keys | awk -v k="${key#* }" '$1 == k { print $2 }')"
            [[ "$psk" != "${random[$key]}" ]] || left+="${key#* } "
        done
        [[ -n "$left" ]] || return 0
        (( $(date +%s) < deadline )) || {
            echo "reset-sessions.sh: no new Rosenpass key within ${RP_RESET_TIMEOUT}s for: ${left}($(tail -n 3 "$run_dir/rosenpass.log" 2>/dev/null | tr '\n' ' '))" >&2
            exit 1; }
        sleep 0.05
    done
}

main() {
    local ifc conf peer began
    command -v wg >/dev/null || { echo "reset-sessions.sh: wg not found" >&2; exit 1; }
    began="$(date +%s)"
    for ifc in $(wg show interfaces); do
        conf="$(mktemp)"
        wg showconf "$ifc" >"$conf"
        for peer in $(wg show "$ifc" peers); do
            wg set "$ifc" peer "$peer" remove
        done
        wg setconf "$ifc" "$conf"
        rm -f "$conf"
    done
    reset_rosenpass
    printf '%s %s\n' "$(date +%s)" "$began"
    wg show all latest-handshakes
}

main "$@"
