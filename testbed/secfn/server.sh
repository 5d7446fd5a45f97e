#!/usr/bin/env bash
# The N6 server of the security-function experiment (docs/secfn.md): the same script in the
# stack's `dn` container and in the namespace lab's dn namespace.
#
#   server.sh OUT_DIR [DROP_PORT]
#
# Runs, until SIGTERM: ITGRecv (D-ITG receiver; each sender names its receiver log, a path
# in OUT_DIR), TCP listeners on 80 and 445 answering "ok" (the seed's HTTP-DoS and port-445
# rules need a server that accepts), and a UDP receiver on DROP_PORT that appends whatever
# arrives to OUT_DIR/drop-probe-received.txt (inline, the drop rule must keep it empty).
# Writes $SECFN_SERVER_READY (default /run/testbed/server-ready) once everything listens.
# ROUTE_VIA=<addr> with ROUTE_TO=<subnet>: first routes the UE subnet back through the UPF
# (SECFN=none: no NAT hides the UEs; needs NET_ADMIN).
# Exit: 0 on SIGTERM, 1 a listener failed, 2 usage.
set -euo pipefail

READY="${SECFN_SERVER_READY:-/run/testbed/server-ready}"
PIDS=()

say() { echo "server: $*" >&2; }

# shellcheck disable=SC2317  # invoked by trap
stop() {
  trap '' TERM INT
  exit 0
}

# reap: on every way out (SIGTERM, a listener that failed or died), the listeners and whatever
# they forked (socat's connection children) go too: a server that gave up by itself used to leave
# ITGRecv and socat running in a namespace deleted after it.
# shellcheck disable=SC2317  # invoked by trap
reap() {
  local rc=$?
  trap - EXIT
  ((${#PIDS[@]} == 0)) || pkill -TERM -P "$(printf '%s,' "${PIDS[@]}" | sed 's/,$//')" 2>/dev/null || true
  ((${#PIDS[@]} == 0)) || kill -TERM "${PIDS[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -f "$READY"
  exit "$rc"
}

listening() {
  local proto="$1" port="$2"
  ss -H "-l${proto}n" "sport = :$port" 2>/dev/null | grep -q .
}

main() {
  case "${1:-}" in
    -h | --help) echo "usage: server.sh OUT_DIR [DROP_PORT]"; exit 0 ;;
    "" | -*) echo "usage: server.sh OUT_DIR [DROP_PORT]" >&2; exit 2 ;;
  esac
  local out="$1" drop_port="${2:-9999}" port i
  mkdir -p "$out" "$(dirname "$READY")"
  rm -f "$READY"
  trap reap EXIT
  trap stop TERM INT
  if [[ -n "${ROUTE_TO:-}" ]]; then
    ip route replace "$ROUTE_TO" via "${ROUTE_VIA:?ROUTE_VIA needed with ROUTE_TO}" \
      || { say "cannot route $ROUTE_TO via $ROUTE_VIA (needs NET_ADMIN)"; exit 1; }
  fi
  ITGRecv >"$out/itgrecv.out" 2>&1 &
  PIDS+=($!)
  # `echo ok` and then read the client to its end: with a bare `echo ok` the connection's socat
  # wrote the client's bytes into the exited echo, died of the broken pipe before passing "ok"
  # on, and about one probe in six (more on a loaded host) saw no answer (tests/integration/test_secfn_server.py)
  for port in 80 445; do
    socat -T 10 "TCP-LISTEN:$port,fork,reuseaddr" SYSTEM:'echo ok; cat >/dev/null' >"$out/listen-$port.out" 2>&1 &
    PIDS+=($!)
  done
  socat -u "UDP-RECV:$drop_port" "OPEN:$out/drop-probe-received.txt,creat,append" >"$out/listen-udp.out" 2>&1 &
  PIDS+=($!)
  for ((i = 0; i < 100; i++)); do
    if listening t 9000 && listening t 80 && listening t 445 && listening u "$drop_port"; then
      : >"$READY"
      say "listening: ITGRecv (9000), tcp 80 and 445, udp $drop_port"
      # a listener that dies ends the server (and so the run, as invalid)
      local rc=0
      wait -n || rc=$?
      say "a listener exited ($rc): $(tail -n 2 "$out"/*.out 2>/dev/null | tr '\n' ' ')"
      rm -f "$READY"
      exit 1
    fi
    sleep 0.1
  done
  say "listeners not up within 10 s: $(tail -n 2 "$out"/*.out 2>/dev/null | tr '\n' ' ')"
  exit 1
}

main "$@"
