#!/usr/bin/env bash
# Create a node key and a certificate signed by a testbed CA, with the openssl CLI.
# Idempotent: an existing key is never replaced. The certificate is (re-)issued when it is
# missing; testbed/keys.py removes a certificate whose names no longer match stack.yaml.
# Driven by testbed/keys.py (`make keys`); see docs/contracts.md "State and secrets".
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: tls-certs/make-cert.sh KEYTYPE CA_PREFIX OUT_PREFIX SUBJECT_CN SAN [DAYS]

  KEYTYPE     ecdsa (P-256) | rsa (RSA-2048) | mldsa65 (ML-DSA-65, FIPS 204: OpenSSL >= 3.5)
  CA_PREFIX   the signing CA: CA_PREFIX.crt and CA_PREFIX.key (tls-certs/make-ca.sh)
  OUT_PREFIX  writes OUT_PREFIX.key (0600) and OUT_PREFIX.crt, e.g. .state/keys/nodes/amf/ecdsa
  SUBJECT_CN  e.g. amf.localdomain
  SAN         subjectAltName value, e.g. DNS:amf.localdomain,IP:10.100.1.5
  DAYS        validity in days (default 3650)

The certificate carries EKU serverAuth+clientAuth (TLS server and client, IKE).
Exit: 0 ok, 1 failure, 2 usage error.
USAGE
}

die() { echo "make-cert.sh: error: $*" >&2; exit 1; }

TMPFILES=()
cleanup() { if [[ ${#TMPFILES[@]} -gt 0 ]]; then rm -f "${TMPFILES[@]}"; fi; }
trap cleanup EXIT

# gen_key KEYTYPE PATH: write a new private key to PATH (atomically, 0600) unless it exists.
gen_key() {
    local keytype="$1" path="$2" tmp
    [[ -e "$path" ]] && return 0
    tmp="$(mktemp "${path}.XXXXXX")"
    TMPFILES+=("$tmp")
    case "$keytype" in
        ecdsa) openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp" 2>/dev/null ;;
        rsa)   openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$tmp" 2>/dev/null ;;
        mldsa65) openssl genpkey -algorithm ML-DSA-65 -out "$tmp" 2>/dev/null ;;
    esac || die "openssl could not generate a $keytype key for $path"
    # a full disk can leave openssl's output empty with exit 0: only a key that parses is moved in
    openssl pkey -in "$tmp" -noout 2>/dev/null || { rm -f "$tmp"; die "openssl wrote no usable $keytype key for $path (disk full?)"; }
    chmod 0600 "$tmp"
    mv -n "$tmp" "$path"
}

main() {
    if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then usage; exit 0; fi
    if [[ $# -lt 5 || $# -gt 6 ]]; then usage >&2; exit 2; fi
    local keytype="$1" ca="$2" prefix="$3" cn="$4" san="$5" days="${6:-3650}" keyusage
    case "$keytype" in
        ecdsa) keyusage="critical,digitalSignature" ;;
        rsa)   keyusage="critical,digitalSignature,keyEncipherment" ;;
        mldsa65) keyusage="critical,digitalSignature" ;;
        *) echo "make-cert.sh: unknown KEYTYPE '$keytype' (valid: ecdsa, rsa, mldsa65)" >&2; exit 2 ;;
    esac
    [[ -r "${ca}.crt" && -r "${ca}.key" ]] || die "CA ${ca}.crt/.key not found: run tls-certs/make-ca.sh (or make keys) first"
    umask 077
    mkdir -p "$(dirname "$prefix")"
    gen_key "$keytype" "${prefix}.key"
    [[ -e "${prefix}.crt" ]] && return 0
    local csr ext crt serial
    csr="$(mktemp "${prefix}.csr.XXXXXX")"; TMPFILES+=("$csr")
    ext="$(mktemp "${prefix}.ext.XXXXXX")"; TMPFILES+=("$ext")
    crt="$(mktemp "${prefix}.crt.XXXXXX")"; TMPFILES+=("$crt")
    serial="0x$(openssl rand -hex 16)"
    # ML-DSA signs the whole message (FIPS 204): no digest to name; the others sign SHA-256
    local digest=-sha256
    [[ "$keytype" != mldsa65 ]] || digest=""
    cat >"$ext" <<EXT
basicConstraints = critical,CA:FALSE
keyUsage = ${keyusage}
extendedKeyUsage = serverAuth,clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = ${san}
EXT
    openssl req -new -key "${prefix}.key" -subj "/CN=${cn}" -out "$csr" 2>/dev/null \
        || die "openssl could not create the request for ${prefix}.crt (CN=${cn})"
    openssl x509 -req -in "$csr" -CA "${ca}.crt" -CAkey "${ca}.key" -set_serial "$serial" \
        ${digest:+"$digest"} -days "$days" -extfile "$ext" -out "$crt" 2>/dev/null \
        || die "openssl could not sign ${prefix}.crt (CN=${cn}, SAN=${san}) with ${ca}.crt"
    chmod 0644 "$crt"
    mv "$crt" "${prefix}.crt"
}

main "$@"
