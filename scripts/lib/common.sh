# shellcheck shell=bash
# Shared bash for the experiment drivers (scripts/run-*.sh, scripts/campaign.sh).
# Source it; it defines functions and a few globals, and starts nothing.
#
#   log/warn/loud/die          messages on stderr (die exits; 2 = usage error); loud = banner
#   wait_for DEADLINE WHAT CMD probe CMD every 0.2 s until it succeeds or DEADLINE seconds pass
#   parse_params EXP ARGS...   --flag value / --flag=value -> FLAG variables (Make names)
#   load_params EXP            check every parameter + PROFILE once (python -m testbed params) or exit 2
#   install_traps              EXIT/INT/TERM: stop children and captures, run cleanups, finish the manifest
#   run_begin EXP [--image I]  create the run directory + manifest (RUN_DIR, state running)
#   run_cmd CMD...             record the exact command in the manifest and run it (DRY_RUN: print)
#   run_bg_wait CMD...         same, but a signal interrupts the driver at once
#   measure REL KIND A=V -- CMD  run CMD with stdout into RUN_DIR/REL, record it (partial if cut)
#   record_file REL KIND A=V   register a raw file (relative to RUN_DIR) in the manifest
#   capture_start NAME REL A=V -- CMD / capture_stop NAME   captures with deadlines, recorded as pcap
#   cleanup_push CMD...        run CMD at exit (reverse order), whatever happens
#   datapath_from_log FILE     record the overlay's `datapath: ...` line; banner if userspace
#   render_hashes DIR REL      sha256 of the rendered configs that ran
#   run_end                    record logs, validity check, manifest finish (complete); 1 if invalid
#   docker_begin, stack_up, stack_teardown, stack_logs, stack_overlay_state, dc_exec, bridge_of,
#   ue_has_session, attach_ue  the Docker stack, through scripts/up.sh and scripts/lib/compose.sh
#
# Exit codes: 0 ok, 1 failure (or invalid run), 2 usage error, 130 interrupt.

# shellcheck disable=SC2034  # globals are read by the drivers
if [[ -n "${_TESTBED_COMMON_SH:-}" ]]; then
  return 0
fi
_TESTBED_COMMON_SH=1
# fd 3/4 = the driver's own stdout/stderr: DRY_RUN prints the plan on fd 3 even where a command's
# output is redirected into a file, and the exit trap returns to them (a signal can arrive while
# stdout is redirected into a raw file, which must not receive the trap's messages). Children get
# neither (3>&- 4>&-).
exec 3>&1 4>&2

TESTBED_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
# `python -m testbed` works from anywhere without installing the package
export PYTHONPATH="$TESTBED_ROOT${PYTHONPATH:+:$PYTHONPATH}"
RESULTS="${RESULTS:-results}"
STATE="${STATE:-.state}"
DRY_RUN="${DRY_RUN:-0}"
PROFILE="${PROFILE:-}"
PLANE="${PLANE:-}"          # set by load_params from the experiment
PROTOCOL="${PROTOCOL:-}"    # set by load_params from the profile
SCRIPT_NAME="$(basename "${0:-driver}" .sh)"
RUN_DIR=""
RUN_STATE="failed"        # what the exit trap records unless the run got further
RUN_REASON=""
INTERRUPTED=0
MEASURED=0
CHILD_PID=""
declare -a _CLEANUP=()
declare -A _CAPTURE_PID=()
declare -A _CAPTURE_FILE=()
declare -A _CAPTURE_ATTRS=()

log() { printf '%s %s: %s\n' "$(date -u +%H:%M:%S)" "$SCRIPT_NAME" "$*" >&2; }
warn() { log "WARNING: $*"; }

# A banner nobody can miss (invalid runs, userspace datapath).
loud() {
  local bar
  bar="$(printf '%*s' 78 '' | tr ' ' '!')"
  printf '%s\n%s: %s\n%s\n' "$bar" "$SCRIPT_NAME" "$*" "$bar" >&2
}

# die MESSAGE [CODE]: what failed, for which object, what to do next.
die() {
  local code="${2:-1}"
  log "error: $1"
  RUN_REASON="${RUN_REASON:-$1}"
  exit "$code"
}

# The testbed's Python CLI, from the repository root (so `testbed` imports without installing).
tb() {
  "$PYTHON" -m testbed "$@"
}

# `python -m testbed manifest ...` without loading every other command (called often per run)
tbm() {
  "$PYTHON" -m testbed.cli.manifest "$@"
}

# stack_address NODE NETWORK: the node's address from nf-configs/stack.yaml (never typed twice).
stack_address() {
  "$PYTHON" -c 'import sys; from testbed import stack; print(stack.address(sys.argv[1], sys.argv[2]))' "$1" "$2" \
    || die "no address for $1 on network $2 in nf-configs/stack.yaml" 1
}

# out_path REL: RUN_DIR/REL, or /dev/null in a dry run (for redirections).
out_path() {
  if [[ "$DRY_RUN" == 1 || -z "$RUN_DIR" ]]; then
    echo /dev/null
  else
    echo "$RUN_DIR/$1"
  fi
}

# render_hashes DIR REL: sha256 of every rendered config under DIR into RUN_DIR/REL (a log): which
# configuration ran, without copying secrets into the results.
render_hashes() {
  local dir="$1" rel="$2"
  [[ "$DRY_RUN" == 1 || -z "$RUN_DIR" || ! -d "$dir" ]] && return 0
  (cd "$dir" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum) >"$RUN_DIR/$rel" 2>/dev/null \
    || warn "could not hash the rendered configs in $dir"
}

# stack_value DOTTED.KEY: a value of nf-configs/stack.yaml (e.g. networks.n6.gateway).
stack_value() {
  "$PYTHON" -c 'import sys; from testbed import stack
v = stack.load()
for k in sys.argv[1].split("."):
    v = v[k]
print(v)' "$1" || die "nf-configs/stack.yaml has no $1" 1
}

# ping_rc_ok RC FILE: ping exits 1 when replies were lost (losses are data: sequence gaps), 2 on
# errors. Accept 0 and 1 as long as at least one reply came back.
ping_rc_ok() {
  local rc="$1" file="$2"
  ((rc <= 1)) && grep -q ' bytes from ' "$file" 2>/dev/null
}

require_root() {
  [[ "$(id -u)" == 0 ]] || die "$SCRIPT_NAME needs root (network namespaces, captures): run it with sudo" 1
}

# require_tools TOOL...: each on PATH, or in an sbin directory (added to PATH: a plain user's PATH
# often lacks /usr/sbin, where swanctl, nft and ip live), or die naming the missing ones.
require_tools() {
  local missing=() t d
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 && continue
    for d in /usr/local/sbin /usr/sbin /sbin; do
      if [[ -x "$d/$t" && ":$PATH:" != *":$d:"* ]]; then
        PATH="$PATH:$d"
        break
      fi
    done
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  ((${#missing[@]} == 0)) || die "missing programs: ${missing[*]}; run \`make setup\` (or \`make doctor\`)" 1
}

# wait_for DEADLINE_S WHAT CMD...: poll CMD (quietly) until it succeeds; fail naming WHAT.
wait_for() {
  local deadline_s="$1" what="$2"
  shift 2
  if [[ "$DRY_RUN" == 1 ]]; then
    printf '+ wait_for %ss %s: %s\n' "$deadline_s" "${what@Q}" "$(shell_join "$@")" >&3
    return 0
  fi
  local end=$((SECONDS + deadline_s))
  while true; do
    if "$@" >/dev/null 2>&1; then
      return 0
    fi
    if ((SECONDS >= end)); then
      log "error: $what: not ready after ${deadline_s}s (probe: $*)"
      return 1
    fi
    sleep 0.2
  done
}

# ----------------------------------------------------------------- parameters

# usage_parameters EXPERIMENT PLANE [NEEDS]: the part of a Docker driver's --help every driver shares:
# what it needs, its parameters (python -m testbed params), PROFILE of PLANE, RESULTS, DRY_RUN.
usage_parameters() {
  cat <<EOF
Needs root, Docker Engine + Compose v2 and the images${3:-} (make build; make doctor checks).
Parameters (flags --name, or the Make/environment variable NAME):
$(tb params "$1" --format help)
  PROFILE         a profile of the $2 plane (make profiles PLANE=$2) [default: baseline]
  RESULTS         results root [default: results]
  DRY_RUN=1       print the commands, start nothing
EOF
}

# parse_params EXPERIMENT ARGS...: flags named after the Make variables (--sizes = SIZES,
# --ping-deadline = PING_DEADLINE); unknown names are rejected later by load_params with the list.
# --results, --state and --dry-run are common to all drivers. Sets PARAM_NAMES.
declare -a PARAM_NAMES=()
parse_params() {
  local exp="$1" name value
  shift
  local described
  described="$(tb params "$exp" --format help)" \
    || die "cannot list the parameters of $exp (python -m testbed params $exp --format help failed, see above)" 1
  mapfile -t PARAM_NAMES < <(awk '{print $1}' <<<"$described")
  while (($#)); do
    case "$1" in
      -h | --help) usage; exit 0 ;;
      --dry-run) DRY_RUN=1; shift; continue ;;
      --*=*) name="${1%%=*}"; value="${1#*=}"; shift ;;
      --*)
        (($# >= 2)) || die "option $1 needs a value (see --help)" 2
        name="$1"; value="$2"; shift 2 ;;
      *) die "unexpected argument '$1' (see --help)" 2 ;;
    esac
    name="${name#--}"
    name="${name^^}"
    name="${name//-/_}"
    case "$name" in
      RESULTS) RESULTS="$value" ;;
      STATE) STATE="$value" ;;
      PROFILE) PROFILE="$value" ;;
      *)
        if [[ " ${PARAM_NAMES[*]} " != *" $name "* ]]; then
          local flags="${PARAM_NAMES[*],,}"
          flags="--${flags// / --}"
          die "unknown option --${name,,} for $exp; valid: ${flags//_/-} --profile --results --dry-run (see --help)" 2
        fi
        printf -v "$name" '%s' "$value" ;;
    esac
  done
}

# load_params EXPERIMENT: validate PROFILE and every parameter once, fill in defaults, or exit 2.
PARAM_ARGS=()
load_params() {
  local exp="$1" name assignments
  PARAM_ARGS=()
  for name in "${PARAM_NAMES[@]}"; do
    PARAM_ARGS+=("$name=${!name:-}")
  done
  # a PLANE given to an experiment without that parameter must name its own plane (checked, not ignored)
  [[ -z "${PLANE:-}" || " ${PARAM_NAMES[*]} " == *" PLANE "* ]] || PARAM_ARGS+=("PLANE=$PLANE")
  [[ -n "${PROFILE:-}" ]] || die "PROFILE is not set; list them with \`make profiles\`" 2
  if ! assignments="$(tb params "$exp" "${PARAM_ARGS[@]}" --profile "$PROFILE")"; then
    log "error: parameters rejected before anything started (see above); valid ones: $SCRIPT_NAME --help"
    exit 2
  fi
  eval "$assignments"
  PARAM_ARGS=()
  for name in "${PARAM_NAMES[@]}"; do
    PARAM_ARGS+=("$name=${!name}")
  done
}

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
  RUN_DIR="$(tbm create "$RESULTS" --experiment "$exp" --profile "$PROFILE" \
    --driver-pid "$$" "$@" "${PARAM_ARGS[@]/#/--param=}")" || exit 1
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
# and stderr appended to RUN_DIR/driver-stderr.log, then record REL. If the run stops midway, the
# exit trap records what was written with partial=true (kept, never thrown away).
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
    loud "USERSPACE DATAPATH ($dp): this host has no kernel ESP/WireGuard; latencies are NOT" \
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

# ----------------------------------------------------------------- captures

# capture_start NAME REL [ATTR=VALUE ...] -- CMD...: start a capture that writes RUN_DIR/REL (CMD
# carries its own -w); wait (deadline) until it captures. capture_stop records REL in the manifest
# as kind pcap with the attributes (also when the run is cut short: the exit trap stops captures).
capture_start() {
  local name="$1" rel="$2" attrs=() cmd=()
  shift 2
  _split_command capture_start attrs cmd "$@"
  set -- "${cmd[@]}"
  # the measuring tools on their own CPUs (CPUSET_TOOLS), apart from the stack's
  [[ -z "${CPUSET_TOOLS:-}" ]] || set -- taskset -c "$CPUSET_TOOLS" "$@"
  _record_command "$@"
  [[ "$DRY_RUN" == 1 ]] && return 0
  setsid "$@" >>"$RUN_DIR/${rel%.*}.capture.log" 2>&1 3>&- 4>&- 9>&- &
  _CAPTURE_PID[$name]=$!
  _CAPTURE_FILE[$name]="$rel"
  _CAPTURE_ATTRS[$name]="${attrs[*]}"
  if ! wait_for 20 "capture $name ($rel)" _capture_ready "$name"; then
    die "capture $name did not start; see $RUN_DIR/${rel%.*}.capture.log" 1
  fi
  log "capture $name running: $rel"
}

_capture_ready() {
  local name="$1" rel="${_CAPTURE_FILE[$1]}"
  # dumpcap opens the interface before it writes the file header: a header means it captures
  kill -0 "${_CAPTURE_PID[$name]}" 2>/dev/null && [[ -s "$RUN_DIR/$rel" ]]
}

capture_stop() {
  local name="$1" pid rel attrs
  pid="${_CAPTURE_PID[$name]:-}"
  [[ -n "$pid" ]] || return 0
  rel="${_CAPTURE_FILE[$name]}"
  # dumpcap/tshark flush and close the file on TERM (INT may be ignored in background jobs)
  kill -TERM "$pid" 2>/dev/null || true
  local end=$((SECONDS + 10))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < end)); do
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    warn "capture $name did not stop within 10 s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  unset "_CAPTURE_PID[$name]"
  read -r -a attrs <<<"${_CAPTURE_ATTRS[$name]}"
  if [[ -s "$RUN_DIR/$rel" ]]; then
    tbm add-file "$RUN_DIR" --path "$rel" --kind pcap "${attrs[@]/#/--attr=}" >/dev/null \
      || log "error: could not record capture $rel in the manifest"
  else
    warn "capture $name wrote nothing ($rel)"
  fi
  [[ ! -s "$RUN_DIR/${rel%.*}.capture.log" ]] \
    || tbm add-file "$RUN_DIR" --path "${rel%.*}.capture.log" --kind log >/dev/null || true
}

capture_stop_all() {
  local name
  for name in "${!_CAPTURE_PID[@]}"; do
    capture_stop "$name"
  done
}

# ----------------------------------------------------------------- ping

# ping_deadline COUNT: seconds one set may take (PING_DEADLINE, or from PINGS x INTERVAL + slack).
ping_deadline() {
  local count="$1"
  if ((${PING_DEADLINE:-0} > 0)); then
    echo "$PING_DEADLINE"
  else
    awk -v n="$count" -v i="$INTERVAL" 'BEGIN { d = n * (i > 0.002 ? i : 0.002) * 2 + 30; printf "%d\n", d }'
  fi
}

# ping_argv COUNT SIZE: ping's options for one set: exactly COUNT requests (-c without -w: with a
# deadline, iputils keeps sending past COUNT until COUNT replies arrive, so losses would be
# counted over more than COUNT), ICMP message SIZE, 2 s per reply; the set's deadline is enforced
# from outside by `timeout`, and a set cut short shows as fewer than COUNT transmitted.
ping_argv() {
  local count="$1" size="$2"
  printf '%s\0' timeout --signal=INT "$(ping_deadline "$count")" env LC_ALL=C ping -D -n -c "$count" \
    -i "$INTERVAL" -W 2 -s "$(ping_payload "$size")"
}

# ping_payload SIZE: ping's -s for an ICMP message of SIZE bytes. SIZES are ICMP message sizes as
# the papers mean "64 bytes" (ping's default: 56 B of data + the 8 B ICMP header = 64 B).
ping_payload() {
  echo $(($1 - 8))
}

# ping_sent FILE: the requests ping says it transmitted ("N packets transmitted"), 0 if none.
ping_sent() {
  local n
  n="$(sed -n 's/^\([0-9][0-9]*\) packets transmitted.*/\1/p' "$1" 2>/dev/null | tail -n 1)"
  echo "${n:-0}"
}

# flag_loss FILE SET SIZE: a set that lost more than LOSS_MAX % (default 1) of its requests is
# flagged in the manifest (a warning event the report lists): the number may hide a sick overlay.
flag_loss() {
  local pct
  pct="$(sed -n 's/.* received, \([0-9.]*\)% packet loss.*/\1/p' "$1" | tail -n 1)"
  [[ -n "$pct" ]] || return 0
  if awk -v p="$pct" -v m="${LOSS_MAX:-1}" 'BEGIN { exit !(p > m) }'; then
    warn "set $2 (size $3) lost $pct % of its requests (more than LOSS_MAX=${LOSS_MAX:-1} %)"
    tbm event "$RUN_DIR" --level warning --message "loss: set $2 size $3 lost $pct % (> ${LOSS_MAX:-1} %)" \
      || warn "could not record the loss flag"
  fi
}

# ping_series WHO: the warm-up (kept, not counted), then SETS x PINGS pings for every size in
# SIZES, each set into its own raw file. `ping_cmd COUNT SIZE` (NUL-separated argv; UE 1 by
# default, run-overlay defines its own) and TARGET; WHO names the sender; PING_ATTRS (A=V words) go into
# every ping file's manifest entry (run-f1u: path=f1u|e2e).
PING_ATTRS=()
ping_series() {
  local who="$1" size set rel rc cmd=()
  size="${SIZES%% *}"
  rel="warmup-s$size.txt"
  log "warm-up: $WARMUP pings (tunnel established; kept as $rel, not counted)"
  mapfile -d '' -t cmd < <(ping_cmd "$WARMUP" "$size")
  rc=0
  measure "$rel" ping "size=$size" set=0 warmup=true "${PING_ATTRS[@]}" -- "${cmd[@]}" || rc=$?
  [[ "$DRY_RUN" == 1 ]] || ping_rc_ok "$rc" "$RUN_DIR/$rel" \
    || die "warm-up: $who got no reply from $TARGET (ping exit $rc): profile $PROFILE passes no traffic; see $RUN_DIR/$rel" 1
  for size in $SIZES; do
    for ((set = 1; set <= SETS; set++)); do
      rel="$(printf 'ping-s%s-set%02d.txt' "$size" "$set")"
      log "size $size B, set $set/$SETS: $PINGS pings every ${INTERVAL}s -> $rel"
      mapfile -d '' -t cmd < <(ping_cmd "$PINGS" "$size")
      rc=0
      measure "$rel" ping "size=$size" "set=$set" warmup=false "payload=$(ping_payload "$size")" \
        "ip_len=$((size + 20))" "${PING_ATTRS[@]}" -- "${cmd[@]}" || rc=$?
      [[ "$DRY_RUN" == 1 ]] && continue
      # a watcher (run-overlay, docker_watch_start) that saw the overlay die says so, with the time
      [[ -z "${OVERLAY_DIED:-}" || ! -s "$OVERLAY_DIED" ]] \
        || die "the overlay died during set $set (size $size): $(overlay_died_reason); the run is invalid" 1
      ping_rc_ok "$rc" "$RUN_DIR/$rel" \
        || die "ping set $set (size $size) from $who to $TARGET failed (exit $rc); see $RUN_DIR/$rel" 1
      # exactly PINGS requests per set: a set that sent fewer (deadline, a signal caught by ping
      # alone) is partial, and the run with it is not complete
      local sent
      sent="$(ping_sent "$RUN_DIR/$rel")"
      ((sent == PINGS)) \
        || die "ping set $set (size $size) is partial: $sent of $PINGS requests transmitted; see $RUN_DIR/$rel" 1
      flag_loss "$RUN_DIR/$rel" "$set" "$size"
    done
  done
}

# ----------------------------------------------------------------- iperf3

IPERF_PORT=5201
IPERF_SERVER_PID=""

iperf_server_stop() {
  [[ -n "$IPERF_SERVER_PID" ]] || return 0
  kill -TERM "$IPERF_SERVER_PID" 2>/dev/null || true
  wait "$IPERF_SERVER_PID" 2>/dev/null || true
  IPERF_SERVER_PID=""
}

iperf_server_listening() {
  ss -Hltn "sport = :$IPERF_PORT" | grep -q .
}

# iperf_series UE_SERVICE: iperf3 from the UE's PDU session address to a server on TARGET (the
# host's n6 gateway): TRANSPORTS x REPS tests of DURATION s (UDP at UDP_BITRATE, STREAMS streams),
# raw `iperf3 -J` JSON each into iperf3-<transport>-rNN.json, the server's output beside them.
iperf_series() {
  local svc="$1" ue_ip transport rep rel cmd=() rc
  ue_ip="$(ue_address "$svc")"
  _record_command iperf3 -s -B "$TARGET" -p "$IPERF_PORT" -J
  if [[ "$DRY_RUN" != 1 ]]; then
    iperf3 -s -B "$TARGET" -p "$IPERF_PORT" -J >"$RUN_DIR/iperf3-server.json" 2>&1 &
    IPERF_SERVER_PID=$!
    cleanup_push iperf_server_stop
    wait_for 10 "iperf3 server on $TARGET:$IPERF_PORT" iperf_server_listening \
      || die "the iperf3 server on $TARGET:$IPERF_PORT did not start; see iperf3-server.json" 1
  fi
  for transport in $TRANSPORTS; do
    for ((rep = 1; rep <= REPS; rep++)); do
      rel="$(printf 'iperf3-%s-r%02d.json' "$transport" "$rep")"
      cmd=(iperf3 -c "$TARGET" -p "$IPERF_PORT" -B "$ue_ip" -J -t "$DURATION" -P "$STREAMS")
      [[ "$transport" == udp ]] && cmd+=(-u -b "$UDP_BITRATE")
      log "iperf3 $transport, repetition $rep/$REPS, ${DURATION}s -> $rel"
      mapfile -d '' -t cmd < <(dc_exec "$svc" timeout $((DURATION + 30)) "${cmd[@]}")
      rc=0
      measure "$rel" iperf3 "transport=$transport" "rep=$rep" -- "${cmd[@]}" || rc=$?
      ((rc == 0)) || die "iperf3 $transport (repetition $rep) failed (exit $rc); see $rel" 1
    done
  done
  iperf_server_stop
}

# watch_stop: end the overlay watcher started by a driver. The watcher's own TERM trap stops what
# it started (its stream reader, its pacing sleep): killing those first, under it, made bash print a
# bare `Terminated` line and could leave a sleep it started next behind.
watch_stop() {
  [[ -n "${WATCH_PID:-}" ]] || return 0
  kill "$WATCH_PID" 2>/dev/null || true
  wait "$WATCH_PID" 2>/dev/null || true
  WATCH_PID=""
}

# docker_watch_start PING_SERVICE: the Docker drivers' overlay watcher. It reads the engine's
# event stream for the project (pushed by the engine: no polling, no exec in the measured
# window). The overlay entrypoints (ipsec/entrypoint.sh, wireguard/entrypoint.sh) exit when
# their daemon dies, so an overlay lost mid-run is a container `die` (or an `unhealthy`) event:
# the first one interrupts the pings (ping_series then stops the run as invalid), and every one is
# appended to OVERLAY_DIED with the engine's time until watch_stop, so that the reason names the
# first failure in time and lists the later ones as its consequences (overlay_died_reason).
docker_watch_start() {
  [[ "$DRY_RUN" != 1 && "$PROTOCOL" != none ]] || return 0
  local svc="$1"
  OVERLAY_DIED="$RUN_DIR/overlay-died.txt"
  _docker_watch "$svc" &
  WATCH_PID=$!
  cleanup_push watch_stop
}

_docker_watch() {
  local svc="$1"
  mapfile -d '' -t _WATCH_STOP < <(dc_exec "$svc" pkill -INT -x ping)
  _WATCH_STOPPED=0
  # the stream (and a ping stop under way) is ended on every way out (a TERM from watch_stop included)
  trap 'kill "${_STREAM_PID:-}" 2>/dev/null; wait; exit 0' TERM
  stream_until _overlay_lost docker events --filter "label=com.docker.compose.project=$COMPOSE_PROJECT" \
    --filter type=container --filter event=die --filter event=kill --filter event=oom \
    --filter event=health_status --format '{{.TimeNano}}|{{.Actor.Attributes.name}}|{{.Action}}' || return 1
}

# _overlay_lost "TIMENANO|NAME|ACTION": an engine event that ends a container: appended to
# OVERLAY_DIED ("<ns since the epoch> container NAME: ACTION"); the first stops the pings. Never a
# match: the stream is read on until watch_stop, the later failures being the first one's consequences.
_overlay_lost() {
  local nanos="${1%%|*}" rest="${1#*|}" name action
  name="${rest%%|*}"
  action="${rest#*|}"
  case "$action" in
    die | kill | oom | "health_status: unhealthy") ;;
    *) return 1 ;;
  esac
  printf '%s container %s: %s\n' "$nanos" "$name" "$action" >>"$OVERLAY_DIED"
  if ((_WATCH_STOPPED == 0)); then
    _WATCH_STOPPED=1
    "${_WATCH_STOP[@]}" >/dev/null 2>&1 &
  fi
  return 1
}

# overlay_died_reason: OVERLAY_DIED as a reason: the first failure in time, then its consequences
# (+seconds), one entry per container. Its consequences follow within seconds, so it first waits
# until the watcher added nothing for 2 s (at most WATCH_SETTLE_S, default 10; the measurement has
# ended). A line without the engine's time (run-overlay's watcher) is taken as it is.
overlay_died_reason() {
  local f="$OVERLAY_DIED" end=$((SECONDS + ${WATCH_SETTLE_S:-10})) size last=-1 still=0
  while ((SECONDS < end && still < 10)); do
    size="$(wc -c <"$f" 2>/dev/null || echo 0)"
    if ((size == last)); then still=$((still + 1)); else still=0; last="$size"; fi
    sleep 0.2              # pacing of the settle wait, after the measured window
  done
  local first="" t0=0 nanos what out="" later=()
  while read -r nanos what; do
    if [[ ! "$nanos" =~ ^[0-9]+$ ]]; then
      out+="${out:+; }$nanos $what"
      continue
    fi
    run_event error "overlay watcher: $what (engine time $nanos ns)"
    if [[ -z "$first" ]]; then
      first="$what"
      t0="$nanos"
      out="first failure: $what at $(date -u -d "@$((nanos / 1000000000))" +%H:%M:%S).$(printf '%03d' $((nanos / 1000000 % 1000)))Z"
    else
      later+=("${what#container } (+$(awk -v d="$((nanos - t0))" 'BEGIN { printf "%.1f", d / 1e9 }') s)")
    fi
  done < <(sort -n -k1,1 "$f" 2>/dev/null | awk '{ key = $3 } !seen[key]++')
  ((${#later[@]} == 0)) || out+="; then (consequences): $(printf '%s, ' "${later[@]}" | sed 's/, $//')"
  printf '%s\n' "$out"
}

# stream_until MATCH CMD...: run CMD, hand each line it prints to the function MATCH until MATCH
# succeeds (0) or the stream ends (1); CMD is stopped either way. Reads a stream the engine or a
# log pushes (no polling); _STREAM_PID is CMD's pid for a caller's TERM trap.
stream_until() {
  local match="$1" line rc=1
  shift
  coproc STREAM { exec "$@" 2>&1; }
  # shellcheck disable=SC2153  # STREAM_PID is set by coproc
  _STREAM_PID="$STREAM_PID"
  while IFS= read -r -u "${STREAM[0]}" line; do
    if "$match" "$line"; then
      rc=0
      break
    fi
  done
  kill "$_STREAM_PID" 2>/dev/null || true
  wait "$_STREAM_PID" 2>/dev/null || true
  return "$rc"
}

# driver_lock: this STATE directory's stack and lock (scripts/lib/state.sh) for the rest of the
# driver: one run at a time per STATE; a campaign's or boots' drivers inherit their parent's lock.
driver_lock() {
  # shellcheck source=scripts/lib/state.sh
  source "$TESTBED_ROOT/scripts/lib/state.sh"
  state_instance || die "cannot work out the stack of STATE=$STATE (see above)" 1
  local dry=""
  [[ "$DRY_RUN" != 1 ]] || dry=" DRY_RUN=1"
  state_lock "$SCRIPT_NAME PROFILE=$PROFILE${BOOT:+ boot $BOOT/${BOOTS:-?}}$dry"
}

# docker_driver_begin EXPERIMENT ARGS... [-- TOOLS...]: the common start of every Docker driver:
# parameters checked before anything starts, root and tools (not for DRY_RUN), the compose
# wrapper, traps, and the run directory with the images recorded.
docker_driver_begin() {
  local experiment="$1" tools=(dumpcap tshark) args=()
  shift
  while (($#)); do
    if [[ "$1" == "--" ]]; then shift; tools+=("$@"); break; fi
    args+=("$1"); shift
  done
  PROFILE="${PROFILE:-baseline}"
  parse_params "$experiment" "${args[@]}"
  load_params "$experiment"
  driver_lock
  if [[ "$DRY_RUN" != 1 ]]; then
    require_root
    require_tools "${tools[@]}"
  fi
  docker_begin
  install_traps
}

# ----------------------------------------------------------------- Docker stack (compose.sh)
# The Docker drivers bring the stack up with scripts/up.sh (render + compose + readiness), and
# talk to it through the compose wrapper of scripts/lib/compose.sh (stack engineer's).

RENDER=""
DC=()
_STACK_CLEANUP=0
_STACK_CREATED=0
_DRY_RENDER=""

# docker_begin: the compose wrapper, and the engine (not needed for DRY_RUN).
docker_begin() {
  # shellcheck source=scripts/lib/compose.sh
  source "$TESTBED_ROOT/scripts/lib/compose.sh"
  [[ "$DRY_RUN" == 1 ]] || stack_require_compose
}

# The images a run records in its manifest (names set by compose.sh): the RAN variant's (RAN) own.
docker_image_args() {
  local ran_image="$UERANSIM_IMAGE"
  [[ "${RAN:-ueransim}" == ueransim ]] || ran_image="$OAI_IMAGE"
  printf '%s\n' --image "$OPEN5GS_IMAGE" --image "$ran_image" --image "$TOOLS_IMAGE" --image "$MONGO_IMAGE"
}

# ran_value KEY: a RAN_* value of the running render (compose.env; testbed/ran/__init__.py lists
# them), UERANSIM's before a stack is rendered (a dry run without a render).
ran_value() {
  if [[ -n "$RENDER" && -f "$RENDER/compose.env" ]]; then
    stack_env "$RENDER" "$1"
    return
  fi
  case "$1" in
    RAN) echo ueransim ;;
    RAN_UE_TUN) echo uesimtun0 ;;
    RAN_UE_SESSION_LOG) echo "TUN interface[uesimtun" ;;
    RAN_READY) echo gnb ;;
    *) die "ran_value: unknown key $1" 1 ;;
  esac
}

# bridge_of NETWORK: the host bridge of a compose network (compose/base.yaml names them).
bridge_of() {
  printf '%s-%s\n' "${BRIDGE_PREFIX:-g5tb}" "$1"
}

# stack_create REL_LOG [up.sh args...]: the stack's networks and containers, nothing started
# (up.sh --create-only), so that captures started next on its bridges see every packet from the
# first NF's start (the NF-to-NRF channels of the start-up included). Then stack_up with the same
# arguments starts it (it passes --start-created after a stack_create).
stack_create() {
  local rel="$1"
  shift
  STACK_TAG="$(_stack_tag "$rel")"
  _STACK_CREATED=1
  stack_up "$rel" --create-only "$@"
  stack_pin
}

# stack_pin: every created container of the stack on CPUSET_STACK (before any of them starts);
# nothing when it is empty. The manifest's parameters record both sets.
stack_pin() {
  [[ -n "${CPUSET_STACK:-}" ]] || return 0
  local ids=()
  if [[ "$DRY_RUN" == 1 ]]; then
    _record_command docker update --cpuset-cpus "$CPUSET_STACK" "(every container of the stack)"
    return 0
  fi
  mapfile -t ids < <("${DC[@]}" "${STACK_ALL_PROFILES[@]}" ps -aq)
  ((${#ids[@]})) || return 0
  run_cmd docker update --cpuset-cpus "$CPUSET_STACK" "${ids[@]}" >/dev/null \
    || die "could not pin the stack to CPUs $CPUSET_STACK (docker update --cpuset-cpus)" 1
}

# stack_up REL_LOG [up.sh args...]: fresh stack for PROFILE on PLANE (up.sh takes down any previous
# one, unless stack_create made this one), output kept in RUN_DIR/REL_LOG; sets RENDER and DC (the
# exact docker compose argv).
stack_up() {
  local rel="$1"
  shift
  export RUN_ID="${RUN_DIR:+$(basename "$RUN_DIR")}"
  RUN_ID="${RUN_ID:-dry-run}"
  if [[ "$DRY_RUN" == 1 ]]; then
    local dry_phase=()
    if [[ " $* " != *" --create-only "* && "${_STACK_CREATED:-0}" == 1 ]]; then
      dry_phase=(--start-created)
      _STACK_CREATED=0
    fi
    _record_command "$TESTBED_ROOT/scripts/up.sh" --profile "$PROFILE" --plane "$PLANE" --timeout "$UP_TIMEOUT" "$@" "${dry_phase[@]}"
    # render once per dry run (pure Python, no Docker) to show the exact compose command lines
    [[ -n "$_DRY_RENDER" ]] || _DRY_RENDER="$(stack_render "$PROFILE" "$PLANE" 2>/dev/null)" || _DRY_RENDER="none"
    RENDER="$_DRY_RENDER"
    if [[ -n "$RENDER" && -f "$RENDER/compose.env" ]]; then
      stack_compose_argv "$RENDER"
      DC=("${STACK_CMD[@]}")
    else
      DC=(docker compose -p "${COMPOSE_PROJECT:-g5tb}" "<files of the render dir>")
    fi
    return 0
  fi
  if ((!_STACK_CLEANUP)); then
    cleanup_push stack_teardown
    _STACK_CLEANUP=1
  fi
  local phase=()
  if [[ " $* " != *" --create-only "* && "${_STACK_CREATED:-0}" == 1 ]]; then
    phase=(--start-created)
    _STACK_CREATED=0
  fi
  local evidence="failure/${rel%.log}"
  if ! run_bg_wait "$TESTBED_ROOT/scripts/up.sh" --profile "$PROFILE" --plane "$PLANE" --timeout "$UP_TIMEOUT" "$@" \
         "${phase[@]}" --evidence "$RUN_DIR/$evidence" >>"$RUN_DIR/$rel" 2>&1; then
    RENDER=""               # up.sh took down what it started, its evidence kept in $evidence
    local first
    first="$(grep -o 'first failure: .*' "$RUN_DIR/$rel" | tail -n 1 || true)"
    die "stack for $PROFILE ($PLANE) did not come up: ${first:-$(tail -n 3 "$RUN_DIR/$rel" | tr '\n' ' ')} (every container's log, ps and health: $evidence/; full log: $rel; make doctor)" 1
  fi
  RENDER="$(<"$(stack_current_file)")"
  stack_compose_argv "$RENDER"
  DC=("${STACK_CMD[@]}")
}

# protects PLANE: true when the run's overlay covers that plane (the baseline protects none)
protects() {
  [[ "$PROTOCOL" != none && ",$PLANE," == *",$1,"* ]]
}

# plane_value PLANE FIELD: a field of the plane (nf-configs/channels.yaml); port = its number.
plane_value() {
  "$PYTHON" -c 'import sys; from testbed import planes, stack
p = planes.get(sys.argv[1])
print(p.port(stack.load()) if sys.argv[2] == "port" else getattr(p, sys.argv[2]))' "$1" "$2" \
    || die "no field $2 of plane $1 in nf-configs/channels.yaml" 1
}

# plane_client PLANE: the node that opens the plane's link among the running RAN's nodes (N2: the
# gNB, or the CU-CP of the split RAN), from the channel map.
plane_client() {
  "$PYTHON" -c 'import sys; from testbed import channels, ran, stack
v = ran.restrict(stack.load(), sys.argv[2])
print(next(c.client for c in channels.channels(sys.argv[1]) if c.client in v["nodes"] and c.server in v["nodes"]))' \
    "$1" "$(ran_value RAN)" || die "no link of plane $1 among the nodes of RAN=$(ran_value RAN)" 1
}

# plaintext_view_start NAME REL NODE PLANE GROUP [A=V...]: a timing capture of PLANE's traffic as NODE
# itself sees it, for a plane whose wire is protected (the bridge shows ESP/WireGuard only, or a
# relay's DTLS): an nftables log rule in NODE's namespace sends every packet of the plane's protocol
# port to and from it (each packet once: by NODE's role on the plane, client or server, also on a
# relay's loopback leg) (output before encryption, input after decryption, whatever the datapath) to nflog GROUP, and
# dumpcap in NODE's holder (tools image; an overlay endpoint, so it has NET_ADMIN) writes them
# whole into RUN_DIR/REL. Its timestamps are NODE's, so the times include NODE's own crypto.
plaintext_view_start() {
  local name="$1" rel="$2" node="$3" plane="$4" group="$5" port proto role=server rules
  shift 5
  port="$(plane_value "$plane" port)"
  proto="$(plane_value "$plane" transport)"
  [[ "$(plane_client "$plane")" != "$node" ]] || role=client
  rules="$(plaintext_view_rules "$proto" "$port" "$group" "$role")"
  # a here-string, not a pipe: a reader that never reads (DRY_RUN) cannot fail the writer
  run_cmd "${DC[@]}" exec -T "$node-net" nft -f - <<<"$rules" \
    || die "could not add the $plane log rule in $node-net" 1
  # shellcheck disable=SC2016  # the inner script expands its own arguments
  capture_start "$name" "$rel" "$@" -- \
    bash -c 'out="$1"; shift; exec "$@" >"$out"' _ "${RUN_DIR:-.}/$rel" \
    "${DC[@]}" exec -T "$node-net" dumpcap -q -i "nflog:$group" -w -
}

# plaintext_view_rules PROTO PORT GROUP ROLE: the nftables ruleset of plaintext_view_start. A client
# (it connects to PORT) logs what it sends to PORT and receives from PORT, a server what it sends
# from PORT and receives on PORT: each packet once, on the wire or on a loopback relay leg (where a
# packet passes output and input in the same namespace). queue-threshold 1: each packet goes to the
# listener at once (without it nfnetlink_log handed dumpcap only a connection's first packet on this
# kernel, 6.18; tests/integration/test_ran_planes_netns.py).
plaintext_view_rules() {
  local proto="$1" port="$2" group="$3" role="$4" out in
  case "$role" in
    client) out=dport in=sport ;;
    server) out=sport in=dport ;;
    *) die "plaintext_view_rules: role $role is not client or server" 1 ;;
  esac
  cat <<NFT
table inet testbed_timing_$group {
  chain out { type filter hook output priority 0; policy accept; $proto $out $port log group $group queue-threshold 1; }
  chain in { type filter hook input priority 0; policy accept; $proto $in $port log group $group queue-threshold 1; }
}
NFT
}

# plaintext_view_stop NAME NODE: dumpcap in the holder ends its file on SIGINT; then the stream closes.
plaintext_view_stop() {
  [[ "$DRY_RUN" == 1 ]] || "${DC[@]}" exec -T "$2-net" pkill -INT -x dumpcap >/dev/null 2>&1 || true
  capture_stop "$1"
}

# overlay_ask ASK [ARGS...]: what the profile's overlay plug-in says (testbed/cli/overlay.py), one
# answer a line: endpoints (on PLANE, among the nodes the running RAN variant has), state-command,
# daemons, lab-tools, holder-commands --moment M.
overlay_ask() {
  tb overlay "$1" --profile "$PROFILE" "${@:2}"
}

# overlay_endpoints: the nodes the profile's overlay runs on for PLANE, among the nodes the running
# RAN variant has (testbed/ran: n3 is the gNB's with UERANSIM, the CU-UP's with the split).
overlay_endpoints() {
  overlay_ask endpoints --plane "$PLANE" --ran "$(ran_value RAN)"
}

# stack_overlay_state TAG: what each overlay endpoint negotiated (the plug-in's state command, e.g.
# `swanctl --list-sas`, run in its namespace holder <node>-net), kept as logs TAG-<node>.txt.
# Nothing for an overlay without one (TLS: the capture shows it).
stack_overlay_state() {
  local tag="$1" node nodes=() cmd=()
  mapfile -t cmd < <(overlay_ask state-command)
  ((${#cmd[@]})) || return 0
  mapfile -t nodes < <(overlay_endpoints)
  for node in "${nodes[@]}"; do
    # bounded: a wedged holder (the failure path reads it too) must not hold the driver
    run_cmd timeout 60 "${DC[@]}" exec -T "$node-net" "${cmd[@]}" >"$(out_path "$tag-$node.txt")" 2>&1 \
      || warn "could not read the overlay state of $node ($tag)"
  done
}

# stack_holder_commands TAG MOMENT: the overlay plug-in's commands for MOMENT (before-cold,
# before-warm; e.g. WireGuard's session reset) in every endpoint's holder (<node>-net), output kept
# as TAG-<record>-<node>.txt and recorded (its run check reads them). Nothing for other overlays.
stack_holder_commands() {
  local tag="$1" moment="$2" node nodes=() line name cmd=() steps=()
  # read the whole answer first: `docker compose exec` may read the loop's stdin
  mapfile -t steps < <(overlay_ask holder-commands --moment "$moment")
  ((${#steps[@]})) || return 0
  mapfile -t nodes < <(overlay_endpoints)
  for line in "${steps[@]}"; do
    read -ra cmd <<<"$line"
    name="${cmd[0]}"
    cmd=("${cmd[@]:1}")
    for node in "${nodes[@]}"; do
      run_cmd "${DC[@]}" exec -T "$node-net" "${cmd[@]}" >"$(out_path "$tag-$name-$node.txt")" 2>&1 </dev/null \
        || die "overlay holder $node: \`${cmd[*]}\` failed ($tag); see $tag-$name-$node.txt" 1
      [[ "$DRY_RUN" == 1 ]] || record_file "$tag-$name-$node.txt" log
    done
  done
}

# stack_logs REL: every container's log (timestamps) into RUN_DIR/REL; the overlay's datapath line
# is taken from it.
stack_logs() {
  local rel="$1"
  [[ "$DRY_RUN" == 1 || ${#DC[@]} -eq 0 ]] && return 0
  timeout 120 "${DC[@]}" "${STACK_ALL_PROFILES[@]}" logs --no-color --timestamps >"$RUN_DIR/$rel" 2>&1 \
    || warn "could not save the container logs into $rel"
}

stack_teardown() {
  [[ -n "$RENDER" ]] || return 0
  if [[ "$DRY_RUN" == 1 ]]; then
    _record_command "$TESTBED_ROOT/scripts/down.sh"
    RENDER=""
    return 0
  fi
  stack_down "$RENDER" >/dev/null 2>&1 || warn "stack teardown failed: run \`make down\`"
  rm -f "$(stack_current_file)"
  RENDER=""
}

# dc_exec SERVICE CMD...: the command line that runs CMD in a service (printed NUL-separated).
dc_exec() {
  local svc="$1"
  shift
  printf '%s\0' "${DC[@]}" "${STACK_ALL_PROFILES[@]}" exec -T "$svc" "$@"
}

# ue_address SERVICE: a UE's address on its PDU session (the render's RAN_UE_TUN: uesimtun0,
# oaitun_ue1); "UE_IP" in a dry run; dies without one.
ue_address() {
  [[ "$DRY_RUN" == 1 ]] && { echo UE_IP; return 0; }
  local ip tun
  tun="$(ran_value RAN_UE_TUN)"
  ip="$("${DC[@]}" exec -T "$1" ip -4 -o addr show dev "$tun" | awk '{split($4, a, "/"); print a[1]}')"
  [[ -n "$ip" ]] || die "$1 has no address on $tun (no PDU session?); see stack-up.log" 1
  echo "$ip"
}

# ue1_address: UE 1's address on its PDU session.
ue1_address() {
  ue_address ue1
}

# ping_cmd COUNT SIZE: the Docker drivers' sender: UE 1 pings TARGET through its PDU session
# (uesimtun0, or the OAI UE's oaitun_ue1: the render's RAN_UE_TUN). run-overlay defines its own.
ping_cmd() {
  local argv=()
  mapfile -d '' -t argv < <(ping_argv "$1" "$2")
  dc_exec ue1 "${argv[@]}" -I "$(ran_value RAN_UE_TUN)" "$TARGET"
}

# _stack_tag REL_LOG: the prefix a boot's records share ("u01-r01-" for u01-r01-stack-up.log, "" for
# stack-up.log): [TAG]sa-before-<node>.txt, [TAG]sa-after-..., [TAG]containers.log, failure/[TAG]...
_stack_tag() {
  local tag="${1%stack-up.log}"
  [[ "$tag" != "$1" ]] || tag=""
  printf '%s\n' "$tag"
}

# stack_run_start [--quiet-start] REL_LOG [up.sh args...]: the one start path of every Docker driver
# (run-n3, -sbi, -cpu, -throughput, -secfn, -f1u, -ran-procedures): start the stack made by
# stack_create (its captures already running), keep the hashes of the rendered configs that run and
# what the overlay negotiated ([TAG]sa-before-<node>.txt); stack_boot_end / stack_run_end record it
# again at the end ([TAG]sa-after, what the validity check reads), and the exit trap does on any
# failure, with every container's log (failure/[TAG]at-exit/). --quiet-start: nothing is exec'd
# into the stack at its start (run-cpu: the CPU time it measures runs from the boot).
STACK_TAG=""
stack_run_start() {
  local quiet=0
  [[ "${1:-}" != --quiet-start ]] || { quiet=1; shift; }
  STACK_TAG="$(_stack_tag "$1")"
  stack_up "$@"
  render_hashes "$RENDER" "${STACK_TAG}rendered-configs.sha256"
  ((quiet)) || stack_overlay_state "${STACK_TAG}sa-before"
}

# stack_boot_end: the end of one boot of a multi-boot driver (run-sbi's iterations, run-cpu's
# repetitions): what the overlay negotiated, the containers' logs (and the datapath line from
# them), then the teardown.
stack_boot_end() {
  stack_overlay_state "${STACK_TAG}sa-after"
  stack_logs "${STACK_TAG}containers.log"
  [[ "$DRY_RUN" == 1 ]] || datapath_from_log "$RUN_DIR/${STACK_TAG}containers.log"
  stack_teardown
}

# _stack_evidence_at_exit: a run that fails (not one interrupted on purpose) with its stack up keeps,
# before the exit trap's cleanups tear the stack down, what the overlay negotiated
# ([TAG]sa-after-<node>.txt, if not recorded yet), the containers' logs ([TAG]containers.log) and the
# evidence of scripts/lib/compose.sh stack_save_evidence (failure/[TAG]at-exit/: one log per
# container, ps, states and health, nr-cli); its summary goes to the terminal and, when the stack
# names a first failure, into the run's reason.
_stack_evidence_at_exit() {
  [[ "$DRY_RUN" != 1 && -n "$RENDER" && -n "$RUN_DIR" && "$RUN_STATE" != complete ]] || return 0
  ((INTERRUPTED == 0)) || return 0
  local dir="failure/${STACK_TAG}at-exit" line first=""
  log "run failed with the stack up: keeping every container's log, state and health in $dir/ before the teardown"
  compgen -G "$RUN_DIR/${STACK_TAG}sa-after-*" >/dev/null || stack_overlay_state "${STACK_TAG}sa-after"
  stack_logs "${STACK_TAG}containers.log"
  stack_save_evidence "$RENDER" "$RUN_DIR/$dir"
  while IFS= read -r line; do
    log "$line"
    [[ -n "$first" || "$line" != "first failure: "* ]] || first="$line"
  done < <(stack_failure_lines "$RUN_DIR/$dir")
  [[ -z "$first" || "$RUN_REASON" == *"${first#first failure: }"* ]] || RUN_REASON="${RUN_REASON:+$RUN_REASON; in the stack, }$first"
}

# ue1_ping_series: ping_series from UE 1 under the overlay watcher (an overlay that dies stops it).
ue1_ping_series() {
  docker_watch_start ue1
  ping_series "UE 1"
  watch_stop
}

# stack_run_end: the end of a one-boot Docker run: what the overlay negotiated, the containers'
# logs (and the overlay's datapath line from them), then run_end (validity, manifest).
stack_run_end() {
  stack_overlay_state sa-after
  stack_logs containers.log
  [[ "$DRY_RUN" == 1 ]] || datapath_from_log "$RUN_DIR/containers.log"
  run_end
}

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
    stack_save_evidence "$RENDER" "$RUN_DIR/$evidence" "$ue" "$(ran_value RAN_READY)"
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
