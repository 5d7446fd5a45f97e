# shellcheck shell=bash
# Key export of run-sbi (KEYS=1, docs/analysis.md "Decryption"): the key material of the iteration's
# own traffic, copied out of the containers before they go, for the per-operation breakdown only.
# Where the keys are is the overlay plug-in's answer (`python -m testbed overlay key-sources`:
# container, path, label, combined; testbed/contract.py KeySource). Sourced by scripts/run-sbi.sh
# after scripts/lib/common.sh (log, warn, run_event, record_file, overlay_ask, overlay_endpoints,
# DC, RUN_DIR, DRY_RUN). Secrets: mode 0600 in the run directory, manifest kind `keylog`, never
# printed, never read into a report.

# keylog_collect TAG ITERATION: every key source of the overlay, from every endpoint, into
# TAG-<label>-keys.log (combined) or TAG-<label>-keys-<node>.log (one per endpoint).
keylog_collect() {
  local tag="$1" it="$2" line container path label combined node out nodes=() sources=()
  [[ "${KEYS:-0}" == 1 ]] || return 0
  mapfile -t sources < <(overlay_ask key-sources)
  if ((${#sources[@]} == 0)); then
    run_event info "KEYS=1: the $PROTOCOL overlay exports no key material the tools can use (docs/analysis.md)"
    return 0
  fi
  mapfile -t nodes < <(overlay_endpoints)
  for line in "${sources[@]}"; do
    read -r container path label combined <<<"$line"
    if [[ "$combined" == 1 ]]; then
      keylog_copy "$tag-$label-keys.log" "$container" "$path" "$label" "$it" "${nodes[@]}"
    else
      for node in "${nodes[@]}"; do
        keylog_copy "$tag-$label-keys-$node.log" "$container" "$path" "$label" "$it" "$node"
      done
    fi
  done
}

# keylog_copy OUT CONTAINER PATH LABEL ITERATION NODE...: PATH from each node's CONTAINER ({node}
# replaced) appended into RUN_DIR/OUT (0600 before anything is written), recorded as a key file.
keylog_copy() {
  local out="$1" container="$2" path="$3" label="$4" it="$5" node got=0
  shift 5
  if [[ "$DRY_RUN" == 1 ]]; then
    printf '+ (copy %s from %s of %s into %s)\n' "$path" "$container" "$*" "$out" >&3
    return 0
  fi
  (umask 077 && : >"$RUN_DIR/$out")
  for node in "$@"; do
    if "${DC[@]}" exec -T "${container//\{node\}/$node}" cat "$path" >>"$RUN_DIR/$out" 2>/dev/null </dev/null; then
      got=$((got + 1))
    else
      warn "KEYS=1: no key log $path from ${container//\{node\}/$node} (for $out)"
    fi
  done
  chmod 600 "$RUN_DIR/$out"
  record_file "$out" keylog "protocol=$label" "iteration=$it" "nodes=$got"
}
