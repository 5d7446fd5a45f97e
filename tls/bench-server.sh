#!/usr/bin/env bash
# bench-server.sh DIR [ADDRESS]: the TLS server end of the handshake micro-benchmark, in the current
# network namespace (testbed/contract.py bench_responder): `openssl s_server` with the node's rendered
# settings (DIR/openssl.cnf: the profile's version, suite and groups; DIR/lab.env: its key,
# certificate, CA and SBI address and port), requiring a client certificate as the Open5GS servers do,
# accepting connections until SIGTERM. OpenSSL from TLS_ROOT when set (tls/openssl.sh).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${1:?usage: bench-server.sh DIR [ADDRESS]}"
[[ -r "$dir/lab.env" && -r "$dir/openssl.cnf" ]] || { echo "bench-server.sh: $dir lacks lab.env/openssl.cnf (tls/overlay.py render)" >&2; exit 2; }
# shellcheck source=/dev/null
source "$dir/lab.env"
export OPENSSL_CONF="$dir/openssl.cnf"
exec "$here/openssl.sh" openssl s_server -quiet -naccept 1000000 -accept "${2:-$TLS_ADDRESS}:$TLS_PORT" \
  -cert "$TLS_CERT" -key "$TLS_KEY" -CAfile "$TLS_CA" -Verify 1 -verify_return_error
