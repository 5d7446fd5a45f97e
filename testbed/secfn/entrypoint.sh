#!/usr/bin/env bash
# The security-function engine in the UPF's network namespace (docs/secfn.md): the same script
# in the stack's engine container (network_mode: service:upf-net) and in the namespace lab.
#
#   entrypoint.sh ENGINE_DIR      ENGINE_DIR rendered by testbed/secfn/engines (engine.env, engine.argv)
#
# 1. passive: waits (bounded) for the UE-side interface (ogstun) the engine reads;
# 2. starts the engine (its output into $LOG_DIR/<engine>.out) and waits, with a deadline, for
#    the line that says it serves traffic;
# 3. inline: only then puts the UE subnet's forwarded packets (both directions) into the
#    NFQUEUE it serves (iptables FORWARD, --queue-bypass when FAIL_OPEN=1), so no packet is
#    queued to nobody at the start;
# 4. writes the ready file ($SECFN_READY, default /run/testbed/secfn-ready) and waits.
# SIGTERM: saves the queue's and FORWARD's counters, stops the engine (it writes its own
# counters), removes its rules, exits 0. If the engine dies by itself, its rules stay: the
# kernel then does what the queue was told (bypass with FAIL_OPEN=1, else drop), as a crashed
# inline IPS does; the script exits 1.
# Needs: iptables (inline), ip. Capabilities: NET_ADMIN (queue, iptables, promiscuous mode),
# NET_RAW (AF_PACKET, iptables' raw socket).
# Exit: 0 stopped by SIGTERM, 1 engine failed, 2 usage.
set -euo pipefail

READY="${SECFN_READY:-/run/testbed/secfn-ready}"
READY_TIMEOUT="${SECFN_READY_TIMEOUT:-120}"
ENGINE_PID=""
RULES_IN=0
ARGV=()

say() { echo "secfn: $*" >&2; }
fail() {
  say "ERROR: $*"
  [[ -z "$ENGINE_PID" ]] || kill -TERM "$ENGINE_PID" 2>/dev/null || true
  rm -f "$READY"
  exit 1
}

usage() {
  echo "usage: entrypoint.sh ENGINE_DIR   (engine.env + engine.argv rendered by testbed/secfn/engines)"
}

load() {
  local dir="$1" key
  [[ -f "$dir/engine.env" && -f "$dir/engine.argv" ]] || fail "$dir has no engine.env/engine.argv (render it: docs/secfn.md)"
  # shellcheck source=/dev/null
  source "$dir/engine.env"
  for key in ENGINE MODE QUEUE_NUM FAIL_OPEN UE_SUBNET UE_IFACE LOG_DIR READY_FILE READY_LINE IPTABLES; do
    [[ -n "${!key:-}" ]] || fail "$dir/engine.env sets no $key"
  done
  mapfile -t ARGV <"$dir/engine.argv"
  ((${#ARGV[@]})) || fail "$dir/engine.argv is empty"
}

# queue_rules -I|-D: the UE subnet's forwarded packets, both directions, into the queue (QUEUES > 1:
# spread over QUEUE_NUM .. QUEUE_NUM+QUEUES-1 by flow hash, --queue-balance).
queue_rules() {
  local op="$1" dir target=(--queue-num "$QUEUE_NUM") bypass=()
  ((${QUEUES:-1} > 1)) && target=(--queue-balance "$QUEUE_NUM:$((QUEUE_NUM + QUEUES - 1))")
  [[ "$FAIL_OPEN" == 1 ]] && bypass=(--queue-bypass)
  for dir in -s -d; do
    "$IPTABLES" "$op" FORWARD "$dir" "$UE_SUBNET" -j NFQUEUE "${target[@]}" "${bypass[@]}"
  done
}

# shellcheck disable=SC2317  # invoked by trap
save_counters() {
  [[ "$MODE" == inline ]] || return 0
  cat /proc/net/netfilter/nfnetlink_queue >"$LOG_DIR/nfqueue.txt" 2>/dev/null || true
  "$IPTABLES" -vnxL FORWARD >"$LOG_DIR/forward-counters.txt" 2>&1 || true
}

# shellcheck disable=SC2317  # invoked by trap
stop() {
  trap '' TERM INT
  save_counters
  if [[ -n "$ENGINE_PID" ]] && kill -0 "$ENGINE_PID" 2>/dev/null; then
    kill -TERM "$ENGINE_PID" 2>/dev/null || true
    local i
    for ((i = 0; i < 300; i++)); do        # up to 30 s for its final counters
      kill -0 "$ENGINE_PID" 2>/dev/null || break
      # a passive engine reading through libpcap (Snort's pcap DAQ) stays blocked in its read
      # until a packet arrives: one datagram to an unused UE address leaves through the UE-side
      # interface every second and wakes it (the UPF drops it; the engine counts it)
      if [[ "$MODE" == passive && -n "${WAKE_ADDR:-}" ]] && ((i % 10 == 2)); then
        echo wake 2>/dev/null >"/dev/udp/$WAKE_ADDR/9" || true
      fi
      sleep 0.1
    done
    kill -KILL "$ENGINE_PID" 2>/dev/null || true
    wait "$ENGINE_PID" 2>/dev/null || true
  fi
  if ((RULES_IN)); then
    queue_rules -D || say "could not remove the NFQUEUE rules"
  fi
  rm -f "$READY"
  say "$ENGINE stopped"
  exit 0
}

wait_iface() {
  local i
  for ((i = 0; i < READY_TIMEOUT * 10; i++)); do
    ip link show dev "$UE_IFACE" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "interface $UE_IFACE did not appear within ${READY_TIMEOUT}s (is the UPF up?)"
}

wait_ready() {
  local i
  for ((i = 0; i < READY_TIMEOUT * 10; i++)); do
    kill -0 "$ENGINE_PID" 2>/dev/null \
      || fail "$ENGINE exited before it was ready: $(tail -n 5 "$LOG_DIR/$ENGINE.out" 2>/dev/null | tr '\n' ' ')"
    grep -qF -- "$READY_LINE" "$READY_FILE" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "$ENGINE not ready within ${READY_TIMEOUT}s (no '$READY_LINE' in $READY_FILE)"
}

main() {
  case "${1:-}" in
    -h | --help) usage; exit 0 ;;
    "" | -*) usage >&2; exit 2 ;;
  esac
  load "$1"
  mkdir -p "$LOG_DIR" "$(dirname "$READY")"
  rm -f "$READY"
  trap stop TERM INT
  [[ "$MODE" == passive ]] && wait_iface
  if [[ -n "${ENGINE_LIBRARY_PATH:-}" ]]; then
    export LD_LIBRARY_PATH="$ENGINE_LIBRARY_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  # line-buffered output: an engine that writes its ready line to a file (Snort's stdout) would
  # otherwise hold it in its stdio buffer until it exits
  command -v stdbuf >/dev/null 2>&1 && ARGV=(stdbuf -oL -eL "${ARGV[@]}")
  say "starting $ENGINE ($MODE): ${ARGV[*]}"
  "${ARGV[@]}" >"$LOG_DIR/$ENGINE.out" 2>&1 &
  ENGINE_PID=$!
  echo "$ENGINE_PID" >"$LOG_DIR/engine.pid"
  wait_ready
  if [[ "$MODE" == inline ]]; then
    queue_rules -I || fail "could not insert the NFQUEUE rules with $IPTABLES (make doctor: NFQUEUE)"
    RULES_IN=1
  fi
  echo "secfn: $ENGINE $MODE queue=$QUEUE_NUM fail_open=$FAIL_OPEN" >"$READY"
  say "$ENGINE ready ($MODE$([[ "$MODE" == inline ]] && echo ", queue $QUEUE_NUM"))"
  local rc=0
  wait "$ENGINE_PID" || rc=$?
  ENGINE_PID=""
  rm -f "$READY"
  fail "$ENGINE exited by itself (exit $rc); its rules stay, as after a crash: $(tail -n 3 "$LOG_DIR/$ENGINE.out" 2>/dev/null | tr '\n' ' ')"
}

main "$@"
