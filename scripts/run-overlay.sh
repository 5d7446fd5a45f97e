#!/usr/bin/env bash
# run-overlay: the N3 ping measurement through the bare overlay, with no 5G stack and no Docker.
# Two network namespaces (gNB and UPF of the namespace lab, testbed/netns.py) are joined by the
# profile's overlay on the n3 network; the gNB pings the UPF's n3 address. This is the pure
# tunnel cost, it runs anywhere in seconds, and it drives the whole measurement -> manifest ->
# validity -> analysis path in CI. Docs: docs/experiments.md.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

readonly EXPERIMENT=overlay
LAB=""
GNB_NS=""

usage() {
  cat <<EOF
Usage: $(basename "$0") [--profile P] [--sizes "64 1024"] [--sets N] [--pings N] [--interval S] ...
       make run-overlay PROFILE=<p> [SIZES=...] [SETS=...] [PINGS=...] [INTERVAL=...]

Ping between two network namespaces joined by PROFILE's overlay (plane n3: gnb -> upf),
warm-up first (kept, not counted), then SETS x PINGS pings per payload size; a capture on the
n3 network checks that the overlay was on the wire. Needs root; no Docker.

Parameters (flags --name, or the Make/environment variable NAME):
$(tb params "$EXPERIMENT" --format help)
  PROFILE         an n3 profile (make profiles PLANE=n3) [default: baseline]
  RESULTS         results root [default: results]
  DRY_RUN=1       print what would run, start nothing

Writes \$RESULTS/<campaign>/overlay/<profile>/<run>/ (manifest.json, ping-*.txt, n3.pcap, logs).
Exit: 0 valid run, 1 failure or invalid run, 2 usage error, 130 interrupted.
EOF
}

preflight() {
  local tools=(ip ping tshark) extra=()
  # the namespace lab runs the overlays with an entrypoint on n3 (make profiles PLANE=n3)
  mapfile -t extra < <(overlay_ask lab-tools) || die "profile $PROFILE: $(overlay_ask lab-tools 2>&1 | tail -n 1)" 2
  tools+=("${extra[@]}")
  # a dry run only prints the plan: it needs none of the host's prerequisites
  [[ "$DRY_RUN" == 1 ]] && return 0
  require_root
  require_tools "${tools[@]}"
  [[ -c /dev/net/tun || "$PROTOCOL" == none ]] \
    || die "/dev/net/tun is missing: the userspace overlays need TUN (modprobe tun); see make doctor" 1
  # a profile this host's datapath cannot run (e.g. AES-GMAC or a trap mode on userspace ESP)
  # stops here, before anything starts (the overlay plug-in knows which ones)
  require_runnable_profile
}

# keep_lab_logs: the overlay entrypoints' logs (datapath line, IKE/handshake) into the run
# directory as lab-<node>.log, once, while the run is still open.
LAB_LOGS_KEPT=0
keep_lab_logs() {
  ((LAB_LOGS_KEPT == 0)) && [[ -n "$LAB" && -n "$RUN_DIR" ]] || return 0
  LAB_LOGS_KEPT=1
  local f
  for f in "$(state_dir)/lab/$LAB"/*.log; do
    [[ -f "$f" ]] && cp "$f" "$RUN_DIR/lab-$(basename "$f")"
  done
  return 0
}

lab_down() {
  [[ -n "$LAB" ]] || return 0
  [[ "$DRY_RUN" == 1 ]] && { _record_command "$PYTHON" -m testbed lab --name "$LAB" down; return 0; }
  tb lab --name "$LAB" down 2>&1 | sed 's/^/lab down: /' >&2 \
    || warn "lab $LAB did not come down cleanly (python -m testbed lab --name $LAB down)"
  keep_lab_logs
  # the lab's state dir is this run's alone (rendered configs hold keys): logs are kept above
  [[ -f "$(state_dir)/lab/$LAB/lab.json" ]] || rm -rf "$(state_dir)/lab/$LAB"
}

# lab_names: the namespaces and bridge of the lab (testbed/netns.py names them; asked, not guessed).
lab_names() {
  if [[ "$DRY_RUN" == 1 ]]; then
    printf '%s\n' "$LAB-gnb" "$LAB-hub" br-n3
    return 0
  fi
  "$PYTHON" -c 'import sys; from testbed import netns
lab = netns.Lab.load(sys.argv[1]); print(lab.netns("gnb")); print(lab.hub); print(lab.bridge)' "$LAB"
}

# leak_captures: on each endpoint, a capture of every interface out of its namespace
# (testbed/netns.py exit_interfaces), from before the first packet: what a dying overlay lets out
# of any of them counts against the run (testbed/validity.py leak_verdict).
leak_captures() {
  local node ns argv=()
  for node in gnb upf; do
    if [[ "$DRY_RUN" == 1 ]]; then
      ns="$LAB-$node" argv=(-i n3)
    else
      mapfile -t argv < <("$PYTHON" -c 'import sys; from testbed import netns
lab = netns.Lab.load(sys.argv[1]); ns = lab.netns(sys.argv[2]); print(ns)
for i in netns.exit_interfaces(ns): print("-i"); print(i)' "$LAB" "$node") \
        || die "lab $LAB: cannot list the interfaces of $node's namespace" 1
      ns="${argv[0]}" argv=("${argv[@]:1}")
    fi
    capture_start "leak-$node" "$node-ifaces.pcap" iface=n3 purpose=leak node="$node" -- \
      ip netns exec "$ns" dumpcap -q "${argv[@]}" -w "${RUN_DIR:-.}/$node-ifaces.pcap"
  done
}

state_dir() {
  case "$STATE" in
    /*) echo "$STATE" ;;
    *) echo "$TESTBED_ROOT/$STATE" ;;
  esac
}

# overlay_state TAG: what the overlay negotiated, per endpoint (the plug-in's state command, e.g.
# `swanctl --list-sas`), kept as logs TAG-<node>.txt.
overlay_state() {
  local tag="$1" node cmd=()
  mapfile -t cmd < <(overlay_ask state-command)
  ((${#cmd[@]})) || return 0
  for node in gnb upf; do
    run_cmd "$PYTHON" -m testbed lab --name "$LAB" exec "$node" -- "${cmd[@]}" \
      >"$(out_path "$tag-$node.txt")" 2>&1 || warn "could not read the overlay state of $node ($tag)"
  done
}

# overlay_daemons NAMES NS...: "ns comm" of every process named in NAMES (the plug-in's daemons,
# `a|b`: charon, wireguard-go ...) in the namespaces.
overlay_daemons() {
  local names="$1" ns pids
  shift
  [[ -n "$names" ]] || return 0
  for ns in "$@"; do
    pids="$(ip netns pids "$ns" 2>/dev/null | tr '\n' ',' | sed 's/,$//')"
    [[ -n "$pids" ]] || continue
    ps -o comm= -p "$pids" 2>/dev/null | grep -xE "$names" | sed "s/^/$ns /" || true
  done | sort -u
}

# overlay_watch NS...: every second, are the overlay daemons that ran at the start still there?
# One `ip netns pids` + `ps` per namespace: nothing enters the measured path. On a loss it writes
# OVERLAY_DIED (time and reason) and interrupts the pings, so the set ends within about a second
# and the run stops as invalid instead of pinging into a dead tunnel until its deadline.
# watch_stop's TERM ends it at once and takes its pacing sleep along (no `Terminated` line from a
# killed foreground sleep, no sleep left behind).
overlay_watch() {
  local before now gone names
  trap 'pkill -P "$BASHPID" 2>/dev/null; wait; exit 0' TERM
  # asked once: the loop below runs no Python beside the measurement
  names="$(overlay_ask daemons | paste -sd'|')"
  before="$(overlay_daemons "$names" "$@")"
  [[ -n "$before" ]] || return 0
  while true; do
    sleep 1 &             # pacing of the check (outside the measured path), interruptible by TERM
    wait "$!" || true
    now="$(overlay_daemons "$names" "$@")"
    gone="$(comm -23 <(echo "$before") <(echo "$now"))"
    if [[ -n "$gone" ]]; then
      printf '%s overlay daemon gone: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(echo "$gone" | tr '\n' ' ')" \
        >"$OVERLAY_DIED"
      ip netns pids "$GNB_NS" 2>/dev/null | xargs -r ps -o pid=,comm= -p 2>/dev/null \
        | awk '$2 == "ping" {print $1}' | xargs -r kill -INT 2>/dev/null || true
      return 0
    fi
  done
}

# rehandshake_in_capture: one fresh handshake from the gNB's end after the capture started (the
# plug-in's rehandshake script, testbed/contract.py): the overlay came up before the capture, and a
# key exchange (IKE_INTERMEDIATE with ML-KEM, Rosenpass's exchange) is proven only from its packets.
# Before the warm-up, so no measured ping meets it; nothing for an overlay without one.
rehandshake_in_capture() {
  local script
  script="$(overlay_ask rehandshake)"
  [[ -n "$script" && "$DRY_RUN" != 1 ]] || return 0
  log "rehandshake inside the capture: $(basename "$(dirname "$script")")/$(basename "$script")"
  run_cmd "$PYTHON" -m testbed lab --name "$LAB" exec gnb -- \
    bash "$script" "$(state_dir)/lab/$LAB/render/gnb" "$TARGET" >"$(out_path rehandshake-gnb.txt)" 2>&1 \
    || die "the fresh handshake inside the capture failed: $(tail -n 2 "$(out_path rehandshake-gnb.txt)" | tr '\n' ' ')(${RUN_DIR}/rehandshake-gnb.txt)" 1
}

# ping_cmd COUNT SIZE: the ping, run directly in the gNB's namespace (its output streams into the
# raw file, and a signal reaches ping itself).
ping_cmd() {
  printf '%s\0' ip netns exec "$GNB_NS"
  ping_argv "$1" "$2"
  printf '%s\0' "$TARGET"
}

main() {
  PROFILE="${PROFILE:-baseline}"
  parse_params "$EXPERIMENT" "$@"
  load_params "$EXPERIMENT"
  preflight
  driver_lock
  TARGET="$(stack_address upf n3)"
  install_traps
  run_begin "$EXPERIMENT"
  LAB="${LAB_NAME:-drivers-$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')}"
  cleanup_push lab_down

  log "lab $LAB up: plane n3, profile $PROFILE, nodes gnb,upf"
  # options before the action: the lab CLI takes everything after the action as a command
  run_bg_wait "$PYTHON" -m testbed lab --name "$LAB" --plane n3 --profile "$PROFILE" \
    --nodes gnb,upf --timeout "$UP_TIMEOUT" up >"$(out_path lab-up.log)" 2>&1 \
    || die "namespace lab for $PROFILE did not come up (deadline ${UP_TIMEOUT}s): $(tail -n 3 "$(out_path lab-up.log)" | tr '\n' ' ')(full log: ${RUN_DIR}/lab-up.log)" 1
  [[ "$DRY_RUN" == 1 ]] || datapath_from_log "$RUN_DIR/lab-up.log"
  local names=()
  mapfile -t names < <(lab_names)
  ((${#names[@]} == 3)) || die "lab $LAB: cannot read its namespace names (python -m testbed lab list)" 1
  GNB_NS="${names[0]}"

  render_hashes "$(state_dir)/lab/$LAB/render" rendered-configs.sha256
  overlay_state sa-before

  capture_start n3 n3.pcap iface=n3 purpose=validation -- \
    ip netns exec "${names[1]}" dumpcap -q -i "${names[2]}" -w "${RUN_DIR:-.}/n3.pcap"
  [[ "$PROTOCOL" == none ]] || leak_captures
  rehandshake_in_capture

  if [[ "$DRY_RUN" != 1 && "$PROTOCOL" != none ]]; then
    OVERLAY_DIED="$RUN_DIR/overlay-died.txt"
    overlay_watch "$GNB_NS" "${GNB_NS%-gnb}-upf" &
    WATCH_PID=$!
    cleanup_push watch_stop
  fi
  ping_series "gnb"
  watch_stop
  overlay_state sa-after
  keep_lab_logs
  run_end
}

main "$@"
