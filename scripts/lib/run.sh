# shellcheck shell=bash
# A run's lifecycle and manifest: traps, cleanups, recorded commands and files, events, the
# datapath line, run_end's validity check.
# Part of scripts/lib/common.sh, which sources it (source that, not this).

# ----------------------------------------------------------------- run lifecycle

cleanup_push() {
  local cmd
  printf -v cmd '%q ' "$@"
  _CLEANUP+=("$cmd")
}

_run_cleanups() {
  local i
  for ((i = ${#_CLEANUP[@]} - 1; i >= 0; i--)); do
    eval "${_CLEANUP[i]}" || warn "cleanup step failed: ${_CLEANUP[i]}"
  done
  _CLEANUP=()
}

_on_signal() {
  INTERRUPTED=1
  trap '' INT TERM
  exec 1>&3 2>&4
  log "interrupted: stopping, tearing down, keeping what was measured"
  exit 130
}

_on_exit() {
  local rc=$?
  trap '' INT TERM
  exec 1>&3 2>&4
  set +e
  if [[ -n "$CHILD_PID" ]]; then
    kill -TERM "$CHILD_PID" 2>/dev/null
    wait "$CHILD_PID" 2>/dev/null
    CHILD_PID=""
  fi
  capture_stop_all
  _stack_evidence_at_exit          # before the cleanups tear the stack down
  _run_cleanups
  if [[ -n "$RUN_DIR" && "$(tbm get "$RUN_DIR" state 2>/dev/null)" == running ]]; then
    _record_pending
    tbm add-logs "$RUN_DIR" || true
    local state="$RUN_STATE" reason="$RUN_REASON"
    if ((INTERRUPTED)); then
      state=interrupted; reason="interrupted by a signal (Ctrl-C or TERM)"; rc=130
    elif [[ "$state" != complete ]]; then
      ((MEASURED)) && state=incomplete || state=failed
      reason="${reason:-driver stopped with exit status $rc}"
      ((rc != 0)) || rc=1
    fi
    _judge_anyway "$state"
    tbm finish "$RUN_DIR" --state "$state" ${reason:+"--reason=$reason"} \
      || log "error: could not finish the manifest of $RUN_DIR"
    log "run $state: $RUN_DIR"
  fi
  exit "$rc"
}

# _judge_anyway STATE: a run that stopped early still has its whole-packet captures (stopped and
# recorded above): judge them, so the run itself answers whether anything leaked after the failure.
_judge_anyway() {
  local judged
  judged="$(tbm get "$RUN_DIR" valid 2>/dev/null || true)"
  [[ "$judged" != true && "$judged" != false ]] || return 0           # run_end judged it already
  [[ -n "$(find "$RUN_DIR" -maxdepth 1 -name '*.pcap*' -size +0 -print -quit 2>/dev/null)" ]] || return 0
  log "the run is $1: judging its capture anyway (did anything leak after the failure?)"
  tb validity "$RUN_DIR" >&2 || true
}

install_traps() {
  trap _on_exit EXIT
  trap _on_signal INT TERM
}

# run_begin EXPERIMENT [--image NAME ...]: the run directory and its manifest (state running).
run_begin() {
  local exp="$1"
  shift
  if [[ "$DRY_RUN" == 1 ]]; then
    RUN_DIR=""
    printf '+ %s: would write %s/%s/%s/%s/<run>/ with parameters:' "$SCRIPT_NAME" \
      "$RESULTS" "${CAMPAIGN:-adhoc}" "$exp" "$PROFILE"
    printf ' %q' "${PARAM_ARGS[@]}"
    printf '\n'
    return 0
  fi
  mkdir -p "$RESULTS" 2>/dev/null || die "cannot create the results root $RESULTS; set RESULTS=<writable dir>" 1
  # on failure `manifest create` said why in one line (a read-only RESULTS, a bad parameter)
  # the spec load_params read, verbatim; RERUN_OF: the run this one repeats (scripts/rerun.sh)
  RUN_DIR="$(tbm create "$RESULTS" --experiment "$exp" --profile "$PROFILE" \
    --driver-pid "$$" "$@" "${PARAM_ARGS[@]/#/--param=}" ${RUN_SPEC:+"--spec=$RUN_SPEC"} \
    ${RERUN_OF:+"--rerun-of=$RERUN_OF"})" || exit 1
  log "run directory: $RUN_DIR"
}

# shell_join ARGS...: one command line, quoting only the words that need it (readable, exact).
shell_join() {
  local out="" a
  for a in "$@"; do
    if [[ "$a" =~ ^[A-Za-z0-9_./:=,@%+-]+$ ]]; then
      out+="$a "
    else
      out+="${a@Q} "
    fi
  done
  printf '%s' "$out"
}

_record_command() {
  local line
  line="$(shell_join "$@")"
  if [[ "$DRY_RUN" == 1 ]]; then
    printf '+ %s\n' "${line% }" >&3
    return 0
  fi
  [[ -z "$RUN_DIR" ]] || tbm add-command "$RUN_DIR" --command="${line% }" >/dev/null
}

# run_cmd CMD...: record and run (in DRY_RUN only print).
run_cmd() {
  _record_command "$@"
  [[ "$DRY_RUN" == 1 ]] && return 0
  "$@" 3>&- 4>&- 9>&-
}

# run_bg_wait CMD...: like run_cmd, but the driver's Ctrl-C/TERM trap fires at once (the child
# runs in the background and is stopped by the exit trap). stdout/stderr as the caller redirects.
run_bg_wait() {
  _record_command "$@"
  [[ "$DRY_RUN" == 1 ]] && return 0
  local rc=0
  "$@" 3>&- 4>&- 9>&- &
  CHILD_PID=$!
  wait "$CHILD_PID" || rc=$?
  CHILD_PID=""
  return "$rc"
}

# record_file REL_PATH KIND [ATTR=VALUE ...]: register a raw file written in RUN_DIR.
record_file() {
  local rel="$1" kind="$2"
  shift 2
  [[ "$DRY_RUN" == 1 ]] && return 0
  tbm add-file "$RUN_DIR" --path "$rel" --kind "$kind" "${@/#/--attr=}" \
    || die "could not record $rel in $RUN_DIR/manifest.json" 1
  [[ "$kind" == log || "$kind" == pcap || "$kind" == keylog ]] || MEASURED=1
}

# _split_command CALLER ATTRS CMD [ATTR=VALUE ...] -- CMD...: the words before `--` into the array
# named ATTRS, the command after it into the array named CMD (measure, capture_start).
_split_command() {
  local caller="$1"
  local -n _split_attrs="$2" _split_cmd="$3"
  shift 3
  _split_attrs=()
  while (($#)) && [[ "$1" != -- ]]; do
    _split_attrs+=("$1")
    shift
  done
  [[ "${1:-}" == -- ]] || die "$caller: missing -- before the command (a bug in $SCRIPT_NAME)" 1
  shift
  _split_cmd=("$@")
}

# measure REL KIND [ATTR=VALUE ...] -- CMD...: run CMD (interruptible) with stdout into RUN_DIR/REL
# and stderr appended to RUN_DIR/driver-stderr.log, then record REL. If the run stops midway (or the
# overlay watcher saw the overlay die), the exit trap records what was written with partial=true
# (kept, never thrown away).
_PENDING=()
measure() {
  local rel="$1" kind="$2" attrs=() cmd=() rc=0
  shift 2
  _split_command measure attrs cmd "$@"
  set -- "${cmd[@]}"
  if [[ "$DRY_RUN" == 1 ]]; then
    _record_command "$@"
    return 0
  fi
  _PENDING=("$rel" "$kind" "${attrs[@]}")
  run_bg_wait "$@" >"$RUN_DIR/$rel" 2>>"$RUN_DIR/driver-stderr.log" || rc=$?
  # a set the overlay watcher cut short (scripts/lib/watch.sh): its caller reports the loss first and
  # the exit trap records the file as partial, which it is (a Python run here delayed the report)
  [[ ! -s "${OVERLAY_DIED:-}" ]] || return "$rc"
  _PENDING=()
  record_file "$rel" "$kind" "${attrs[@]}"
  return "$rc"
}

_record_pending() {
  ((${#_PENDING[@]})) || return 0
  local rel="${_PENDING[0]}"
  if [[ -s "$RUN_DIR/$rel" ]]; then
    local attrs=("${_PENDING[@]:2}")
    tbm add-file "$RUN_DIR" --path "$rel" --kind "${_PENDING[1]}" \
      "${attrs[@]/#/--attr=}" --attr=partial=true >/dev/null \
      && log "kept partial $rel" && MEASURED=1
  fi
  _PENDING=()
}

run_event() {
  local level="$1"
  shift
  [[ "$DRY_RUN" == 1 || -z "$RUN_DIR" ]] && return 0
  tbm event "$RUN_DIR" --level "$level" --message="$*" >/dev/null || true
}

# datapath_from_log FILE...: record what the overlay entrypoints printed (`datapath: <overlay>=...`,
# read by the overlay plug-ins' own datapath values) and shout if it is a userspace datapath.
datapath_from_log() {
  local dp
  [[ "$DRY_RUN" == 1 || -z "$RUN_DIR" ]] && return 0
  dp="$(tbm datapath-from-log "$RUN_DIR" "$@")"
  if [[ "$(tbm get "$RUN_DIR" datapath.userspace)" == true ]]; then
    loud "USERSPACE DATAPATH ($dp): this host lacks the overlay's kernel datapath; latencies are NOT" \
      "comparable with kernel-datapath runs (recorded: datapath.userspace = true)"
    run_event warning "userspace datapath: $dp"
  else
    log "datapath: $dp"
  fi
}

# run_end: check the run's own capture, finish the manifest. Returns 0 valid, 1 invalid.
run_end() {
  [[ "$DRY_RUN" == 1 ]] && return 0
  local rc=0
  capture_stop_all
  tbm add-logs "$RUN_DIR" || die "could not record the logs of $RUN_DIR" 1
  tb validity "$RUN_DIR" || rc=1
  RUN_STATE=complete
  tbm finish "$RUN_DIR" --state complete >/dev/null \
    || die "could not finish the manifest of $RUN_DIR" 1
  if ((rc)); then
    loud "run $RUN_DIR is INVALID (manifest: valid=false); its data must not be used"
  else
    log "run complete and valid: $RUN_DIR"
  fi
  return "$rc"
}
