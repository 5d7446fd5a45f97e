#!/usr/bin/env bash
# Baseline command of a namespace holder (<node>-net), in the node's network namespace (its
# owner is <node>-ns, compose/base.yaml): has no overlay, so it is ready at once. Writes
# /run/testbed/overlay-ready (the holder's healthcheck tests it) and idles until SIGTERM. Overlay fragments replace this command with
# their own entrypoint (ipsec/entrypoint.sh, wireguard/entrypoint.sh).
set -euo pipefail

readonly READY=/run/testbed/overlay-ready

usage() {
  echo "usage: holder.sh   (no arguments; run as the command of a <node>-net container)"
}

main() {
  if (($#)); then
    case "$1" in
      -h|--help) usage; exit 0 ;;
      *) usage >&2; exit 2 ;;
    esac
  fi
  local sleeper=""
  trap 'rm -f "$READY"; [[ -z "$sleeper" ]] || kill "$sleeper" 2>/dev/null; exit 0' TERM INT
  mkdir -p "$(dirname "$READY")"
  echo "holder: no overlay in this namespace; ready" >&2
  : >"$READY"
  # Idle (pacing only, not a readiness wait); `wait` returns at once on SIGTERM.
  while true; do
    sleep 3600 &
    sleeper="$!"
    wait "$sleeper" || true
  done
}

main "$@"
