"""scripts/setup-host.sh against the real apt of a fresh Debian 12 and a fresh Debian 13: in a
debootstrapped minbase root of each (`make setup-roots`: scripts/suite-root.sh
tests/scripts/setup_roots/<suite>.env, cached like the post-quantum roots), with the release's own archives (main, -updates, -security)
and apt's simulation (SETUP_SIMULATE=1: every install is `apt-get -s`). Issue 30 §2: on Debian 13
`strongswan-charon` and `charon-systemd` conflict, and `make host-tools` failed there outright.
Needs root (chroot), the root made, and the Debian mirror (apt-get update in the root); skips
naming what is missing."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.scripts.test_setup_host import _arrays

SPECS = ROOT / "tests" / "scripts" / "setup_roots"
MIRRORS = {"bookworm": ("http://deb.debian.org/debian", "http://deb.debian.org/debian-security"),
           "trixie": ("http://deb.debian.org/debian", "http://deb.debian.org/debian-security")}
INST = re.compile(r"^Inst (\S+) (?:\[(\S+)\] )?\((\S+) (.*) \[[^]]*\]\)", re.M)


def _root(suite: str) -> Path:
    if os.geteuid() != 0:
        pytest.skip("needs root (chroot into the Debian root): run `sudo make test`")
    spec = SPECS / f"{suite}.env"
    res = subprocess.run(["bash", str(ROOT / "scripts" / "suite-root.sh"), "--path", str(spec)],
                         capture_output=True, text=True, timeout=30, check=False)
    root = Path(res.stdout.strip())
    if res.returncode != 0 or not (root / ".g5tb-root").is_file():
        pytest.skip(f"no Debian {suite} root: `sudo make setup-roots` makes it (scripts/suite-root.sh "
                    f"{spec.relative_to(ROOT)}: debootstrap, Debian mirror)")
    main, security = MIRRORS[suite]
    (root / "etc" / "apt" / "sources.list").write_text(
        f"deb {main} {suite} main\ndeb {main} {suite}-updates main\ndeb {security} {suite}-security main\n")
    shutil.copyfile("/etc/resolv.conf", root / "etc" / "resolv.conf")
    upd = subprocess.run(["chroot", str(root), "apt-get", "update", "-q"], capture_output=True, text=True,
                         timeout=300, check=False)
    if upd.returncode != 0:
        pytest.skip(f"apt-get update in the {suite} root failed (Debian mirror unreachable?): {upd.stderr[-300:]}")
    return root


def _run(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """setup-host.sh as it is in this tree, copied into the root and run there."""
    dest = root / "tmp" / "g5tb-setup-test"
    shutil.rmtree(dest, ignore_errors=True)
    (dest / "lib").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup-host.sh", dest / "setup-host.sh")
    shutil.copy(ROOT / "scripts" / "lib" / "apt-plan.sh", dest / "lib" / "apt-plan.sh")
    pairs = [f"{k}={v}" for k, v in {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SETUP_SIMULATE": "1", **env}.items()]
    return subprocess.run(["chroot", str(root), "env", "-i", *pairs, "bash", "/tmp/g5tb-setup-test/setup-host.sh"],
                          capture_output=True, text=True, timeout=900, check=False)


def _own(suite: str, releases: str) -> bool:
    vid = {"bookworm": "12", "trixie": "13"}[suite]
    return any(re.match(rf"[^:]+:{vid}(?:[.-][^/]*)?/", r.strip()) for r in releases.split(","))


@pytest.mark.parametrize("suite", ["bookworm", "trixie"])
def test_a_fresh_debian_gets_every_package(suite: str) -> None:
    root = _root(suite)
    res = _run(root)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "left out" not in res.stderr, res.stderr
    assert not re.search(r"^Remv ", res.stdout, re.M)
    inst = {m.group(1).split(":")[0]: m for m in INST.finditer(res.stdout)}
    main, backports = _arrays()
    for entry in main + backports:
        members = entry.split("|")
        have = subprocess.run(["chroot", str(root), "dpkg-query", "-W", *members], capture_output=True, check=False)
        chosen = [p for p in members if p in inst]
        assert len(chosen) == 1 or (have.returncode == 0 and not chosen), (entry, chosen)
    # upgrades: only from the release's own archives, each named before the install
    said = " ".join(ln for ln in res.stdout.splitlines() if ln.startswith("setup-host: upgrading"))
    for name, m in inst.items():
        if m.group(2):
            assert _own(suite, m.group(4)), m.group(0)
            assert f"{name} {m.group(2)} -> {m.group(3)}" in said, (name, said)
    if suite == "trixie":
        assert "charon-systemd" not in inst, "Debian 13: strongswan-charon or charon-systemd, not both"


def test_setup_upgrade_0_in_a_fresh_debian_12_upgrades_nothing() -> None:
    root = _root("bookworm")
    res = _run(root, SETUP_UPGRADE="0")
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    upgrades = [m.group(0) for m in INST.finditer(res.stdout) if m.group(2)]
    assert upgrades == [], upgrades
    for line in res.stderr.splitlines():
        if line.startswith("setup-host: left out: "):
            assert re.search(r"`sudo (make host-tools|apt-get install --no-install-recommends [^`]+)`", line), line
