#!/usr/bin/env bash
# openssl.sh PROGRAM [ARGS...]: PROGRAM (openssl, curl) from the Debian root TLS_ROOT when it is set
# (scripts/suite-root.sh tls/pq-root.env: trixie's OpenSSL 3.5 with the ML-KEM groups and ML-DSA,
# where this host has an older one), run with that root's own dynamic loader and libraries, so no
# chroot and no mounts are needed and every path stays the host's; else the host's PROGRAM.
set -euo pipefail

prog="${1:?usage: openssl.sh PROGRAM [ARGS...]}"
shift
[[ -n "${TLS_ROOT:-}" ]] || exec "$prog" "$@"
lib="$TLS_ROOT/usr/lib/$(uname -m)-linux-gnu"
loader="$(find "$TLS_ROOT/usr/lib64" "$lib" -maxdepth 1 -name 'ld-linux*.so.*' 2>/dev/null | head -n 1)"
[[ -x "$TLS_ROOT/usr/bin/$prog" && -n "$loader" ]] \
  || { echo "openssl.sh: no $prog or dynamic loader in TLS_ROOT=$TLS_ROOT (scripts/suite-root.sh tls/pq-root.env)" >&2; exit 1; }
export OPENSSL_MODULES="${OPENSSL_MODULES:-$lib/ossl-modules}"
exec "$loader" --library-path "$lib" "$TLS_ROOT/usr/bin/$prog" "$@"
