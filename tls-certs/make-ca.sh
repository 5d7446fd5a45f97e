#!/usr/bin/env bash
# Create a testbed certificate authority (key + self-signed certificate) with the openssl CLI.
# Idempotent: an existing key is never replaced; an existing certificate is kept.
# Driven by testbed/keys.py (`make keys`); see docs/contracts.md "State and secrets".
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: tls-certs/make-ca.sh KEYTYPE OUT_PREFIX SUBJECT_CN [DAYS]

  KEYTYPE     ecdsa (P-256) | rsa (RSA-2048) | mldsa65 (ML-DSA-65, FIPS 204: OpenSSL >= 3.5)
  OUT_PREFIX  writes OUT_PREFIX.key (0600) and OUT_PREFIX.crt, e.g. .state/keys/ca/ca
  SUBJECT_CN  the CA's common name
  DAYS        validity in days (default 3650)

Exit: 0 ok, 1 failure, 2 usage error.
USAGE
}

die() { echo "make-ca.sh: error: $*" >&2; exit 1; }

# gen_key KEYTYPE PATH: write a new private key to PATH (atomically, 0600) unless it exists.
gen_key() {
    local keytype="$1" path="$2" tmp
    [[ -e "$path" ]] && return 0
    tmp="$(mktemp "${path}.XXXXXX")"
    case "$keytype" in
        ecdsa) openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp" 2>/dev/null ;;
        rsa)   openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$tmp" 2>/dev/null ;;
        mldsa65) openssl genpkey -algorithm ML-DSA-65 -out "$tmp" 2>/dev/null ;;
    esac || { rm -f "$tmp"; die "openssl could not generate a $keytype key for $path"; }
    # a full disk can leave openssl's output empty with exit 0: only a key that parses is moved in
    openssl pkey -in "$tmp" -noout 2>/dev/null || { rm -f "$tmp"; die "openssl wrote no usable $keytype key for $path (disk full?)"; }
    chmod 0600 "$tmp"
    mv -n "$tmp" "$path"
    rm -f "$tmp"
}

main() {
    if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then usage; exit 0; fi
    if [[ $# -lt 3 || $# -gt 4 ]]; then usage >&2; exit 2; fi
    local keytype="$1" prefix="$2" cn="$3" days="${4:-3650}"
    case "$keytype" in ecdsa|rsa|mldsa65) ;; *) echo "make-ca.sh: unknown KEYTYPE '$keytype' (valid: ecdsa, rsa, mldsa65)" >&2; exit 2 ;; esac
    umask 077
    mkdir -p "$(dirname "$prefix")"
    gen_key "$keytype" "${prefix}.key"
    [[ -e "${prefix}.crt" ]] && return 0
    local tmp
    tmp="$(mktemp "${prefix}.crt.XXXXXX")"
    # ML-DSA signs the whole message (FIPS 204): no digest to name; the others sign SHA-256
    local digest=-sha256
    [[ "$keytype" != mldsa65 ]] || digest=""
    openssl req -x509 -new -key "${prefix}.key" ${digest:+"$digest"} -days "$days" -subj "/CN=${cn}" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -addext "subjectKeyIdentifier=hash" \
        -out "$tmp" 2>/dev/null || { rm -f "$tmp"; die "openssl could not self-sign the CA certificate ${prefix}.crt"; }
    chmod 0644 "$tmp"
    mv "$tmp" "${prefix}.crt"
}

main "$@"
