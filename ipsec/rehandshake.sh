#!/usr/bin/env bash
# rehandshake.sh [CONFIG_DIR] [PEER_ADDRESS]: one fresh IKE handshake with every peer this node
# initiates to (the connections swanctl lists with a CHILD_SA to start), in the current network
# namespace: the IKE SA is deleted (DELETE sent, the peer removes it too) and the CHILD_SA initiated
# again; swanctl returns once IKE_SA_INIT, IKE_INTERMEDIATE (post-quantum profiles) and IKE_AUTH
# completed. Prints one line per handshake: `rehandshake <connection> <us> us` (the initiator's clock,
# swanctl included; the capture's times are the measurement). The arguments are those of every
# overlay's rehandshake script (testbed/contract.py) and unused here. Run by run-overlay after its
# capture started and by the handshake micro-benchmark (docs/overlays/ipsec.md).
set -euo pipefail

die() { echo "rehandshake.sh: $*" >&2; exit 1; }

main() {
    local conns=() c t0 t1 out
    command -v swanctl >/dev/null || die "swanctl not found"
    # `swanctl --list-conns`: "<name>: IKEv2, ..." per connection, children indented below it
    mapfile -t conns < <(swanctl --list-conns 2>/dev/null | awk '/^[^ ].*: IKEv2/ { sub(/:$/, "", $1); print $1 }')
    ((${#conns[@]})) || die "no IKE connection loaded in this namespace (is the IPsec overlay up here?)"
    for c in "${conns[@]}"; do
        # only where this end starts the SA (start mode: the end whose name sorts first)
        swanctl --list-sas --ike "$c" 2>/dev/null | grep -q "_i\* " || continue
        swanctl --terminate --ike "$c" --timeout 10 >/dev/null 2>&1 || die "could not delete the IKE SA $c"
        t0="$(date +%s%N)"
        out="$(swanctl --initiate --child "$c" --timeout 30 2>&1)" \
            || die "initiating $c failed: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
        t1="$(date +%s%N)"
        echo "rehandshake $c $(( (t1 - t0) / 1000 )) us"
    done
}

main "$@"
