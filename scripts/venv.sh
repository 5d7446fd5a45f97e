#!/usr/bin/env bash
# venv.sh VENV_DIR [PYTHON]: the project's virtual environment, from requirements.lock (exact
# versions with hashes, per Python version). Never touches the system Python (PEP 668). The
# repository itself is put on the venv's path with a .pth file, so nothing is built or
# downloaded for it (`python -m testbed` and `python -m analysis` work from any directory).
# Called by the Makefile when requirements.lock is newer than the venv's stamp; re-runs with
# nothing changed do not reach this script (no network).
set -euo pipefail

die() {
  echo "venv: $*" >&2
  exit 1
}

main() {
  local venv="${1:?usage: venv.sh VENV_DIR [PYTHON]}" python="${2:-python3}" root site
  root="$(cd "$(dirname "$0")/.." && pwd)"
  command -v "$python" >/dev/null || die "no $python: install Python 3.10 or newer, or name one with VENV_PYTHON=/path/to/python3"
  "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
    || die "$python is Python $("$python" -c 'import platform; print(platform.python_version())'); the testbed needs 3.10 or newer (VENV_PYTHON=/path/to/python3.10+)"
  if [[ ! -x "$venv/bin/python" ]]; then
    echo "venv: creating $venv with $("$python" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
    "$python" -m venv "$venv" || die "'$python -m venv' failed: install the venv module (Debian/Ubuntu: apt install python3-venv)"
  fi
  echo "venv: installing requirements.lock into $venv"
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes -r "$root/requirements.lock"; then
    echo "venv: pip failed; trying once more" >&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes -r "$root/requirements.lock" \
      || die "pip could not install requirements.lock: check the network/proxy (PyPI), then run \`make venv\` again"
  fi
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
  printf '%s\n' "$root" >"$site/g5tb-repository.pth"
}

main "$@"
