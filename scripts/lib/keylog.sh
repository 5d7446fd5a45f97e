# shellcheck shell=bash
# Key export of run-sbi (KEYS=1, docs/analysis.md "Decryption"): the key material of the iteration's
# own traffic, copied out of the containers before they go, for the per-operation breakdown only.
# Sourced by scripts/run-sbi.sh after scripts/lib/common.sh (log, warn, run_event, record_file,
# overlay_endpoints, DC, RUN_DIR, PROTOCOL, DRY_RUN). Secrets: mode 0600 in the run directory,
# manifest kind `keylog`, never printed, never read into a report.

# keylog_collect TAG ITERATION: TLS: every SBI NF's key log (testbed/keylog NF_KEYLOG, written
# under patches/open5gs/0003-sbi-tls-keylog.patch) into TAG-tls-keys.log; IPsec: each holder's
# charon key log (ESP SAs, testbed/overlays/ipsec.py KEYS_LOG) into TAG-esp-keys-<node>.log.
# Other protocols have nothing the tools can export (recorded as an event).
keylog_collect() {
  local tag="$1" it="$2" node out nodes=() got=0
  [[ "${KEYS:-0}" == 1 ]] || return 0
  case "$PROTOCOL" in
    tls)
      out="$tag-tls-keys.log"
      mapfile -t nodes < <(overlay_endpoints tls)
      [[ "$DRY_RUN" == 1 ]] && { printf '+ (copy the TLS key logs of %s into %s)\n' "${nodes[*]}" "$out" >&3; return 0; }
      (umask 077 && : >"$RUN_DIR/$out")
      for node in "${nodes[@]}"; do
        if "${DC[@]}" exec -T "$node" cat /run/open5gs/tls-keys.log >>"$RUN_DIR/$out" 2>/dev/null; then
          got=$((got + 1))
        else
          warn "KEYS=1: no TLS key log from $node ($tag): an image without patches/open5gs/0003?"
        fi
      done
      chmod 600 "$RUN_DIR/$out"
      record_file "$out" keylog protocol=tls "iteration=$it" "nodes=$got"
      ;;
    ipsec)
      mapfile -t nodes < <(overlay_endpoints ipsec)
      for node in "${nodes[@]}"; do
        out="$tag-esp-keys-$node.log"
        [[ "$DRY_RUN" == 1 ]] && { printf '+ (copy the ESP keys of %s-net into %s)\n' "$node" "$out" >&3; continue; }
        (umask 077 && : >"$RUN_DIR/$out")
        "${DC[@]}" exec -T "$node-net" cat /run/testbed/charon-keys.log >"$RUN_DIR/$out" 2>/dev/null \
          || warn "KEYS=1: no charon key log from $node-net ($tag)"
        chmod 600 "$RUN_DIR/$out"
        record_file "$out" keylog protocol=esp "iteration=$it" "node=$node"
      done
      ;;
    none) ;;
    *) run_event info "KEYS=1: $PROTOCOL exports no key material the tools can use (docs/analysis.md): its SBI stays unread" ;;
  esac
}
