#!/usr/bin/env bash
# test-as-user.sh [--root-tests FILE] [USER]: runs the README's test command (`make test`) as an
# unprivileged user on a copy of this working tree, so the suite is proven to need root only where
# a test says so (those skip naming root). With --root-tests, the node ids of the tests that skipped
# for want of root are written to FILE (tests/skip_policy.py), for .ci/run's root run to run exactly
# those. PYTEST_ARGS passes on; PATH_PREFIX (directories, colon-separated) goes before the user's own
# PATH (.ci/run: the cached rosenpass). As root only (it creates the user); exits with make's status.
set -euo pipefail

readonly DEFAULT_USER=g5tb-ci

die() {
  echo "test-as-user: $*" >&2
  exit 1
}

main() {
  local out="" user root home copy args rc
  if [[ "${1:-}" == --root-tests ]]; then
    out="${2:?--root-tests needs a FILE}"
    shift 2
  fi
  user="${1:-$DEFAULT_USER}"
  [[ "$(id -u)" == 0 ]] || die "run as root (it creates the user $user and copies the tree to its home)"
  root="$(cd "$(dirname "$0")/.." && pwd)"
  if ! id "$user" >/dev/null 2>&1; then
    useradd --create-home --shell /bin/bash "$user" || die "useradd $user failed"
  fi
  home="$(getent passwd "$user" | cut -d: -f6)"
  # the copy sits as deep under the home as the tree sits here, with the project's shared/ (papers)
  # where the tree finds it: two levels up (tests/analysis/test_pq.py)
  copy="$home/src/testbed"
  mkdir -p "$copy"
  if [[ -d "$root/../../shared" ]]; then
    ln -sfn "$(cd "$root/../../shared" && pwd)" "$home/shared"
  fi
  # the working tree as it is (uncommitted changes included), without root's venv, state or
  # results; the copy's own venv is kept from the last run (remade by make when the lock changed)
  find "$copy" -mindepth 1 -maxdepth 1 ! -name .venv -exec rm -rf {} +
  tar -C "$root" --exclude=./.venv --exclude=./.state --exclude=./results --exclude=./build \
      --exclude=./.git -cf - . | tar -C "$copy" -xf -
  chown -R "$user:" "$copy"
  args="${PYTEST_ARGS:-}"
  [[ -z "$out" ]] || args+=" --root-tests-out=.root-tests"
  echo "test-as-user: make test as $user (uid $(id -u "$user")) in $copy"
  # a clean login environment: the user's own PATH and HOME, never root's Python or caches
  rc=0
  runuser --login "$user" -c "cd '$copy' && PATH='${PATH_PREFIX:+$PATH_PREFIX:}'\"\$PATH\" make test PYTEST_ARGS='$args'" \
    || rc=$?
  if [[ -n "$out" ]]; then
    [[ -f "$copy/.root-tests" ]] || die "make test as $user wrote no $copy/.root-tests (exit $rc)"
    cp "$copy/.root-tests" "$out"
  fi
  return "$rc"
}

main "$@"
