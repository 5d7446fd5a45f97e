#!/usr/bin/env bash
# Command wrapper of the OpenAirInterface containers (RAN=oai|split, docs/ran.md): runs PROGRAM
# with its arguments in /run/oai (a per-start tmpfs: OAI writes its periodic stats files into
# the working directory), with its output on the container log AND in /run/oai/oai.log, which
# the healthchecks read (testbed/ran/oai/services.py names the lines). The program replaces this shell
# (exec), so it receives the container's SIGTERM itself; its exit code is the container's.
set -euo pipefail

readonly LOG_DIR=/run/oai

usage() {
  echo "usage: oai.sh PROGRAM [ARG...]   (PROGRAM: nr-softmodem, nr-cuup or nr-uesoftmodem)"
}

main() {
  (($#)) || { usage >&2; exit 2; }
  case "$1" in
    -h|--help) usage; exit 0 ;;
    nr-softmodem|nr-cuup|nr-uesoftmodem) ;;
    *) echo "oai.sh: unknown program $1" >&2; usage >&2; exit 2 ;;
  esac
  command -v "$1" >/dev/null || { echo "oai.sh: $1 is not installed in this image (make build IMAGES=oai)" >&2; exit 1; }
  mkdir -p "$LOG_DIR"
  cd "$LOG_DIR"
  : >"$LOG_DIR/oai.log"
  # the log copy is a child (tee) that ends with the program's output
  exec > >(exec tee -a "$LOG_DIR/oai.log") 2>&1
  exec "$@"
}

main "$@"
