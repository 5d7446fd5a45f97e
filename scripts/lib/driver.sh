# shellcheck shell=bash
# shellcheck disable=SC2034  # the globals set here are read by the drivers (common.sh declares them)
# A driver's start: parameters checked before anything starts (python -m testbed params), the
# STATE lock, the Docker drivers' common beginning.
# Part of scripts/lib/common.sh, which sources it (source that, not this).

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

# load_params EXPERIMENT: the run's spec (testbed/runspec.py: PROFILE, plane, RAN, every dimension
# and parameter, defaults filled in) built once from the flags and Make variables, or read from
# RUN_SPEC_FILE (make rerun / make run SPEC=..., scripts/rerun.sh), then exported as the variables
# the driver reads; RUN_SPEC holds it for the manifest. A bad value or spec: exit 2, nothing started.
PARAM_ARGS=()
RUN_SPEC=""
load_params() {
  local exp="$1" name assignments
  PARAM_ARGS=()
  if [[ -n "${RUN_SPEC_FILE:-}" ]]; then
    assignments="$(tb spec "$exp" --file "$RUN_SPEC_FILE" --format shell)" \
      || { log "error: run spec $RUN_SPEC_FILE rejected before anything started (see above)"; exit 2; }
  else
    for name in "${PARAM_NAMES[@]}"; do
      PARAM_ARGS+=("$name=${!name:-}")
    done
    # a PLANE given to an experiment without that parameter must name its own plane (checked, not ignored)
    [[ -z "${PLANE:-}" || " ${PARAM_NAMES[*]} " == *" PLANE "* ]] || PARAM_ARGS+=("PLANE=$PLANE")
    [[ -n "${PROFILE:-}" ]] || die "PROFILE is not set; list them with \`make profiles\`" 2
    if ! assignments="$(tb spec "$exp" "${PARAM_ARGS[@]}" --profile "$PROFILE" --format shell)"; then
      log "error: parameters rejected before anything started (see above); valid ones: $SCRIPT_NAME --help"
      exit 2
    fi
  fi
  eval "$assignments"
  PARAM_ARGS=()
  for name in "${PARAM_NAMES[@]}"; do
    PARAM_ARGS+=("$name=${!name}")
  done
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
    require_runnable_profile
  fi
  docker_begin "$experiment"
  install_traps
}
