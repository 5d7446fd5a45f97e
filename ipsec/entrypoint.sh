#!/usr/bin/env bash
# IPsec overlay entrypoint: run strongSwan's charon in the current network namespace with a
# config dir rendered by ipsec/overlay.py, wait until the overlay is in force, stay in
# the foreground until SIGTERM. The same script runs in the `<node>-net` holder containers
# (the render's overlay.compose.yaml) and in the namespace lab (testbed/netns.py).
# See docs/overlays/ipsec.md.
set -euo pipefail

PROG="ipsec/entrypoint.sh"
RUN_DIR="/run/testbed"
READY_FILE="$RUN_DIR/overlay-ready"
CHARON_LOG="$RUN_DIR/charon.log"
# errors after which waiting longer cannot help (configuration mismatch between the ends)
# (NO_PROPOSAL_CHOSEN in IKE_SA_INIT is not among them: an IKE proposal never differs between
# profiles; ESP mismatches surface in IKE_AUTH as 'no CHILD_SA built' / 'no acceptable proposal')
FATAL_PATTERNS='NO_PROPOSAL_CHOSEN notify, no CHILD_SA built|received NO_PROPOSAL_CHOSEN notify error, no CHILD_SA|failed to establish CHILD_SA|no acceptable proposal found|AUTHENTICATION_FAILED|MAC mismatched|no trusted .* public key found|constraint check failed|TS_UNACCEPTABLE|unable to install inbound and outbound IPsec SA'
PROBE_SPI="0x7e570001"

CONFIG_DIR=""
DATAPATH="${IPSEC_DATAPATH:-auto}"
PRIVATE_RUN=0
TIMEOUT=""
CHARON_PID=""

usage() {
    cat <<EOF
usage: $PROG [--private-run] [--datapath auto|kernel|libipsec] [--timeout SECONDS] CONFIG_DIR

Starts charon in the current network namespace with CONFIG_DIR (rendered by
ipsec/overlay.py: swanctl.conf, strongswan*.conf, nftables.conf, overlay.env),
loads the fail-closed nftables filter and the connections, waits (deadline) until every
CHILD_SA is INSTALLED (start mode) or every trap policy is in place (trap modes), writes
$READY_FILE, prints 'datapath: ipsec=kernel|libipsec' and stays in the foreground until
SIGTERM/SIGINT, when it stops charon (which removes its SAs and policies).

  --private-run   mount a private tmpfs on /run first (several charons on one machine)
  --datapath      kernel = xfrm ESP, libipsec = userspace ESP via TUN; auto probes the kernel
                  (env IPSEC_DATAPATH)
  --timeout       readiness deadline in seconds (default: READY_TIMEOUT of overlay.env, or the
                  stack's bring-up deadline STACK_UP_TIMEOUT when that is longer)

Exit: 0 after a clean SIGTERM, 1 failure, 2 usage error, 130 interrupt.
EOF
}

log() { printf '%s %s: %s\n' "$(date -u +%H:%M:%S)" "${NODE:-ipsec}" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

parse_args() {
    local orig=("$@")
    while [ $# -gt 0 ]; do
        case "$1" in
            -h|--help) usage; exit 0 ;;
            --private-run) PRIVATE_RUN=1 ;;
            --in-private-run) PRIVATE_RUN=2 ;;
            --datapath) [ $# -ge 2 ] || { usage >&2; exit 2; }; DATAPATH="$2"; shift ;;
            --timeout) [ $# -ge 2 ] || { usage >&2; exit 2; }; TIMEOUT="$2"; shift ;;
            -*) echo "$PROG: unknown option $1" >&2; usage >&2; exit 2 ;;
            *) [ -z "$CONFIG_DIR" ] || { echo "$PROG: one CONFIG_DIR only" >&2; exit 2; }; CONFIG_DIR="$1" ;;
        esac
        shift
    done
    [ -n "$CONFIG_DIR" ] || { usage >&2; exit 2; }
    case "$DATAPATH" in auto|kernel|libipsec) ;; *) echo "$PROG: --datapath must be auto, kernel or libipsec" >&2; exit 2 ;; esac
    if [ "$PRIVATE_RUN" = 1 ]; then
        # re-exec in a private mount namespace (same pid) where /run can be our own tmpfs
        local rest=()
        local a
        for a in "${orig[@]}"; do [ "$a" = "--private-run" ] || rest+=("$a"); done
        exec unshare --mount --propagation private -- "$0" --in-private-run "${rest[@]}"
    fi
    if [ "$PRIVATE_RUN" = 2 ]; then
        mount -t tmpfs -o mode=0755 tmpfs /run || die "cannot mount a private /run (needs CAP_SYS_ADMIN)"
    fi
}

load_config() {
    [ -d "$CONFIG_DIR" ] || die "config dir $CONFIG_DIR does not exist: render it (python -m testbed lab up / make render PROFILE=...)"
    local f
    for f in overlay.env swanctl.conf strongswan.conf strongswan-libipsec.conf nftables.conf; do
        [ -f "$CONFIG_DIR/$f" ] || die "$CONFIG_DIR/$f missing: the dir was not rendered by ipsec/overlay.py"
    done
    # shellcheck source=/dev/null
    . "$CONFIG_DIR/overlay.env"
    : "${NODE:?}" "${MODE:?}" "${CHILDREN?}" "${XFRM_LARVAL_DROP:?}" "${READY_TIMEOUT:?}"
    # Without --timeout: READY_TIMEOUT, or the stack's bring-up deadline when scripts/up.sh hands
    # one over (STACK_UP_TIMEOUT), whichever is longer. Under load the holders start tens of
    # seconds apart (the guest: ausf-net gave up on amf-net, which started 50 s after it), and
    # the responder of a pair can only wait; a peer that answers wrongly fails at once anyway
    # (fatal_errors below), so the long wait is only for one that is not there yet.
    if [ -z "${TIMEOUT:-}" ]; then
        TIMEOUT="$READY_TIMEOUT"
        case "${STACK_UP_TIMEOUT:-}" in
            ''|*[!0-9]*) ;;
            *) [ "$STACK_UP_TIMEOUT" -le "$TIMEOUT" ] || TIMEOUT="$STACK_UP_TIMEOUT" ;;
        esac
    fi
}

find_charon() {
    local c
    for c in "${IPSEC_CHARON:-}" /usr/lib/ipsec/charon /usr/libexec/ipsec/charon /usr/lib/strongswan/charon; do
        if [ -n "$c" ] && [ -x "${IPSEC_ROOT:-}$c" ]; then echo "$c"; return 0; fi
    done
    [ -z "${IPSEC_ROOT:-}" ] || die "no charon in IPSEC_ROOT=$IPSEC_ROOT (usr/lib/ipsec/charon)"
    # not charon-systemd: it takes no options (`charon-systemd --version` starts a daemon and never
    # returns: the entrypoint hung there in the Debian 13 guest, where it had replaced charon)
    die "no charon found (strongSwan's /usr/lib/ipsec/charon): install strongswan-charon (on Debian 13 it and charon-systemd exclude each other: the entrypoint needs strongswan-charon)"
}

# IPSEC_ROOT=<dir>: charon and swanctl run from another Debian root (scripts/suite-root.sh
# ipsec/pq-root.env: sid's strongSwan 6 where this host has 5.9.8), everything else (nft, ip) from
# the host. Needs a private mount namespace (the namespace lab's, or --private-run): there the
# root gets /proc, /dev and this /run bound in, so the vici socket, the ready file and the config
# copied under /run have the same paths inside and outside, and the host's swanctl is replaced
# by one that enters the root (`swanctl --list-sas` run by the drivers in this namespace).
SWANCTL=(command swanctl)   # `command`: the program, not the function below (which would call itself)
enter_root() {
    [ -n "${IPSEC_ROOT:-}" ] || return 0
    [ -x "$IPSEC_ROOT/usr/sbin/swanctl" ] || die "IPSEC_ROOT=$IPSEC_ROOT holds no usr/sbin/swanctl: make it with scripts/suite-root.sh ipsec/pq-root.env"
    [ "$(readlink /proc/self/ns/mnt)" != "$(readlink /proc/1/ns/mnt)" ] \
        || die "IPSEC_ROOT needs a private mount namespace (run through the namespace lab or with --private-run)"
    local d
    for d in proc dev run; do mkdir -p "$IPSEC_ROOT/$d"; done
    mount -t proc proc "$IPSEC_ROOT/proc" || die "cannot mount /proc into $IPSEC_ROOT"
    mount --rbind /dev "$IPSEC_ROOT/dev" || die "cannot bind /dev into $IPSEC_ROOT"
    mount --bind /run "$IPSEC_ROOT/run" || die "cannot bind /run into $IPSEC_ROOT"
    mkdir -p "$RUN_DIR/ipsec-config"
    cp -a "$CONFIG_DIR/." "$RUN_DIR/ipsec-config/"
    CONFIG_DIR="$RUN_DIR/ipsec-config"
    printf '#!/bin/sh\nexec chroot %s /usr/sbin/swanctl "$@"\n' "$IPSEC_ROOT" > "$RUN_DIR/swanctl-in-root"
    chmod 0755 "$RUN_DIR/swanctl-in-root"
    if [ -e /usr/sbin/swanctl ]; then
        mount --bind "$RUN_DIR/swanctl-in-root" /usr/sbin/swanctl || die "cannot put the root's swanctl in place of /usr/sbin/swanctl"
    fi
    SWANCTL=("$RUN_DIR/swanctl-in-root")
    # shellcheck disable=SC2016  # ${Version} is dpkg-query's, not the shell's
    log "strongSwan from IPSEC_ROOT=$IPSEC_ROOT: $(chroot "$IPSEC_ROOT" dpkg-query -W -f='${Version}' strongswan-charon 2>/dev/null || echo '?')"
}
swanctl() { "${SWANCTL[@]}" "$@"; }

# The profile's floor (MIN_STRONGSWAN of overlay.env: IKE_INTERMEDIATE with ML-KEM needs 6.0.2)
# against the charon that will run, before anything starts.
CHARON_VERSION=""
version_ge() { printf '%s\n%s\n' "$2" "$1" | sort -V -C; }
check_version() {
    local charon have
    charon="$(find_charon)"
    have="$(${IPSEC_ROOT:+chroot "$IPSEC_ROOT"} "$charon" --version 2>/dev/null | sed -n 's/.*strongSwan [A-Z]*\([0-9][0-9.]*\).*/\1/p' | head -n 1)"
    CHARON_VERSION="$have"
    [ -n "${MIN_STRONGSWAN:-}" ] || return 0
    [ -n "$have" ] || die "cannot read the version of $charon"
    if ! version_ge "$have" "$MIN_STRONGSWAN"; then
        if [ -n "${IPSEC_ROOT:-}" ]; then
            die "profile $PROFILE needs strongSwan >= $MIN_STRONGSWAN (IKEv2 key exchanges over IKE_INTERMEDIATE with ML-KEM); the charon in IPSEC_ROOT=$IPSEC_ROOT is $have: \`sudo make pq-roots\` makes a root with a newer one (ipsec/pq-root.env), which the namespace lab uses by itself without IPSEC_ROOT"
        fi
        die "profile $PROFILE needs strongSwan >= $MIN_STRONGSWAN (IKEv2 key exchanges over IKE_INTERMEDIATE with ML-KEM); this charon is $have and no Debian root with a newer one is made: \`sudo make pq-roots\` makes it (ipsec/pq-root.env), the namespace lab then uses it by itself (the Docker stack: the tools image's strongSwan)"
    fi
    log "strongSwan $have (profile needs >= $MIN_STRONGSWAN)"
}

kernel_has_esp() {
    # the same probe as testbed/datapath.py: an ESP state with AES-GCM, removed at once
    local key="0x1111111111111111111111111111111111111111"
    if ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi "$PROBE_SPI" mode tunnel \
            aead 'rfc4106(gcm(aes))' "$key" 128 2>/dev/null; then
        ip xfrm state delete src 192.0.2.1 dst 192.0.2.2 proto esp spi "$PROBE_SPI" 2>/dev/null || true
        return 0
    fi
    return 1
}

choose_datapath() {
    if [ "$DATAPATH" = auto ]; then
        if kernel_has_esp; then DATAPATH=kernel; else DATAPATH=libipsec; fi
    fi
    if [ "$DATAPATH" = libipsec ]; then
        log "kernel xfrm ESP not available (or not wanted): using kernel-libipsec, userspace ESP via TUN ipsec0 (slower; results are not comparable with kernel ESP)"
        [ -c /dev/net/tun ] || die "kernel-libipsec needs /dev/net/tun (compose: devices: [/dev/net/tun])"
        if [ "${LIBIPSEC_SUPPORTS_ESP:-1}" != 1 ]; then
            die "ESP $ESP_PROPOSAL is not implemented by strongSwan's userspace ESP (kernel-libipsec: 'unsupported AEAD algorithm'); profile $PROFILE needs the kernel xfrm ESP datapath"
        fi
        # kernel-libipsec sends acquires for trap policies from strongSwan 5.9.11 on
        if [ "$MODE" != start ] && [ "${IPSEC_ALLOW_LIBIPSEC_TRAP:-0}" != 1 ] \
                && ! version_ge "${CHARON_VERSION:-0}" 5.9.11; then
            die "mode $MODE needs kernel xfrm ESP: strongSwan ${CHARON_VERSION:-?} kernel-libipsec sends no acquires for trap policies (5.9.11 and later do), so the first packet would never trigger IKE (run on a kernel with ESP, or use a start-mode profile)"
        fi
        STRONGSWAN_CONF="$CONFIG_DIR/strongswan-libipsec.conf"
    else
        STRONGSWAN_CONF="$CONFIG_DIR/strongswan.conf"
    fi
    export STRONGSWAN_CONF
}

set_larval_drop() {
    local f=/proc/sys/net/core/xfrm_larval_drop cur
    [ -r "$f" ] || { log "no $f (kernel without xfrm?): xfrm_larval_drop not applicable"; return 0; }
    cur="$(cat "$f")"
    if [ "$cur" != "$XFRM_LARVAL_DROP" ]; then
        echo "$XFRM_LARVAL_DROP" > "$f" 2>/dev/null \
            || die "net.core.xfrm_larval_drop is $cur, profile needs $XFRM_LARVAL_DROP and /proc/sys is read-only (compose: sysctls of the rendered overlay.compose.yaml)"
    fi
    log "net.core.xfrm_larval_drop=$(cat "$f") in this network namespace"
}

load_firewall() {
    command -v nft >/dev/null || die "nft not found: the fail-closed filter needs nftables in this image"
    nft -f "$CONFIG_DIR/nftables.conf" || die "loading $CONFIG_DIR/nftables.conf failed"
    load_egress_filter
}

# load_egress_filter: the outbound drop moves from the postrouting hook (a drop there is EPERM to
# the sending socket: nr-gnb aborted on its GTP-U sendto) to each device's egress hook, where the
# sender never hears of it (nftables-egress.rules, rendered by ipsec/overlay.py). The
# egress table is in before the postrouting chain goes: closed throughout. Without the egress hook
# (Linux < 5.16) the postrouting drop stays: still closed, with EPERM to senders (said once).
load_egress_filter() {
    local rules="$CONFIG_DIR/nftables-egress.rules" dev chains="" i=0 body
    [ -f "$rules" ] || { log "no $rules: the outbound drop stays in the postrouting hook (EPERM to senders)"; return 0; }
    body="$(tr '\n' ';' <"$rules")"
    for dev in $(ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'); do
        case "$dev" in lo | ipsec0) continue ;; esac        # ipsec0: libipsec's TUN carries plaintext on purpose
        chains+="  chain out$i { type filter hook egress device \"$dev\" priority 0; policy accept; $body }"$'\n'
        i=$((i + 1))
    done
    [ -n "$chains" ] || return 0
    if nft -f - <<NFT
table netdev testbed_ipsec_egress
delete table netdev testbed_ipsec_egress
table netdev testbed_ipsec_egress {
$chains}
NFT
    then
        nft delete chain inet testbed_ipsec out || die "cannot remove the postrouting drop (nft delete chain inet testbed_ipsec out)"
    else
        log "WARNING: no netfilter egress hook here (Linux 5.16+): the outbound drop stays in the postrouting hook, so a sender whose packet it drops gets EPERM"
    fi
}

# check_apparmor CHARON: Debian's AppArmor profiles for charon and swanctl (enforced on Debian 13)
# let them read /etc/strongswan* and /etc/swanctl only, not the rendered config: charon then exits
# at start-up with nothing in its log (the full-kernel guest's namespace lab). Said with the cause
# and the remedy before charon starts. Containers run under their engine's profile instead, and
# securityfs is not mounted there.
check_apparmor() {
    # `ip netns exec` mounts a fresh /sys without securityfs: read the host's through init's root
    local profiles=/sys/kernel/security/apparmor/profiles p
    [ -r "$profiles" ] || profiles="/proc/1/root$profiles"
    [ -r "$profiles" ] || return 0
    for p in "$1" /usr/sbin/swanctl; do
        ! grep -qF "$p (enforce)" "$profiles" 2>/dev/null \
            || die "AppArmor confines $p (enforce): it cannot read the rendered config in $CONFIG_DIR; put its profile in complain mode (sudo aa-complain $p, package apparmor-utils) or run the stack in its containers"
    done
}

start_charon() {
    local charon deadline
    charon="$(find_charon)"
    [ -n "${IPSEC_ROOT:-}" ] || check_apparmor "$charon"
    mkdir -p "$RUN_DIR"
    rm -f "$READY_FILE" "$CHARON_LOG"
    log "starting $charon (STRONGSWAN_CONF=$STRONGSWAN_CONF${IPSEC_ROOT:+, root $IPSEC_ROOT})"
    ${IPSEC_ROOT:+chroot "$IPSEC_ROOT"} "$charon" &
    CHARON_PID=$!
    deadline=$((SECONDS + 10))
    until swanctl --stats >/dev/null 2>&1; do
        kill -0 "$CHARON_PID" 2>/dev/null || die "charon exited at start-up; see its output above"
        [ "$SECONDS" -lt "$deadline" ] || die "charon's vici socket did not come up within 10s"
        sleep 0.1
    done
    local out
    out="$(swanctl --load-all --noprompt --file "$CONFIG_DIR/swanctl.conf" 2>&1)" \
        || die "swanctl --load-all --file $CONFIG_DIR/swanctl.conf failed: $(grep -v 'opening directory' <<<"$out" | tail -n 5 | tr '\n' ' ')"
    # connections are loaded: let peers' IKE in (see nftables.conf, chain ike_gate)
    nft delete chain inet testbed_ipsec ike_gate || die "cannot open the IKE gate (nft delete chain inet testbed_ipsec ike_gate)"
}

child_installed() {
    # a CHILD_SA line of `swanctl --list-sas`: "  <name>: #1, reqid 1, INSTALLED, TUNNEL..., ESP:..."
    grep -Eq "^  $1: #[0-9]+, reqid [0-9]+, INSTALLED," <<<"$2"
}

fatal_errors() {
    [ -f "$CHARON_LOG" ] || return 1
    grep -E "$FATAL_PATTERNS" "$CHARON_LOG" | tail -n 3
}

wait_ready() {
    local deadline=$((SECONDS + TIMEOUT)) sas missing c errs
    while :; do
        kill -0 "$CHARON_PID" 2>/dev/null || die "charon died while establishing the overlay"
        missing=()
        if [ "$MODE" = start ]; then
            sas="$(swanctl --list-sas 2>/dev/null || true)"
            for c in $CHILDREN; do child_installed "$c" "$sas" || missing+=("$c"); done
        else
            sas="$(swanctl --list-pols --trap 2>/dev/null || true)"
            # "<name>/<child>, TUNNEL" (5.9), "<name>/<child>, reqid 1, TUNNEL" (6.0)
            for c in $CHILDREN; do grep -Eq "^$c(/[^,]*)?, (reqid [0-9]+, )?TUNNEL" <<<"$sas" || missing+=("$c"); done
        fi
        [ "${#missing[@]}" -eq 0 ] && return 0
        if errs="$(fatal_errors)" && [ -n "$errs" ]; then
            die "CHILD_SA to ${missing[*]} cannot be established (profile $PROFILE, ESP $ESP_PROPOSAL): $(tr '\n' ' ' <<<"$errs")-- both ends must render the same PROFILE and keys (make keys)"
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            die "not ready within ${TIMEOUT}s: no INSTALLED CHILD_SA/trap policy for ${missing[*]} (mode $MODE); last charon lines: $(tail -n 5 "$CHARON_LOG" 2>/dev/null | tr '\n' ' ')-- is the peer's entrypoint running and reachable?"
        fi
        sleep 0.2
    done
}

# shellcheck disable=SC2317  # invoked by trap
teardown() {
    local rc=$?
    trap - TERM INT EXIT
    rm -f "$READY_FILE"
    if [ -n "$CHARON_PID" ] && kill -0 "$CHARON_PID" 2>/dev/null; then
        kill -TERM "$CHARON_PID" 2>/dev/null || true
        local deadline=$((SECONDS + 5))
        while kill -0 "$CHARON_PID" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
        kill -KILL "$CHARON_PID" 2>/dev/null || true
    fi
    # the nftables drop filter stays: nothing leaks while the namespace lives on
    exit "$rc"
}

# shellcheck disable=SC2317  # invoked by trap
on_signal() {
    log "$1: tearing the IPsec overlay down"
    if [ "$1" = SIGINT ]; then exit 130; fi
    exit 0
}

main() {
    parse_args "$@"
    load_config
    trap teardown EXIT
    trap 'on_signal SIGTERM' TERM
    trap 'on_signal SIGINT' INT
    enter_root
    check_version
    choose_datapath
    set_larval_drop
    load_firewall
    start_charon
    wait_ready
    echo "datapath: ipsec=$DATAPATH" > "$READY_FILE"
    echo "datapath: ipsec=$DATAPATH"
    log "ready: profile $PROFILE, mode $MODE, $(wc -w <<<"$CHILDREN") peer(s): ${CHILDREN:-none}"
    while kill -0 "$CHARON_PID" 2>/dev/null; do
        wait "$CHARON_PID" || true
    done
    die "charon exited unexpectedly; the nftables filter keeps the plane closed"
}

main "$@"
