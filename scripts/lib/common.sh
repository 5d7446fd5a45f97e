# shellcheck shell=bash
# Shared bash for the experiment drivers (scripts/run-*.sh, scripts/campaign.sh).
# Source it; it defines the globals below, sources its parts (messages, driver, run, capture,
# series, watch, stack, attach .sh beside it) and starts nothing.
#
#   log/warn/loud/die          messages on stderr (die exits; 2 = usage error); loud = banner
#   wait_for DEADLINE WHAT CMD probe CMD every 0.2 s until it succeeds or DEADLINE seconds pass
#   parse_params EXP ARGS...   --flag value / --flag=value -> FLAG variables (Make names)
#   load_params EXP            the run spec once (python -m testbed spec, or RUN_SPEC_FILE) or exit 2
#   require_runnable_profile   exit 1 when the overlay plug-in says this host's datapath cannot run PROFILE
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
declare -A _CAPTURE_GRACE=()   # seconds capture_stop waits for a capture to end its file (default 10)
declare -A _CAPTURE_ATTRS=()

# The parts, by concern (each under 400 lines: STYLE.md). Protocol knowledge lives in the plug-ins
# (testbed/registry.py): these files ask them through `python -m testbed overlay ...`.
# shellcheck source=scripts/lib/messages.sh
source "$TESTBED_ROOT/scripts/lib/messages.sh"
# shellcheck source=scripts/lib/driver.sh
source "$TESTBED_ROOT/scripts/lib/driver.sh"
# shellcheck source=scripts/lib/run.sh
source "$TESTBED_ROOT/scripts/lib/run.sh"
# shellcheck source=scripts/lib/capture.sh
source "$TESTBED_ROOT/scripts/lib/capture.sh"
# shellcheck source=scripts/lib/series.sh
source "$TESTBED_ROOT/scripts/lib/series.sh"
# shellcheck source=scripts/lib/watch.sh
source "$TESTBED_ROOT/scripts/lib/watch.sh"
# shellcheck source=scripts/lib/stack.sh
source "$TESTBED_ROOT/scripts/lib/stack.sh"
# shellcheck source=scripts/lib/attach.sh
source "$TESTBED_ROOT/scripts/lib/attach.sh"
