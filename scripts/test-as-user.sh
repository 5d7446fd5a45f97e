#!/usr/bin/env bash
# test-as-user.sh [USER]: runs the README's test command (`make test`) as an unprivileged user on a
# copy of this working tree, so the suite is proven to need root only where a test says so (those
# skip naming root). Called by .ci/run after the root run; as root only (it creates the user).
set -euo pipefail

readonly DEFAULT_USER=g5tb-ci

die() {
  echo "test-as-user: $*" >&2
  exit 1
}

main() {
  local user="${1:-$DEFAULT_USER}" root home copy
  [[ "$(id -u)" == 0 ]] || die "run as root (it creates the user $user and copies the tree to its home)"
  root="$(cd "$(dirname "$0")/.." && pwd)"
  if ! id "$user" >/dev/null 2>&1; then
    useradd --create-home --shell /bin/bash "$user" || die "useradd $user failed"
  fi
  home="$(getent passwd "$user" | cut -d: -f6)"
  copy="$home/testbed"
  rm -rf "$copy"
  mkdir -p "$copy"
  # the working tree as it is (uncommitted changes included), without root's venv, state or results
  tar -C "$root" --exclude=./.venv --exclude=./.state --exclude=./results --exclude=./build \
      --exclude=./.git -cf - . | tar -C "$copy" -xf -
  chown -R "$user:" "$copy"
  echo "test-as-user: make test as $user (uid $(id -u "$user")) in $copy"
  # a clean login environment: the user's own PATH and HOME, never root's Python or caches
  runuser --login "$user" -c "cd '$copy' && make test PYTEST_ARGS='${PYTEST_ARGS:-}'"
}

main "$@"
