#!/usr/bin/env bash
# DTLS relay overlay entrypoint (docs/contracts.md, "Overlays"; docs/overlays/dtls.md): the same
# script runs in the containers' network-namespace holders and in the namespace tests.
#
# Starts one socat per relay line of the rendered config dir (dtls/overlay.py):
#   client: listens where the NF connects (SCTP) and carries each association over DTLS/UDP
#           (or plain UDP for the no-crypto relay) to the server node's relay;
#   server: listens for the client's relay (DTLS/UDP) and connects (SCTP) to the real NF.
# Both DTLS ends present the node's certificate, verify the peer's against the testbed CA and are
# pinned to the profile's version and suite (socat options + OPENSSL_CONF). Waits with a deadline
# until every listener is bound, prints and writes the datapath line, and stays in the foreground
# until SIGTERM (then stops the relays); a relay that dies ends the entrypoint with exit 1.
set -euo pipefail

PROG="dtls/entrypoint.sh"
READY_FILE="${OVERLAY_READY_FILE:-/run/testbed/overlay-ready}"
NF_TRANSPORT="${DTLS_NF_TRANSPORT:-sctp}"
CONFIG_DIR=""
TIMEOUT=""
PIDS=()
LISTENERS=()

usage() {
    cat <<'USAGE'
usage: dtls/entrypoint.sh [--nf-transport sctp|tcp] [--timeout SECONDS] NODE_CONFIG_DIR

Starts the node's DTLS relays (socat) from NODE_CONFIG_DIR (rendered by
dtls/overlay.py: overlay.env, openssl.cnf, node.key, node.crt, ca.crt), waits until
every listener is bound (deadline: --timeout, default DTLS_READY_TIMEOUT of overlay.env),
prints `datapath: dtls=socat`, writes the ready file and stays in the foreground until
SIGTERM/SIGINT, when it stops the relays.

  --nf-transport  the NF side of the relay: sctp (default; the link's real transport) or tcp,
                  a stand-in for kernels without SCTP (the namespace tests); env DTLS_NF_TRANSPORT
  --timeout       readiness deadline in seconds

Environment: OVERLAY_READY_FILE (default /run/testbed/overlay-ready).
Exit: 0 after SIGTERM, 1 failure (also: a relay died), 2 usage error, 130 interrupt.
USAGE
}

log() { printf '%s %s[%s]: %s\n' "$(date -u +%H:%M:%S)" "dtls" "${DTLS_NODE:-?}" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

load_config() {
    local dir="$1" var
    [[ -d "$dir" ]] || die "config dir ${dir} does not exist: run \`make render\` with a DTLS profile"
    [[ -r "${dir}/overlay.env" ]] || die "${dir} lacks overlay.env: re-render it"
    # shellcheck source=/dev/null
    source "${dir}/overlay.env"
    for var in DTLS_PROFILE DTLS_NODE DTLS_RELAY DTLS_RELAYS DTLS_READY_TIMEOUT; do
        [[ -n "${!var:-}" ]] || die "${dir}/overlay.env does not set ${var}: re-render it"
    done
    if [[ "$DTLS_RELAY" == dtls ]]; then
        for var in DTLS_VERSION DTLS_CIPHER; do
            [[ -n "${!var:-}" ]] || die "${dir}/overlay.env does not set ${var}: re-render it"
        done
        for var in openssl.cnf node.key node.crt ca.crt; do
            [[ -r "${dir}/${var}" ]] || die "${dir}/${var} missing: re-render it (make keys first)"
        done
    fi
}

# nf_address ROLE HOST PORT: the NF side of a relay in socat syntax.
nf_address() {
    local role="$1" host="$2" port="$3" proto
    proto="$(tr '[:lower:]' '[:upper:]' <<<"$NF_TRANSPORT")"
    if [[ "$role" == client ]]; then
        echo "${proto}-LISTEN:${port},bind=${host},reuseaddr,fork"
    else
        echo "${proto}:${host}:${port}"
    fi
}

# tls_options PEER_NAME ROLE: certificate, verification and pinning options of a DTLS address.
tls_options() {
    local peer="$1" role="$2" opts
    opts="cert=${CONFIG_DIR}/node.crt,key=${CONFIG_DIR}/node.key,cafile=${CONFIG_DIR}/ca.crt,verify=1"
    opts+=",cipher=${DTLS_CIPHER},openssl-min-proto-version=${DTLS_VERSION},openssl-max-proto-version=${DTLS_VERSION}"
    [[ "$role" == client ]] && opts+=",commonname=${peer}"
    echo "$opts"
}

# relay_address ROLE HOST PORT PEER: the relay side (DTLS or plain UDP) in socat syntax.
relay_address() {
    local role="$1" host="$2" port="$3" peer="$4"
    if [[ "$DTLS_RELAY" == dtls && "$role" == client ]]; then
        echo "OPENSSL-DTLS-CLIENT:${host}:${port},$(tls_options "$peer" client)"
    elif [[ "$DTLS_RELAY" == dtls ]]; then
        echo "OPENSSL-DTLS-SERVER:${port},bind=${host},reuseaddr,fork,$(tls_options "$peer" server)"
    elif [[ "$role" == client ]]; then
        echo "UDP:${host}:${port}"
    else
        echo "UDP-LISTEN:${port},bind=${host},reuseaddr,fork"
    fi
}

start_relays() {
    local line role plane lhost lport chost cport peer left right
    local -a lines
    IFS=';' read -r -a lines <<<"$DTLS_RELAYS"
    for line in "${lines[@]}"; do
        read -r role plane lhost lport chost cport peer <<<"$line"
        [[ -n "$peer" ]] || die "malformed relay line '${line}' in overlay.env: re-render it"
        if [[ "$role" == client ]]; then
            left="$(nf_address client "$lhost" "$lport")"
            right="$(relay_address client "$chost" "$cport" "$peer")"
            LISTENERS+=("${NF_TRANSPORT} ${lhost} ${lport}")
        elif [[ "$role" == server ]]; then
            left="$(relay_address server "$lhost" "$lport" "$peer")"
            right="$(nf_address server "$chost" "$cport")"
            LISTENERS+=("udp ${lhost} ${lport}")
        else
            die "relay role '${role}' in overlay.env is neither client nor server: re-render it"
        fi
        log "${plane} ${role}: socat ${left%%,*} <-> ${right%%,*} (${DTLS_RELAY}, peer ${peer})"
        OPENSSL_CONF="${CONFIG_DIR}/openssl.cnf" socat -d "$left" "$right" &
        PIDS+=("$!")
    done
}

# listening PROTO HOST PORT: is a socket bound there?
listening() {
    local flag
    case "$1" in
        sctp) flag=(--sctp -l) ;; tcp) flag=(-t -l) ;; udp) flag=(-u -a) ;;
    esac
    ss -H -n "${flag[@]}" "sport = :$3" 2>/dev/null | grep -qF "$2:$3"
}

wait_listeners() {
    local deadline l proto host port pid
    deadline=$(( $(date +%s%N) + ${TIMEOUT:-$DTLS_READY_TIMEOUT} * 1000000000 ))
    for l in "${LISTENERS[@]}"; do
        read -r proto host port <<<"$l"
        until listening "$proto" "$host" "$port"; do
            for pid in "${PIDS[@]}"; do
                kill -0 "$pid" 2>/dev/null || die "a relay (socat pid ${pid}) exited before it listened (see above)"
            done
            (( $(date +%s%N) < deadline )) || die "no ${proto} listener on ${host}:${port} after ${TIMEOUT:-$DTLS_READY_TIMEOUT}s"
            sleep 0.1
        done
    done
}

versions() {
    printf 'socat=%s openssl=%s' "$(socat -V 2>/dev/null | sed -n 's/^socat version \([^ ]*\).*/\1/p')" \
        "$(openssl version 2>/dev/null | cut -d' ' -f2)"
}

write_ready() {
    mkdir -p "$(dirname "$READY_FILE")"
    {
        echo "datapath: dtls=socat"
        echo "relay: ${DTLS_RELAY} ${DTLS_VERSION:-} ${DTLS_CIPHER:-} $(versions)"
    } >"${READY_FILE}.tmp"
    mv "${READY_FILE}.tmp" "$READY_FILE"
}

# shellcheck disable=SC2317  # invoked by the EXIT trap
teardown() {
    local code=$? pid
    trap - EXIT INT TERM
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    rm -f "$READY_FILE"
    log "relays stopped (exit ${code})"
    exit "$code"
}

main() {
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --nf-transport) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; NF_TRANSPORT="$2"; shift ;;
            --timeout) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; TIMEOUT="$2"; shift ;;
            -h|--help) usage; exit 0 ;;
            -*) echo "${PROG}: unknown option $1" >&2; usage >&2; exit 2 ;;
            *) [[ -z "$CONFIG_DIR" ]] || { usage >&2; exit 2; }; CONFIG_DIR="$1" ;;
        esac
        shift
    done
    [[ -n "$CONFIG_DIR" ]] || { usage >&2; exit 2; }
    case "$NF_TRANSPORT" in sctp|tcp) ;; *)
        echo "${PROG}: --nf-transport / DTLS_NF_TRANSPORT must be sctp or tcp (got '${NF_TRANSPORT}')" >&2; exit 2 ;;
    esac
    [[ -z "$TIMEOUT" || "$TIMEOUT" =~ ^[0-9]+$ ]] || { echo "${PROG}: --timeout takes whole seconds" >&2; exit 2; }
    command -v socat >/dev/null || { echo "${PROG}: socat not found (tools image / sudo make host-tools)" >&2; exit 1; }
    [[ -d "$CONFIG_DIR" ]] || die "config dir ${CONFIG_DIR} does not exist: run \`make render\` with a DTLS profile"
    CONFIG_DIR="$(cd "$CONFIG_DIR" && pwd)"
    load_config "$CONFIG_DIR"
    trap teardown EXIT
    trap 'exit 130' INT
    trap 'exit 0' TERM
    start_relays
    wait_listeners
    write_ready
    echo "datapath: dtls=socat"
    log "ready: ${#PIDS[@]} relay(s), ${DTLS_RELAY}${DTLS_VERSION:+ ${DTLS_VERSION} ${DTLS_CIPHER}}, NF side ${NF_TRANSPORT}, $(versions)"
    # a relay that dies takes the overlay down with it (the holder's death makes the run invalid)
    wait -n "${PIDS[@]}" || true
    die "a relay exited; the link is no longer protected"
}

main "$@"
