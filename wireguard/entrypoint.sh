#!/usr/bin/env bash
# WireGuard overlay entrypoint (docs/contracts.md, "Overlays"): the same script runs in the
# containers' network-namespace holders and in the namespace tests.
#
# Brings up one WireGuard interface in the current network namespace from a rendered config
# dir (wireguard/overlay.py), steers plaintext traffic to the peers' real addresses
# into it by fwmark policy routing (the tunnel's own UDP packets carry the fwmark and use the
# main table), waits with a deadline until a handshake with every peer has completed (started by
# the end of each pair whose node name sorts first), prints
# and writes the datapath line, and stays in the foreground until SIGTERM, when it removes
# the rule, the routes and the interface.
set -euo pipefail

PROG="wireguard/entrypoint.sh"
READY_FILE="${OVERLAY_READY_FILE:-/run/testbed/overlay-ready}"
DATAPATH_CHOICE="${WIREGUARD_DATAPATH:-auto}"   # auto | kernel | wireguard-go
WG_GO_PID=""
LINK_CREATED=0
RULE_ADDED=0
DATAPATH=""
PRIVATE_RUN=0
CONFIG_DIR=""
TIMEOUT=""
NFT_TABLE="testbed_wireguard"
FILTER_LOADED=0
EGRESS_LOADED=0
RP_SUP_PID=""           # the Rosenpass supervisor (profile wireguard-rosenpass: WG_ROSENPASS=1)
RP_RULES=0

usage() {
    cat <<'USAGE'
usage: wireguard/entrypoint.sh [--private-run] [--datapath auto|kernel|wireguard-go]
                               [--timeout SECONDS] NODE_CONFIG_DIR

Starts the WireGuard overlay in the current network namespace from NODE_CONFIG_DIR
(rendered by wireguard/overlay.py: overlay.env + wg.conf): a fail-closed nftables
filter (nothing to a peer leaves outside the tunnel), the interface, fwmark policy routing
of the peers' real addresses into it, the keys and peers. Waits until every peer has
completed a handshake (deadline: --timeout, default WG_READY_TIMEOUT of overlay.env), prints
`datapath: wireguard=kernel|wireguard-go`, writes the ready file (same line + handshakes)
and stays in the foreground until SIGTERM/SIGINT, when it removes everything it added but the
filter (fail closed: nothing to a peer leaves in the clear while the namespace lives).

  --private-run  re-exec in a private mount namespace with its own tmpfs /run (several
                 wireguard-go instances on one machine: their UAPI sockets live in /run)
  --datapath     kernel = `ip link add type wireguard`; wireguard-go = userspace via TUN;
                 auto (default) = kernel if the host offers it (env WIREGUARD_DATAPATH)
  --timeout      readiness deadline in seconds

Environment: OVERLAY_READY_FILE (default /run/testbed/overlay-ready).
Needs CAP_NET_ADMIN, and /dev/net/tun for wireguard-go.
Exit: 0 after SIGTERM, 1 failure, 2 usage error, 130 interrupt.
USAGE
}

log() { printf '%s %s[%s]: %s\n' "$(date -u +%H:%M:%S)" "wireguard" "${WG_NODE:-?}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# wait_for SECONDS DESCRIPTION CMD...: poll CMD every 0.1 s until it succeeds or the deadline passes.
wait_for() {
    local seconds="$1" what="$2" deadline
    shift 2
    deadline=$(( $(date +%s%N) + seconds * 1000000000 ))
    until "$@" >/dev/null 2>&1; do
        if (( $(date +%s%N) >= deadline )); then
            log "gave up after ${seconds}s waiting for ${what}"
            return 1
        fi
        sleep 0.1
    done
}

load_config() {
    local dir="$1" var
    [[ -d "$dir" ]] || die "config dir ${dir} does not exist: run \`make render PROFILE=wireguard\`"
    [[ -r "${dir}/overlay.env" && -r "${dir}/wg.conf" ]] \
        || die "${dir} lacks overlay.env or wg.conf: run \`make render PROFILE=wireguard\`"
    # shellcheck source=/dev/null
    source "${dir}/overlay.env"
    for var in WG_NODE WG_PLANE WG_IF WG_ADDRESS WG_PEERS WG_FWMARK WG_TABLE WG_RULE_PREF WG_MTU WG_READY_TIMEOUT; do
        [[ -n "${!var:-}" ]] || die "${dir}/overlay.env does not set ${var}: re-render it"
    done
    WG_CONF="${dir}/wg.conf"
}

check_namespace() {
    # Docker may attach a container's second network a moment after its process starts (seen
    # with `compose up --no-start` then `up`): wait for the addresses with a deadline, then fail
    local deadline=$(( $(date +%s) + ${WG_ADDRESS_TIMEOUT:-20} )) addr
    for addr in ${WG_ADDRESSES:-$WG_ADDRESS}; do
        until ip -o -4 addr show | grep -qF " ${addr}/"; do
            (( $(date +%s) < deadline )) \
                || die "address ${addr} (${WG_NODE} on ${WG_PLANE}) is not on any interface here after ${WG_ADDRESS_TIMEOUT:-20}s: is this the node's namespace?"
            sleep 0.2
        done
    done
    ! ip link show "$WG_IF" >/dev/null 2>&1 \
        || die "interface ${WG_IF} already exists in this namespace: stop the other overlay first"
    ! ip rule show pref "$WG_RULE_PREF" | grep -q . \
        || die "an ip rule with preference ${WG_RULE_PREF} already exists here: stop the other overlay first"
    ! nft list table inet "$NFT_TABLE" >/dev/null 2>&1 \
        || die "nftables table inet ${NFT_TABLE} exists: the WireGuard overlay ran in this namespace before (its fail-closed filter stays) or runs now; start from a fresh namespace"
    ! nft list table netdev "${NFT_TABLE}_egress" >/dev/null 2>&1 \
        || die "nftables table netdev ${NFT_TABLE}_egress exists: the WireGuard overlay ran in this namespace before (its fail-closed filter stays) or runs now; start from a fresh namespace"
}

# Decrypted packets arrive on the WireGuard interface from a peer whose address the main table
# routes via the bridge; strict reverse-path filtering (rp_filter=1) would drop them.
check_rp_filter() {
    local dev all one=0 addr x
    all="$(cat /proc/sys/net/ipv4/conf/all/rp_filter)"
    for addr in ${WG_ADDRESSES:-$WG_ADDRESS}; do
        dev="$(ip -o -4 addr show | awk -v a="${addr}/" 'index($4, a) == 1 { print $2; exit }')"
        x="$(cat "/proc/sys/net/ipv4/conf/${dev}/rp_filter")"
        (( x == 1 )) && one=1
    done
    if (( all == 1 || (one == 1 && all == 0) )); then
        echo 2 >/proc/sys/net/ipv4/conf/all/rp_filter 2>/dev/null \
            || die "strict rp_filter would drop tunnelled packets and /proc/sys is read-only: set the sysctl net.ipv4.conf.all.rp_filter=2 for this container (compose sysctls)"
        log "set net.ipv4.conf.all.rp_filter=2 (loose) so tunnelled packets pass"
    fi
}

# Fail closed: a packet to a peer's real address that would leave through any interface but
# the tunnel is dropped, unless it is WireGuard's own (fwmark) UDP. So a routing mistake, or
# the moment between the rule's removal and the NF's stop, cannot put plaintext on the wire.
load_filter() {
    local peers="" peer
    command -v nft >/dev/null || die "nft (nftables) not found: needed for the fail-closed filter (tools image / sudo make host-tools)"
    for peer in $WG_PEERS; do peers+="${peers:+, }${peer#*=}"; done
    # Rosenpass's own UDP exchange (its port, both directions) goes outside the tunnel too
    local rp=""
    [[ "${WG_ROSENPASS:-0}" != 1 ]] || rp="oifname != \"${WG_IF}\" ip daddr { ${peers} } udp dport ${RP_PORT} accept
        oifname != \"${WG_IF}\" ip daddr { ${peers} } udp sport ${RP_PORT} accept"
    # A peer's InitHello that arrives before this end's rosenpass listens draws an ICMP port
    # unreachable, and that ICMP is routed into the tunnel: it would start a WireGuard handshake
    # before the pair's pre-shared key is set, and the session it makes carries no post-quantum
    # key (seen in tests/integration/test_wireguard_rosenpass_netns.py's SBI mesh). Such errors
    # (their quoted datagram's destination port is Rosenpass's: 8 B ICMP + 20 B IP + 2 B into
    # the UDP header = bit 240) are dropped; rosenpass retransmits anyway.
    local rp_icmp=""
    [[ "${WG_ROSENPASS:-0}" != 1 ]] || rp_icmp="chain rosenpass_icmp {
        type filter hook output priority 0; policy accept;
        oifname \"${WG_IF}\" icmp type destination-unreachable @th,240,16 ${RP_PORT} counter drop
    }"
    nft -f - <<NFT || die "could not load the nftables filter table inet ${NFT_TABLE}"
table inet ${NFT_TABLE} {
    chain output {
        type filter hook output priority 0; policy accept;
        ${rp}
        oifname != "${WG_IF}" ip daddr { ${peers} } meta mark != ${WG_FWMARK} counter drop
    }
    ${rp_icmp}
}
NFT
    FILTER_LOADED=1
    load_egress_filter "$peers"
}

# load_egress_filter PEERS: the same drop in each device's egress hook (every device here but lo;
# the tunnel's own is created later): a drop in the output hook is EPERM to the sending socket (an
# NF or nr-gnb sees a send error, nr-gnb aborts on it), one at egress is a lost packet at most.
# The egress table is in before the output chain goes: closed throughout. Without the egress hook
# (Linux < 5.16) the output chain stays (closed, with EPERM), said once.
load_egress_filter() {
    local peers="$1" dev chains="" i=0 rp=""
    # Rosenpass's own UDP (its port, both directions) leaves outside the tunnel here too
    [[ "${WG_ROSENPASS:-0}" != 1 ]] || rp="ip daddr { ${peers} } udp dport ${RP_PORT} accept; ip daddr { ${peers} } udp sport ${RP_PORT} accept; "
    for dev in $(ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'); do
        [[ "$dev" == lo || "$dev" == "$WG_IF" ]] && continue
        chains+="    chain out$i { type filter hook egress device \"$dev\" priority 0; policy accept; ${rp}ip daddr { ${peers} } meta mark != ${WG_FWMARK} counter drop; }"$'\n'
        i=$((i + 1))
    done
    [[ -n "$chains" ]] || return 0
    if nft -f - <<NFT
table netdev ${NFT_TABLE}_egress {
${chains}}
NFT
    then
        EGRESS_LOADED=1
        nft delete chain inet "$NFT_TABLE" output || die "cannot remove the output-hook drop (nft delete chain inet ${NFT_TABLE} output)"
    else
        log "WARNING: no netfilter egress hook here (Linux 5.16+): the drop stays in the output hook, so a sender whose packet it drops gets EPERM"
    fi
}

# uapi_listening: wireguard-go's UAPI socket for WG_IF listens. Read from the socket table, not
# probed with `wg`: a `wg` that connects between wireguard-go's bind and listen gets
# ECONNREFUSED and unlinks the socket as stale, and wireguard-go then fails ("Failed to listen on
# uapi socket").
uapi_listening() {
    ss -xlnH | awk -v p="/wireguard/${WG_IF}.sock" 'index($5, p) { found = 1 } END { exit !found }'
}

create_link() {
    if [[ "$DATAPATH_CHOICE" != "wireguard-go" ]] && ip link add "$WG_IF" type wireguard 2>/dev/null; then
        DATAPATH="kernel"
    elif [[ "$DATAPATH_CHOICE" == "kernel" ]]; then
        die "WIREGUARD_DATAPATH=kernel but \`ip link add ${WG_IF} type wireguard\` failed: load the wireguard module on the host (modprobe wireguard) or use auto"
    else
        command -v wireguard-go >/dev/null || die "no kernel WireGuard and no wireguard-go: install wireguard-go (tools image / sudo make host-tools)"
        [[ -c /dev/net/tun ]] || die "wireguard-go needs /dev/net/tun: add it to the container's devices"
        WG_PROCESS_FOREGROUND=1 wireguard-go -f "$WG_IF" &
        WG_GO_PID=$!
        # ready when its UAPI socket (where `wg` reaches it) listens, which comes after the link
        wait_for 10 "wireguard-go to create ${WG_IF}" uapi_listening \
            || die "wireguard-go did not create ${WG_IF} (needs CAP_NET_ADMIN and /dev/net/tun)"
        DATAPATH="wireguard-go"
    fi
    LINK_CREATED=1
    echo "datapath: wireguard=${DATAPATH}"
}

# route_src ADDR: this node's source address for the route to a peer address (WG_ROUTE_SRC
# "peer=own ..." of a multi-plane render: the own address on the peer's plane), else WG_ADDRESS.
route_src() {
    local pair
    for pair in ${WG_ROUTE_SRC:-}; do
        [[ "${pair%%=*}" == "$1" ]] && { echo "${pair#*=}"; return 0; }
    done
    echo "$WG_ADDRESS"
}

# Keys and the listening port come before the rule that steers traffic to the peers into the
# tunnel. The other way round, a peer's early handshake initiation drew an ICMP port-unreachable
# that the rule sent into the tunnel, and that packet made this end initiate too (a crossed
# handshake, see `probes`). Nothing leaves in the clear meanwhile: the nftables filter loaded
# first drops every packet to a peer outside the tunnel, that error included.
configure() {
    local peer addr
    ip link set "$WG_IF" mtu "$WG_MTU" up
    wg setconf "$WG_IF" "$WG_CONF"
    for peer in $WG_PEERS; do
        addr="${peer#*=}"
        ip route replace "${addr}/32" dev "$WG_IF" src "$(route_src "$addr")" table "$WG_TABLE"
    done
    if [[ "${WG_ROSENPASS:-0}" == 1 ]]; then
        # Rosenpass's UDP to and from its port takes the main table, never the tunnel: it makes the
        # key the tunnel's handshake needs (and is its own post-quantum protection)
        ip rule add ipproto udp dport "$RP_PORT" table main pref $((WG_RULE_PREF - 2))
        ip rule add ipproto udp sport "$RP_PORT" table main pref $((WG_RULE_PREF - 1))
        RP_RULES=1
    fi
    ip rule add not fwmark "$WG_FWMARK" table "$WG_TABLE" pref "$WG_RULE_PREF"
    RULE_ADDED=1
}

# start_rosenpass DIR: the Rosenpass daemon (`rosenpass exchange`), one peer per partner, each
# with `wireguard <if> <peer key>` so the daemon sets that peer's pre-shared key itself on every
# exchange (every 2 minutes); the end whose node name sorts first gets the partner's endpoint and
# initiates, the other responds (as the WireGuard probes). Under a supervisor that restarts it only
# when wireguard/reset-sessions.sh asked for it (RUN/rosenpass.restart): a cold reset.
start_rosenpass() {
    local dir="$1" run_dir peer name rest addr wgpk args=()
    command -v rosenpass >/dev/null || die "WG_ROSENPASS=1 but no rosenpass program (tools image; host: make rosenpass)"
    run_dir="$(dirname "$READY_FILE")"
    mkdir -p "$run_dir"
    args=(exchange public-key "$dir/rosenpass/self.pk" secret-key "$dir/rosenpass/self.sk" listen "0.0.0.0:${RP_PORT}" verbose)
    for peer in $RP_PEERS; do
        name="${peer%%=*}" rest="${peer#*=}"
        addr="${rest%%=*}" wgpk="${rest#*=}"
        args+=(peer public-key "$dir/rosenpass/${name}.pk")
        probes "$name=$addr" && args+=(endpoint "${addr}:${RP_PORT}")
        args+=(wireguard "$WG_IF" "$wgpk")
    done
    rm -f "$run_dir/rosenpass.restart"
    (
        while :; do
            rosenpass "${args[@]}" >>"$run_dir/rosenpass.log" 2>&1 &
            echo "$!" >"$run_dir/rosenpass.pid"
            wait "$!" || true
            [[ -f "$run_dir/rosenpass.restart" ]] || exit 1
            rm -f "$run_dir/rosenpass.restart"
        done
    ) &
    RP_SUP_PID=$!
    log "rosenpass started ($(rosenpass --version 2>/dev/null | head -n 1 || echo rosenpass)), UDP ${RP_PORT}, $(wc -w <<<"$RP_PEERS") peer(s)"
}

# stack_wait_s: how long to wait for a peer whose holder may not have started yet: the stack's own
# bring-up deadline for its holders (STACK_UP_TIMEOUT, from scripts/up.sh), WG_READY_TIMEOUT when
# that is longer or the stack gave none.
stack_wait_s() {
    echo $(( ${STACK_UP_TIMEOUT:-0} > WG_READY_TIMEOUT ? ${STACK_UP_TIMEOUT:-0} : WG_READY_TIMEOUT ))
}

# wait_psks: every peer's pre-shared key set by Rosenpass before any WireGuard handshake is asked
# for: the first handshake already mixes the post-quantum key in. A key needs the peer's rosenpass
# up, so the wait is the stack's for its holders (STACK_UP_TIMEOUT, as wait_handshakes gives a peer
# never heard from; WG_READY_TIMEOUT when longer or without it): in the guest, udm's holder gave up
# after a fixed 60 s from its own start while its peers' holders were still starting.
wait_psks() {
    local wait_s
    wait_s="$(stack_wait_s)"
    local deadline=$(( $(date +%s) + wait_s )) missing
    while :; do
        missing="$(wg show "$WG_IF" preshared-keys | awk '$2 == "(none)" { print $1 }')"
        [[ -z "$missing" ]] && { log "rosenpass: every peer's pre-shared key is set"; return 0; }
        kill -0 "$RP_SUP_PID" 2>/dev/null || die "rosenpass exited: $(tail -n 5 "$(dirname "$READY_FILE")/rosenpass.log" | tr '\n' ' ')"
        (( $(date +%s) < deadline )) \
            || die "no Rosenpass key within ${wait_s}s for: $(tr '\n' ' ' <<<"$missing")- is the partner's overlay up and UDP ${RP_PORT} reachable? ($(tail -n 3 "$(dirname "$READY_FILE")/rosenpass.log" | tr '\n' ' '))"
        sleep 0.05
    done
}

# peer_key ADDR: the public key of the peer whose allowed IPs hold ADDR.
peer_key() {
    wg show "$WG_IF" allowed-ips | awk -v a="$1/32" '{ for (i = 2; i <= NF; i++) if ($i == a) print $1 }'
}

# missing_handshakes: print "name=addr" of every peer without a completed handshake.
missing_handshakes() {
    local peer key ts
    for peer in $WG_PEERS; do
        key="$(peer_key "${peer#*=}")"
        ts="$(wg show "$WG_IF" latest-handshakes | awk -v k="$key" '$1 == k { print $2 }')"
        [[ -n "$ts" && "$ts" != "0" ]] || echo "$peer"
    done
}

# probes PEER: true if this end starts the handshake with PEER ("name=addr"): the end whose
# node name sorts first. Both ends compare the same two names, so exactly one probes, also when
# a pair shares several planes (one WireGuard peer, several addresses). When both ends sent at
# once, both initiated; with crossed initiations wireguard-go (0.0.20220316 here) sometimes kept
# a session in which one end's packets did not decrypt at the other although both showed a
# handshake: one direction dead until WireGuard's own re-handshake 15 s later (seen as a lost
# ping after readiness, about one SBI lab in 90 on a loaded host).
probes() {
    local LC_ALL=C     # byte order: both ends agree whatever their locales
    [[ "$WG_NODE" < "${1%%=*}" ]]
}

# rearm KEY: set one peer up afresh (removed, then added with its endpoint and allowed IPs), so
# its handshake state is forgotten and the next datagram initiates at once. WireGuard itself
# sends at most one initiation per 5 s, and the first is lost when the other end's interface
# was not up yet; the other end does not initiate (see `probes`).
rearm() {
    local key="$1" ips endpoint psk
    ips="$(wg show "$WG_IF" allowed-ips | awk -v k="$key" '$1 == k { $1 = ""; print }' | xargs | tr ' ' ',')"
    endpoint="$(wg show "$WG_IF" endpoints | awk -v k="$key" '$1 == k { print $2 }')"
    [[ -n "$ips" && -n "$endpoint" ]] || die "peer ${key} has no allowed IPs or endpoint in ${WG_IF}"
    psk="$(wg show "$WG_IF" preshared-keys | awk -v k="$key" '$1 == k { print $2 }')"
    wg set "$WG_IF" peer "$key" remove || die "could not remove peer ${key} from ${WG_IF} to set it up afresh"
    # back with its pre-shared key (Rosenpass's), which removing the peer drops
    if [[ "$psk" == "(none)" || -z "$psk" ]]; then
        wg set "$WG_IF" peer "$key" endpoint "$endpoint" allowed-ips "$ips"
    else
        wg set "$WG_IF" peer "$key" endpoint "$endpoint" allowed-ips "$ips" preshared-key <(echo "$psk")
    fi || die "could not add peer ${key} (${endpoint}, ${ips}) back to ${WG_IF}"
}

# A datagram to a peer's discard port makes WireGuard initiate the handshake (no ping needed);
# the other end only waits: the first data packet on the new session (the datagram, or the
# initiator's keepalive) completes its handshake. An attempt without an answer is set up afresh
# after 0.25 s, then after twice as long each time up to 4 s (a handshake takes milliseconds
# here; a loaded host gets the longer waits).
#
# How long: a peer is given WG_READY_TIMEOUT from when it was first heard from (anything of it
# arrived: `wg show transfer`), so a late starter gets the whole time; one never heard from is
# waited for as long as the stack waits for its holders (STACK_UP_TIMEOUT, the bring-up deadline
# scripts/up.sh hands the holders; only WG_READY_TIMEOUT without it), counted from this end's
# start. Under load the holders start tens of seconds apart (the guest: 47 and 53 s), and a fixed
# deadline from the waiting end's own start gave up on peers that were merely late. The message
# says which peers were never heard from and which were but did not complete a handshake.
wait_handshakes() {
    local start missing peer key now wait_s never heard
    local -A began=() wait_ms=() seen=()
    start=$(date +%s)
    wait_s="$(stack_wait_s)"
    while :; do
        missing="$(missing_handshakes)"
        [[ -z "$missing" ]] && return 0
        now=$(date +%s)
        for peer in $missing; do
            key="$(peer_key "${peer#*=}")"
            [[ -n "${seen[$key]:-}" ]] || ! heard_from "$key" || seen[$key]=$now
        done
        never="" heard=""
        for peer in $missing; do
            key="$(peer_key "${peer#*=}")"
            if [[ -z "${seen[$key]:-}" ]]; then
                (( now - start >= wait_s )) && never+="${never:+ }$peer"
            elif (( now - seen[$key] >= WG_READY_TIMEOUT && now - start >= WG_READY_TIMEOUT )); then
                heard+="${heard:+ }$peer"
            fi
        done
        if [[ -n "$never$heard" ]]; then
            die "no WireGuard handshake within $([[ -n "$never" ]] && echo "$wait_s" || echo "$WG_READY_TIMEOUT")s with: $(echo "$missing" | tr '\n' ' ')-${never:+ never heard from (their overlay never started, or nothing of it arrives here): ${never};}${heard:+ heard from but no handshake completed within ${WG_READY_TIMEOUT}s: ${heard};} is their overlay up and UDP ${WG_LISTEN_PORT:-51820} reachable? ($(wg show "$WG_IF" | tr '\n' ' '))"
        fi
        now=$(( $(date +%s%N) / 1000000 ))
        for peer in $missing; do
            probes "$peer" || continue
            key="$(peer_key "${peer#*=}")"
            if [[ -z "${began[$key]:-}" ]]; then
                began[$key]=$now
                wait_ms[$key]=250
            elif (( now - began[$key] >= wait_ms[$key] )); then
                rearm "$key"
                began[$key]=$now
                wait_ms[$key]=$(( wait_ms[$key] < 4000 ? wait_ms[$key] * 2 : 4000 ))
            fi
            { printf 'x' >"/dev/udp/${peer#*=}/9"; } 2>/dev/null || true
        done
        sleep 0.1
    done
}

# heard_from KEY: something of the peer with public key KEY arrived (a handshake message counts).
heard_from() {
    wg show "$WG_IF" transfer | awk -v k="$1" '$1 == k && $2 > 0 { found = 1 } END { exit !found }'
}

write_ready() {
    local tmp
    mkdir -p "$(dirname "$READY_FILE")"
    tmp="${READY_FILE}.tmp.$$"
    {
        echo "datapath: wireguard=${DATAPATH}"
        echo "node: ${WG_NODE} plane: ${WG_PLANE} interface: ${WG_IF} address: ${WG_ADDRESSES:-$WG_ADDRESS}"
        wg show "$WG_IF" latest-handshakes
    } >"$tmp"
    mv "$tmp" "$READY_FILE"
}

# exited PID: true once PID is gone or a zombie (kill -0 still succeeds on an unreaped child).
exited() {
    local state
    state="$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" || return 0
    [[ -z "$state" || "$state" == Z ]]
}

teardown() {
    local rc=$?
    trap - EXIT INT TERM
    # Every step here must tolerate failure: under `set -e` one failing command would end the
    # teardown half done (with the table, the link and wireguard-go left behind).
    stop_idler
    rm -f "$READY_FILE"
    if [[ -n "$RP_SUP_PID" ]]; then
        kill "$RP_SUP_PID" 2>/dev/null || true
        kill "$(cat "$(dirname "$READY_FILE")/rosenpass.pid" 2>/dev/null)" 2>/dev/null || true
        wait "$RP_SUP_PID" 2>/dev/null || true
    fi
    if (( RP_RULES )); then
        ip rule del pref $((WG_RULE_PREF - 2)) 2>/dev/null || true
        ip rule del pref $((WG_RULE_PREF - 1)) 2>/dev/null || true
    fi
    if (( RULE_ADDED )); then
        ip rule del pref "$WG_RULE_PREF" 2>/dev/null || log "could not remove ip rule pref ${WG_RULE_PREF}"
        ip route flush table "$WG_TABLE" 2>/dev/null || true
    fi
    # wireguard-go first: it removes its TUN interface as it exits (deleting the link under
    # it instead makes it log an error)
    if [[ -n "$WG_GO_PID" ]]; then
        kill "$WG_GO_PID" 2>/dev/null || true
        wait_for 3 "wireguard-go (pid ${WG_GO_PID}) to exit" exited "$WG_GO_PID" \
            || kill -9 "$WG_GO_PID" 2>/dev/null || true
        wait "$WG_GO_PID" 2>/dev/null || true
    fi
    if (( LINK_CREATED )) && ip link show "$WG_IF" >/dev/null 2>&1; then
        ip link del "$WG_IF" 2>/dev/null || log "could not delete ${WG_IF}"
    fi
    # The filter stays (fail closed, as the IPsec and MACsec overlays do): without wg0 and the
    # policy routing, a packet to a partner would leave by the main table's route in the clear;
    # the egress drop takes it silently instead, whether this exit is a SIGTERM or wireguard-go's
    # death (run-overlay's leak captures found 31 pings in the clear after a kill when it went).
    if (( FILTER_LOADED || EGRESS_LOADED )); then
        log "kept: the fail-closed filter (nftables ${NFT_TABLE}): nothing to a partner leaves in the clear while this namespace lives"
    fi
    log "overlay removed (exit ${rc})"
    exit "$rc"
}

# stop_idler: end the kernel datapath's idle `sleep` (any background job but wireguard-go) and
# reap it, so no process is left in the namespace. Found by `jobs -p`, not by a saved PID: a
# signal can arrive between `sleep &` and the assignment of `$!`.
stop_idler() {
    local job
    for job in $(jobs -p); do
        [[ "$job" == "$WG_GO_PID" || "$job" == "$RP_SUP_PID" ]] && continue
        kill "$job" 2>/dev/null || true
        wait "$job" 2>/dev/null || true
    done
}

# Stay in the foreground without polling: `wait` returns when wireguard-go exits (a failure) or
# at once when SIGTERM/SIGINT arrives (the traps then exit through teardown).
run_foreground() {
    if [[ -n "$RP_SUP_PID" ]]; then
        # either daemon ending is a failure (a cold reset restarts rosenpass under its supervisor)
        wait -n ${WG_GO_PID:+"$WG_GO_PID"} "$RP_SUP_PID" || true
        die "$(kill -0 "$RP_SUP_PID" 2>/dev/null && echo wireguard-go || echo rosenpass) exited unexpectedly"
    fi
    if [[ -n "$WG_GO_PID" ]]; then
        wait "$WG_GO_PID" || true
        die "wireguard-go exited unexpectedly"
    fi
    while :; do
        sleep infinity &
        wait "$!" || true
    done
}

parse_args() {
    local orig=("$@") rest=() a
    while [[ $# -gt 0 ]]; do
        case "$1" in
            -h|--help) usage; exit 0 ;;
            --private-run) PRIVATE_RUN=1 ;;
            --in-private-run) PRIVATE_RUN=2 ;;
            --datapath) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; DATAPATH_CHOICE="$2"; shift ;;
            --timeout) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || { echo "${PROG}: --timeout needs whole seconds" >&2; exit 2; }; TIMEOUT="$2"; shift ;;
            -*) echo "${PROG}: unknown option $1" >&2; usage >&2; exit 2 ;;
            *) [[ -z "$CONFIG_DIR" ]] || { echo "${PROG}: one NODE_CONFIG_DIR only" >&2; exit 2; }; CONFIG_DIR="$1" ;;
        esac
        shift
    done
    [[ -n "$CONFIG_DIR" ]] || { usage >&2; exit 2; }
    case "$DATAPATH_CHOICE" in auto|kernel|wireguard-go) ;; *)
        echo "${PROG}: --datapath / WIREGUARD_DATAPATH must be auto, kernel or wireguard-go (got '${DATAPATH_CHOICE}')" >&2; exit 2 ;;
    esac
    if (( PRIVATE_RUN == 1 )); then
        for a in "${orig[@]}"; do [[ "$a" == "--private-run" ]] || rest+=("$a"); done
        exec unshare --mount --propagation private -- "$0" --in-private-run "${rest[@]}"
    fi
    if (( PRIVATE_RUN == 2 )); then
        mount -t tmpfs -o mode=0755 tmpfs /run || die "cannot mount a private /run (needs CAP_SYS_ADMIN)"
    fi
}

main() {
    parse_args "$@"
    [[ "$(id -u)" == 0 ]] || { echo "${PROG}: needs root / CAP_NET_ADMIN" >&2; exit 1; }
    load_config "$CONFIG_DIR"
    [[ -z "$TIMEOUT" ]] || WG_READY_TIMEOUT="$TIMEOUT"
    check_namespace
    trap teardown EXIT
    trap 'exit 130' INT
    trap 'exit 0' TERM
    check_rp_filter
    load_filter
    create_link
    configure
    if [[ "${WG_ROSENPASS:-0}" == 1 ]]; then
        start_rosenpass "$CONFIG_DIR"
        wait_psks
    fi
    wait_handshakes
    write_ready
    log "ready: ${WG_IF} up, handshakes with $(echo "$WG_PEERS" | wc -w) peer(s), datapath ${DATAPATH}"
    run_foreground
}

main "$@"
