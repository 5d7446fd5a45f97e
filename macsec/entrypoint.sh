#!/usr/bin/env bash
# MACsec overlay entrypoint (docs/overlays/macsec.md): the same script runs in the containers'
# network-namespace holders (<node>-net) and in the namespace lab (testbed/netns.py).
#
# In the current network namespace, from a rendered config dir (macsec/overlay.py): finds the
# interface that holds the node's address of the plane's network (the lower device), lets only
# MACsec frames leave it (nftables egress filter, loaded first), turns that address's own subnet
# route into the fallback (metric 4242), creates the macsec link on it with the render's SAs, puts
# the address on the macsec link too (its route, metric 0, wins), waits with a deadline until every
# partner has answered ARP through MACsec, prints and writes the datapath line, and stays in the
# foreground until SIGTERM, when it deletes the macsec link. The filter, the address on the lower
# device and its fallback route stay: nothing of the plane leaves in the clear while the namespace
# lives on, and a sender bound to the node's address (the gNB's GTP-U) keeps a local address.
# The macsec link deleted under it: the holder stays (its health check fails: the run's engine
# watcher sees it at once; an exit would only add a second event), says so in its log, removes its
# ready file and exits 1 at SIGTERM.
set -euo pipefail

PROG="macsec/entrypoint.sh"
READY_FILE="${OVERLAY_READY_FILE:-/run/testbed/overlay-ready}"
NFT_TABLE="testbed_macsec"
CONFIG_DIR=""
TIMEOUT=""
LOWER=""
LINK_CREATED=0
FILTER_LOADED=0
LINK_LOST=0

usage() {
    cat <<'USAGE'
usage: macsec/entrypoint.sh [--timeout SECONDS] NODE_CONFIG_DIR

Starts MACsec (IEEE 802.1AE, Linux macsec link, static SAKs) in the current network namespace
from NODE_CONFIG_DIR (rendered by macsec/overlay.py: overlay.env + sa.conf): an nftables egress
filter on the interface holding the node's address (only MACsec frames leave it), that
address's subnet route demoted to a fallback (metric 4242), the macsec link with its transmit SA
and a receive channel per partner, the address on the macsec link too (its route wins). Waits until every partner
answered ARP through MACsec (deadline: --timeout, default MACSEC_READY_TIMEOUT of overlay.env),
prints `datapath: macsec=kernel`, writes the ready file and stays in the foreground until
SIGTERM/SIGINT, when it deletes the macsec link (filter, address and fallback route stay: fail
closed, the packets of the plane dropped silently at the interface).

Environment: OVERLAY_READY_FILE (default /run/testbed/overlay-ready), MACSEC_ADDRESS_TIMEOUT
(seconds to wait for the node's address to appear, default 20).
Needs CAP_NET_ADMIN and a kernel with MACsec (modprobe macsec on the host).
Exit: 0 after SIGTERM, 1 failure, 2 usage error, 130 interrupt.
USAGE
}

log() { printf '%s %s[%s]: %s\n' "$(date -u +%H:%M:%S)" "macsec" "${MACSEC_NODE:-?}" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# no_keys: a text without long hex strings (iproute2 may echo a bad argument: never a SAK into a log).
no_keys() { sed -E 's/[0-9a-fA-F]{32,}/<hex>/g'; }

parse_args() {
    while [[ $# -gt 0 ]]; do
        case "$1" in
            -h|--help) usage; exit 0 ;;
            --timeout) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || { echo "${PROG}: --timeout needs whole seconds" >&2; exit 2; }; TIMEOUT="$2"; shift ;;
            -*) echo "${PROG}: unknown option $1" >&2; usage >&2; exit 2 ;;
            *) [[ -z "$CONFIG_DIR" ]] || { echo "${PROG}: one NODE_CONFIG_DIR only" >&2; exit 2; }; CONFIG_DIR="$1" ;;
        esac
        shift
    done
    [[ -n "$CONFIG_DIR" ]] || { usage >&2; exit 2; }
}

load_config() {
    local dir="$1" var
    [[ -d "$dir" ]] || die "config dir ${dir} does not exist: render it (make render PROFILE=macsec-gcm-aes-128)"
    [[ -r "${dir}/overlay.env" && -r "${dir}/sa.conf" ]] \
        || die "${dir} lacks overlay.env or sa.conf (or cannot read them): re-render it"
    # shellcheck source=/dev/null
    source "${dir}/overlay.env"
    for var in MACSEC_NODE MACSEC_PLANE MACSEC_IF MACSEC_ADDRESS MACSEC_PREFIXLEN MACSEC_SUBNET MACSEC_SCI \
               MACSEC_CIPHER MACSEC_ICV_LEN MACSEC_REPLAY_WINDOW MACSEC_PEERS MACSEC_FALLBACK_METRIC MACSEC_READY_TIMEOUT; do
        [[ -n "${!var:-}" ]] || die "${dir}/overlay.env does not set ${var}: re-render it"
    done
    SA_CONF="${dir}/sa.conf"
}

# A namespace where this overlay ran before keeps its filter (and the address behind the fallback route):
# refuse it by name instead of waiting for an address that never comes.
check_namespace() {
    ! ip link show "$MACSEC_IF" >/dev/null 2>&1 \
        || die "interface ${MACSEC_IF} already exists in this namespace: stop the other overlay first"
    ! nft list table netdev "$NFT_TABLE" >/dev/null 2>&1 \
        || die "nftables table netdev ${NFT_TABLE} exists: the MACsec overlay ran in this namespace before (its fail-closed filter stays); start from a fresh namespace"
}

# find_lower: the interface holding MACSEC_ADDRESS. Docker may attach a container's second network
# a moment after its process starts: wait for the address with a deadline, then fail.
find_lower() {
    local deadline=$(( $(date +%s) + ${MACSEC_ADDRESS_TIMEOUT:-20} ))
    while :; do
        LOWER="$(ip -o -4 addr show | awk -v a="${MACSEC_ADDRESS}/" 'index($4, a) == 1 { print $2; exit }')"
        LOWER="${LOWER%%@*}"
        [[ -z "$LOWER" ]] || break
        (( $(date +%s) < deadline )) \
            || die "address ${MACSEC_ADDRESS} (${MACSEC_NODE} on ${MACSEC_PLANE}) is not on any interface here after ${MACSEC_ADDRESS_TIMEOUT:-20}s: is this the node's namespace?"
        sleep 0.2
    done
    [[ "$LOWER" != "$MACSEC_IF" ]] || die "address ${MACSEC_ADDRESS} is on ${MACSEC_IF} already: is another MACsec overlay running here?"
}

# Fail closed, first: from here on only MACsec frames (EtherType 0x88E5) leave the lower device;
# every other frame (plaintext IP, ARP) is dropped at its egress hook. A drop there is no error to
# the sending socket (the device queue's NET_XMIT_DROP, which UDP does not report): a gNB whose
# GTP-U goes nowhere keeps running and the loss is measured, where a drop in the output hook
# would hand it EPERM (UERANSIM's nr-gnb dies of that).
load_filter() {
    local out
    command -v nft >/dev/null || die "nft (nftables) not found: needed for the fail-closed filter (tools image / sudo make host-tools)"
    out="$(nft -f - 2>&1 <<NFT
table netdev ${NFT_TABLE} {
    chain egress {
        type filter hook egress device "${LOWER}" priority 0; policy drop;
        ether type 0x88e5 counter accept
        counter
    }
}
NFT
)" || die "could not load the fail-closed filter (nftables egress hook on ${LOWER}: Linux >= 5.16 with CONFIG_NETFILTER_EGRESS, nftables >= 1.0.1): ${out}"
    FILTER_LOADED=1
}

# The fallback: the node's address stays on the lower device, its subnet route demoted to metric
# MACSEC_FALLBACK_METRIC (`ip addr change` keeps the address and rewrites only its route's metric).
# Without the macsec link (deleted, down, or its SAs gone) the partner's address still routes
# through the lower device, where the filter drops every frame (the neighbour's ARP included):
# never by the default route out of another interface in the clear. The address stays local too,
# so a socket bound to it gets no ENETUNREACH (a source address that is no longer local is refused
# by the kernel's output route lookup; UERANSIM's gNB dies of that error). A separate route would
# not do: deleting the last IPv4 address of a device flushes every IPv4 route through it.
add_fallback_route() {
    ip addr change "${MACSEC_ADDRESS}/${MACSEC_PREFIXLEN}" dev "$LOWER" metric "$MACSEC_FALLBACK_METRIC" \
        || die "could not demote ${MACSEC_ADDRESS}/${MACSEC_PREFIXLEN} on ${LOWER} to the fallback route (metric ${MACSEC_FALLBACK_METRIC})"
    ip -4 route show "$MACSEC_SUBNET" dev "$LOWER" | grep -q "metric ${MACSEC_FALLBACK_METRIC}" \
        || die "no fallback route ${MACSEC_SUBNET} dev ${LOWER} metric ${MACSEC_FALLBACK_METRIC} after the change: $(ip -4 route show "$MACSEC_SUBNET" 2>&1 | tr '\n' ' ')"
}

create_link() {
    local out
    if ! out="$(ip link add link "$LOWER" name "$MACSEC_IF" type macsec sci "$MACSEC_SCI" cipher "$MACSEC_CIPHER" \
            icvlen "$MACSEC_ICV_LEN" encrypt on protect on send_sci on end_station off scb off \
            replay on window "$MACSEC_REPLAY_WINDOW" validate strict encodingsa 0 2>&1)"; then
        case "$out" in
            *"Unknown device type"*)
                die "this kernel has no MACsec (${out}): load the module on the host (sudo modprobe macsec; CONFIG_MACSEC); containers cannot load it" ;;
            *cipher*)
                die "cipher ${MACSEC_CIPHER} refused (${out}): the XPN suites need Linux >= 5.7 and iproute2 >= 6.1" ;;
            *) die "could not create ${MACSEC_IF} on ${LOWER}: ${out}" ;;
        esac
    fi
    LINK_CREATED=1
    echo "datapath: macsec=kernel"
}

# install_sas: sa.conf's lines (`ip macsec add <link>` arguments: the transmit SA, a receive
# channel and SA per partner) through `ip -batch -`, so no SAK is ever on a command line.
install_sas() {
    local line cmds="" n=0 out
    while IFS= read -r line || [[ -n "$line" ]]; do
        [[ -z "$line" || "$line" == \#* ]] && continue
        [[ "$line" == "tx "* || "$line" == "rx "* ]] || die "${SA_CONF}: a line that is no tx/rx SA: re-render it"
        cmds+="macsec add ${MACSEC_IF} ${line}"$'\n'
        n=$((n + 1))
    done <"$SA_CONF"
    (( n > 0 )) || die "${SA_CONF} holds no SA: re-render it"
    out="$(printf '%s' "$cmds" | ip -batch - 2>&1)" \
        || die "installing the ${n} SA lines of ${SA_CONF} failed: $(no_keys <<<"$out" | tr '\n' ' ')"
}

# add_address: the node's address on the macsec link as well; its subnet route (metric 0) wins over
# the lower device's fallback (metric 4242), so every packet to a partner, ARP included, goes
# through MACsec. The lower device keeps the address: there is no moment without a route.
add_address() {
    local mtu peer route
    ip link set "$MACSEC_IF" up || die "could not bring ${MACSEC_IF} up"
    ip addr add "${MACSEC_ADDRESS}/${MACSEC_PREFIXLEN}" dev "$MACSEC_IF" \
        || die "could not put ${MACSEC_ADDRESS}/${MACSEC_PREFIXLEN} on ${MACSEC_IF}"
    for peer in $MACSEC_PEERS; do
        route="$(ip -4 route get "${peer#*=}" 2>&1)" || true
        [[ "$route" == *" dev ${MACSEC_IF} "* ]] || die "${peer} does not route through ${MACSEC_IF}: ${route}"
    done
    mtu="$(cat "/sys/class/net/${MACSEC_IF}/mtu" 2>/dev/null || echo '?')"
    log "${MACSEC_ADDRESS}/${MACSEC_PREFIXLEN} on ${MACSEC_IF} (MTU ${mtu}, ${MACSEC_CIPHER}); ${LOWER} keeps it behind the fallback route (metric ${MACSEC_FALLBACK_METRIC})"
}

# missing_peers: "name=addr" of every partner whose address has no link-layer address on the
# macsec link yet (ARP answered through MACsec: its frames decrypted here, ours there).
missing_peers() {
    local peer
    for peer in $MACSEC_PEERS; do
        ip -4 neigh show "${peer#*=}" dev "$MACSEC_IF" | grep -q ' lladdr ' || echo "$peer"
    done
}

# A datagram to a partner's discard port makes the kernel resolve its address through MACsec
# (its reply, an ICMP port unreachable, goes back the same way); sent again every 0.2 s while the
# partner's link is not up yet.
wait_peers() {
    local deadline missing peer
    deadline=$(( $(date +%s) + MACSEC_READY_TIMEOUT ))
    while :; do
        missing="$(missing_peers)"
        [[ -z "$missing" ]] && return 0
        if (( $(date +%s) >= deadline )); then
            die "no ARP answer through MACsec within ${MACSEC_READY_TIMEOUT}s from: $(echo "$missing" | tr '\n' ' ')- is their overlay up, from the same render? ($(ip -s macsec show "$MACSEC_IF" 2>&1 | tr -s ' \n' ' '))"
        fi
        for peer in $missing; do
            { printf 'x' >"/dev/udp/${peer#*=}/9"; } 2>/dev/null || true
        done
        sleep 0.2
    done
}

write_ready() {
    local tmp
    mkdir -p "$(dirname "$READY_FILE")"
    tmp="${READY_FILE}.tmp.$$"
    {
        echo "datapath: macsec=kernel"
        echo "node: ${MACSEC_NODE} plane: ${MACSEC_PLANE} interface: ${MACSEC_IF} on ${LOWER} address: ${MACSEC_ADDRESS}"
        ip macsec show "$MACSEC_IF"
    } >"$tmp"
    mv "$tmp" "$READY_FILE"
}

# stop_idler: end the link watcher (run_foreground's job; it ends its monitor on its way out) or the idle sleep and
# reap it, so no process is left in the namespace. Found by `jobs -p`, not by a saved PID: a signal
# can arrive between `_watch_link &` and the assignment of `$!`.
stop_idler() {
    local job
    for job in $(jobs -p); do
        kill "$job" 2>/dev/null || true
        wait "$job" 2>/dev/null || true
    done
}

teardown() {
    local rc=$?
    trap - EXIT INT TERM
    (( ! LINK_LOST || rc != 0 )) || rc=1   # stopped after the link was lost: the overlay had failed
    # every step tolerates failure: under `set -e` one failing command would end it half done
    stop_idler
    rm -f "$READY_FILE"
    if (( LINK_CREATED )) && ip link show "$MACSEC_IF" >/dev/null 2>&1; then
        ip link del "$MACSEC_IF" 2>/dev/null || log "could not delete ${MACSEC_IF}"
    fi
    if (( FILTER_LOADED )); then
        log "kept: the egress filter on ${LOWER} (nftables netdev ${NFT_TABLE}) and the fallback route of ${MACSEC_SUBNET}: nothing of the plane leaves in the clear while this namespace lives"
    fi
    log "overlay removed (exit ${rc})"
    exit "$rc"
}

# Stay in the foreground without polling: the link is the kernel's (no daemon to watch), so the
# kernel's own link events are read (`ip monitor`, pushed over netlink). The link deleted under the
# holder: the cause goes into the log and the ready file goes (the health check fails: the engine
# reports the holder unhealthy, and the run's own SecY record after the set has no macsec0), but
# the holder stays until SIGTERM, since the NF lives in its namespace: the NF's packets of the
# plane are dropped silently (filter and fallback route) and their loss is measured, while ending
# the holder would take every interface from the NF. `wait` returns at once when SIGTERM/SIGINT
# arrives (the traps then exit through teardown).
run_foreground() {
    local watcher
    _watch_link &
    watcher=$!
    # deleted before the monitor started: no event will come
    if ip link show "$MACSEC_IF" >/dev/null 2>&1; then
        wait "$watcher" || true
    else
        stop_idler
    fi
    LINK_LOST=1
    rm -f "$READY_FILE"
    log "ERROR: ${MACSEC_IF} was deleted under the holder: the plane is dropped (egress filter and fallback route kept); not ready any more, staying until SIGTERM so that the namespace keeps its interfaces"
    sleep infinity &
    wait "$!"
}

# _watch_link (a background job of run_foreground): returns when the kernel reports MACSEC_IF
# deleted. The monitor is a process substitution that the job ends on its way out; bash's `read`
# takes a pipe byte by byte (awk would buffer its input and sit on the event), and stdbuf makes ip
# write each event as it comes (its stdio would block-buffer them into the pipe).
_watch_link() {
    local line mon
    exec 3< <(exec stdbuf -oL ip -o monitor link)
    mon=$!
    trap 'kill "$mon" 2>/dev/null || true' EXIT
    trap 'exit 0' TERM INT
    while IFS= read -r line <&3; do
        [[ "$line" =~ ^Deleted\ [0-9]+:\ ${MACSEC_IF}[@:] ]] && return 0
    done
    return 1
}

main() {
    parse_args "$@"
    [[ "$(id -u)" == 0 ]] || { echo "${PROG}: needs root / CAP_NET_ADMIN" >&2; exit 1; }
    load_config "$CONFIG_DIR"
    [[ -z "$TIMEOUT" ]] || MACSEC_READY_TIMEOUT="$TIMEOUT"
    check_namespace
    find_lower
    trap teardown EXIT
    trap 'exit 130' INT
    trap 'exit 0' TERM
    load_filter
    add_fallback_route
    create_link
    install_sas
    add_address
    wait_peers
    write_ready
    log "ready: ${MACSEC_IF} on ${LOWER}, ARP through MACsec with $(wc -w <<<"$MACSEC_PEERS") partner(s), datapath kernel"
    run_foreground
}

main "$@"
