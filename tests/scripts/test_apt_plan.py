"""scripts/lib/apt-plan.sh: what `apt-get -s install` would do, and whether `make host-tools` may do it
(issue 30 §2: dependency upgrades from the host's own release yes, from any other suite or archive
no, removals never). On apt's real output (tests/data/apt-sim/SOURCE.md)."""
from __future__ import annotations

import subprocess

import pytest

from tests.conftest import ROOT, SHARED_DATA, require_tools

LIB = ROOT / "scripts" / "lib" / "apt-plan.sh"
SIM = SHARED_DATA / "apt-sim"
BACKPORTS = "bookworm-backports oldstable-backports"


def _bash(script: str, stdin: str = "", *args: str) -> str:
    require_tools("dpkg")
    res = subprocess.run(["bash", "-c", f'set -euo pipefail; source "{LIB}"; {script}', "bash", *args],
                         input=stdin, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    return res.stdout


def _plan(name: str) -> list[list[str]]:
    return [ln.split("|") for ln in _bash("apt_plan", (SIM / name).read_text()).splitlines()]


def _judge(name: str, vid: str = "12", upgrade: str = "1", extra: str = "") -> tuple[str, list[str]]:
    out = _bash('apt_plan | apt_judge "$1" "$2" "$3"', (SIM / name).read_text(), vid, upgrade, extra).splitlines()
    return out[0], out[1:]


def test_every_inst_and_remv_line_becomes_one_action() -> None:
    for f in sorted(SIM.glob("*.txt")):
        text = f.read_text()
        lines = [ln for ln in text.splitlines() if ln.startswith(("Inst ", "Remv "))]
        assert len(_plan(f.name)) == len(lines), f.name


def test_the_plan_reads_new_packages_upgrades_and_their_archives() -> None:
    plan = _plan("bookworm-12.11-features.txt")
    assert sum(p[0] == "new" for p in plan) == 24 and sum(p[0] == "upgrade" for p in plan) == 9
    assert ["upgrade", "libnghttp2-14", "1.52.0-1+deb12u2", "1.52.0-1+deb12u3",
            "Debian:12.15/oldstable, Debian-Security:12/oldstable-security"] in plan
    assert ["new", "charon-systemd", "5.9.8-5+deb12u6", "Debian-Security:12/oldstable-security"] in plan
    # a line apt ends with the packages it configures first ("[libc-bin:amd64 ]")
    assert ["upgrade", "libc6", "2.36-9+deb12u14", "2.41-12+deb13u5", "Debian:13.8/stable"] \
        in _plan("bookworm-jq-from-trixie.txt")
    assert ["remove", "systemd-timesyncd", "252.38-1~deb12u1"] in _plan("bookworm-12.11-chrony-removes.txt")


def test_upgrades_within_the_hosts_release_are_allowed_and_named() -> None:
    verdict, reasons = _judge("bookworm-12.11-features.txt")
    assert verdict == "upgrades"
    assert "libsystemd0 252.38-1~deb12u1 -> 252.39-1~deb12u2" in reasons
    assert "libnghttp2-14 1.52.0-1+deb12u2 -> 1.52.0-1+deb12u3" in reasons and len(reasons) == 9


def test_setup_upgrade_0_holds_them() -> None:
    verdict, reasons = _judge("bookworm-12.11-features.txt", upgrade="0")
    assert verdict == "held" and len(reasons) == 9


def test_another_release_is_refused_for_the_same_packages() -> None:
    # the same plan on a host of another release: nothing of it is that host's own
    verdict, reasons = _judge("bookworm-12.11-features.txt", vid="13")
    assert verdict == "refused" and any(r.startswith("libsystemd0 ") and "Debian:12.15/oldstable" in r for r in reasons)


def test_a_newer_suite_is_refused() -> None:
    verdict, reasons = _judge("bookworm-jq-from-trixie.txt")
    assert verdict == "refused"
    assert any(r.startswith("libc6 2.36-9+deb12u14 -> 2.41-12+deb13u5") for r in reasons), reasons
    assert any(r.startswith("jq ") for r in reasons), "a new package from trixie is refused too"


def test_backports_give_new_packages_only() -> None:
    verdict, reasons = _judge("bookworm-12.11-suricata-backports.txt", extra=BACKPORTS)
    assert verdict == "upgrades" and sorted(reasons) == [
        "libevent-2.1-7 2.1.12-stable-8 -> 2.1.12-stable-8+deb12u1",
        "libevent-core-2.1-7 2.1.12-stable-8 -> 2.1.12-stable-8+deb12u1"]
    verdict, reasons = _judge("bookworm-12.11-suricata-backports.txt")
    assert verdict == "refused" and any(r.startswith("suricata ") and "Backports" in r for r in reasons)
    # an installed package upgraded from backports: never, even where backports give new ones
    verdict, reasons = _judge("bookworm-12.11-libcurl-backports.txt", extra=BACKPORTS)
    assert verdict == "refused"
    assert {r.split()[0] for r in reasons} == {"curl", "libcurl4", "libcurl3-gnutls"}, reasons


def test_a_removal_is_refused() -> None:
    verdict, reasons = _judge("bookworm-12.11-chrony-removes.txt")
    assert verdict == "refused" and reasons == ["systemd-timesyncd would be removed"]


def test_a_downgrade_is_refused() -> None:
    line = "Inst jq [1.6-2.1] (1.5-1 Debian:12.15/oldstable [amd64])\n"
    out = _bash('apt_plan | apt_judge 12 1', line).splitlines()
    assert out == ["refused", "jq 1.6-2.1 would be downgraded to 1.5-1"]


def test_nothing_installed_changes() -> None:
    line = "Inst jq (1.6-2.1+deb12u1 Debian:12.15/oldstable [amd64])\n"
    assert _bash('apt_plan | apt_judge 12 0', line).splitlines() == ["ok"]


@pytest.mark.parametrize(("vid", "release", "own"), [
    ("12", "Debian:12.15/oldstable", True),
    ("12", "Debian-Security:12/oldstable-security", True),
    ("12", "Debian:12-updates/oldstable-updates", True),
    ("12", "Debian:13.8/stable", False),
    ("1", "Debian:12.15/oldstable", False),
    ("12", "Debian Backports:oldstable-backports", False),
    ("12", "Debian:unstable/unstable", False),
    ("", "Debian:12.15/oldstable", False),
    ("22.04", "Ubuntu:22.04/jammy-updates", True),
    ("12", "Debian:13.8/stable, Debian-Security:12/oldstable-security", True),
])
def test_own_release(vid: str, release: str, own: bool) -> None:
    assert _bash('if own_release "$1" "$2"; then echo yes; else echo no; fi', "", vid, release).strip() \
        == ("yes" if own else "no")


def test_the_archives_of_a_suite_from_apt_cache_policy() -> None:
    policy = (" 100 http://deb.debian.org/debian bookworm-backports/main amd64 Packages\n"
              "     release o=Debian Backports,a=oldstable-backports,n=bookworm-backports,l=Debian Backports,c=main,b=amd64\n"
              " 500 http://deb.debian.org/debian bookworm/main amd64 Packages\n"
              "     release v=12.15,o=Debian,a=oldstable,n=bookworm,l=Debian,c=main,b=amd64\n")
    assert _bash("suite_archives bookworm-backports", policy).strip() == BACKPORTS


def test_a_release_without_a_version_is_known_by_its_archives() -> None:
    """Debian sid or testing has no VERSION_ID: its own archives are named (suite_archives)."""
    sid = ("Inst libc6 [2.41-12] (2.42-1 Debian:unstable [amd64])\n"
           "Inst jq (1.8.1-3 Debian:unstable [amd64])\n")
    assert _bash('apt_plan | apt_judge "" 1 "" "sid unstable"', sid).splitlines() == [
        "upgrades", "libc6 2.41-12 -> 2.42-1"]
    assert _bash('apt_plan | apt_judge "" 1 "" "forky testing"', sid).splitlines()[0] == "refused"
