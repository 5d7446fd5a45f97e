# shellcheck shell=bash
# Attach: a UE's PDU session waited for on the log stream, attach attempts and their failures.
# Part of scripts/lib/common.sh, which sources it (source that, not this).

# wait_ue_session SERVICE DEADLINE_S: block until the UE logs its PDU session's TUN interface
# (UERANSIM: "... TUN interface[uesimtun0, <addr>] is up."; OAI: "Interface oaitun_ue1 successfully
# configured": the render's RAN_UE_SESSION_LOG), reading one `docker compose logs --follow`
# stream: no exec, no polling while the attach is being measured. 1 on the deadline.
wait_ue_session() {
  local svc="$1" deadline_s="$2"
  UE_SESSION_MARKER="$(ran_value RAN_UE_SESSION_LOG)"
  if [[ "$DRY_RUN" == 1 ]]; then
    _record_command timeout "$deadline_s" "${DC[@]}" "${STACK_ALL_PROFILES[@]}" logs --follow --no-color "$svc"
    return 0
  fi
  stream_until _ue_tun_up timeout "$deadline_s" "${DC[@]}" "${STACK_ALL_PROFILES[@]}" logs --follow --no-color "$svc"
}

# _ue_tun_up LINE: the UE's log line of its PDU session (UERANSIM "TUN interface[uesimtun0, ...] is
# up", OAI "Interface oaitun_ue1 successfully configured": the render's RAN_UE_SESSION_LOG)
_ue_tun_up() {
  [[ "$1" == *"$UE_SESSION_MARKER"* && ("$1" != *"TUN interface["* || "$1" == *"] is up"*) ]]
}

# attach_ue IT UE ROLE LOG: start the UE (one registration), wait for its PDU session; failed
# attempts are recorded and retried (the UE container is removed and started again), RETRIES
# attempts within ATTACH_TIMEOUT each; compose output goes to RUN_DIR/LOG. The manifest's ues
# and attach_failures carry IT as the iteration. Returns 1 when every attempt failed.
attach_ue() {
  local it="$1" ue="$2" role="$3" rel="$4" attempt imsi reason final start
  imsi="$(stack_value "subscribers.$ue.imsi")"
  for ((attempt = 1; attempt <= RETRIES; attempt++)); do
    log "iteration $it: $ue ($role) attach, attempt $attempt/$RETRIES (deadline ${ATTACH_TIMEOUT}s)"
    start=$SECONDS
    # no probe inside the measured window: the UE's healthcheck is deferred past it, and the
    # driver blocks on the UE's own log line instead of polling `docker exec`
    if run_cmd env UE_HEALTH_START_INTERVAL=3600s "${DC[@]}" "${STACK_ALL_PROFILES[@]}" up -d --no-deps "$ue" \
         >>"$(out_path "$rel")" 2>&1 \
      && wait_ue_session "$ue" "$ATTACH_TIMEOUT"; then
      [[ "$DRY_RUN" == 1 ]] || tbm add-ue "$RUN_DIR" --attr "name=$ue" --attr "imsi=$imsi" \
        --attr "role=$role" --attr "iteration=$it" --attr "attempt=$attempt" --attr attached=true
      log "iteration $it: $ue has its PDU session after ~$((SECONDS - start))s (exact time: from the N2 capture)"
      return 0
    fi
    # the UE's last log line, without terminal escapes (UERANSIM colours its log)
    reason="no PDU session within ${ATTACH_TIMEOUT}s; last log line: $("${DC[@]}" "${STACK_ALL_PROFILES[@]}" logs --no-color --tail 1 "$ue" 2>&1 | tail -n 1 | sed 's/\x1b\[[0-9;]*[A-Za-z]//g' | tr -cd '[:print:]\t' || true)"
    warn "iteration $it: $ue attempt $attempt failed: $reason"
    final=false
    ((attempt < RETRIES)) || final=true
    # the UE's log and nr-cli view (and the RAN's) before its container is removed for the retry
    local evidence
    evidence="failure/$(printf 'it%02d' "$it")-$ue-attempt$attempt"
    engine_evidence "$RUN_DIR/$evidence" "$ue" "$(ran_value RAN_READY)"
    tbm add-failure "$RUN_DIR" --attr "ue=$ue" --attr "attempt=$attempt" --attr "iteration=$it" \
      --attr "final=$final" --attr "reason=$reason" --attr "evidence=$evidence" || warn "could not record the failed attach"
    "${DC[@]}" "${STACK_ALL_PROFILES[@]}" rm -sf "$ue" >>"$(out_path "$rel")" 2>&1 || true
  done
  tbm add-ue "$RUN_DIR" --attr "name=$ue" --attr "imsi=$imsi" --attr "role=$role" \
    --attr "iteration=$it" --attr "attempt=$RETRIES" --attr attached=false || true
  return 1
}

# ue_has_session SERVICE [N]: at least N (default 1) PDU session interfaces (uesimtun<i>, or the
# OAI UE's oaitun_ue<i>) with an address.
ue_has_session() {
  (($(ue_sessions "$1") >= ${2:-1}))
}

# ue_sessions SERVICE: how many PDU session interfaces with an address the container has (0 if none).
ue_sessions() {
  local prefix count
  prefix="$(ran_value RAN_UE_TUN)"
  prefix="${prefix%%[0-9]*}"
  count="$(timeout 30 "${DC[@]}" "${STACK_ALL_PROFILES[@]}" exec -T "$1" ip -4 -o addr show 2>/dev/null \
    | grep -cE " ${prefix}[0-9]+ +inet ")" || true
  echo "${count:-0}"
}
