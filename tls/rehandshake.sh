#!/usr/bin/env bash
# rehandshake.sh DIR PEER_ADDRESS: one fresh TLS handshake (a new TCP connection) from this node to
# the peer's SBI port, with the node's rendered client settings (DIR/openssl-client.cnf: the profile's
# version, suite and the groups the client offers, its first group's key share first; DIR/lab.env:
# its certificate, key and CA: mutual TLS as between the Open5GS NFs), then closed. Exits 0 once the
# handshake completed and the server's certificate verified; prints `rehandshake <peer> <us> us`
# (this end's clock; the capture's times are the measurement). The handshake micro-benchmark's
# initiator (testbed/contract.py rehandshake); OpenSSL from TLS_ROOT when set (tls/openssl.sh).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:?usage: rehandshake.sh DIR PEER_ADDRESS}"
peer="${2:?usage: rehandshake.sh DIR PEER_ADDRESS}"
[[ -r "$dir/lab.env" && -r "$dir/openssl-client.cnf" ]] || { echo "rehandshake.sh: $dir lacks lab.env/openssl-client.cnf" >&2; exit 2; }
# shellcheck source=/dev/null
source "$dir/lab.env"
export OPENSSL_CONF="$dir/openssl-client.cnf"
t0="$(date +%s%N)"
out="$("$here/openssl.sh" openssl s_client -connect "$peer:$TLS_PORT" -cert "$TLS_CERT" -key "$TLS_KEY" \
  -CAfile "$TLS_CA" -verify_return_error -brief </dev/null 2>&1)" \
  || { echo "rehandshake.sh: handshake with $peer:$TLS_PORT failed: $(tail -n 3 <<<"$out" | tr '\n' ' ')" >&2; exit 1; }
t1="$(date +%s%N)"
grep -q "^CONNECTION ESTABLISHED" <<<"$out" || { echo "rehandshake.sh: no handshake with $peer: $out" >&2; exit 1; }
echo "rehandshake $peer $(( (t1 - t0) / 1000 )) us $(grep -E '^(Protocol version|Ciphersuite|Negotiated TLS1.3 group)' <<<"$out" | tr '\n' ' ')"
