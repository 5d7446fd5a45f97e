"""scripts/setup-host.sh (`make host-tools`, run by the first `make test`) installs what is missing
and upgrades nothing that is installed without being told to (issue 22.4: its first run upgraded
systemd, udev, libsystemd0 and curl). apt-get, dpkg-query, id and debconf-set-selections are
stand-ins on PATH that record their arguments and answer as a Debian 12 host would (the package
manager is not the thing under test; dpkg itself compares the versions)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path


from tests.conftest import ROOT, require_tools

SCRIPT = ROOT / "scripts" / "setup-host.sh"


def _arrays() -> tuple[list[str], list[str]]:
    text = SCRIPT.read_text()
    main = re.search(r"readonly APT_PACKAGES=\(([^)]*)\)", text).group(1).split()
    backports = re.search(r"readonly BACKPORTS_PACKAGES=\(([^)]*)\)", text).group(1).split()
    return main, backports


def _setup(tmp_path: Path, installed: dict[str, str], sim: dict[str, list[str]], **env: str):
    require_tools("dpkg")
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    calls = tmp_path / "apt-calls"
    db = tmp_path / "dpkg-db"
    db.write_text("".join(f"{p} {v}\n" for p, v in installed.items()))
    simfile = tmp_path / "sim"
    simfile.write_text("".join(f"{p}|{line}\n" for p, lines in sim.items() for line in lines))
    (bin_ / "apt-get").write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> "{calls}"\n'
        'sim=0; for a in "$@"; do [[ "$a" == -s || "$a" == --simulate ]] && sim=1; done\n'
        '((sim)) || exit 0\n'
        'for a in "$@"; do [[ "$a" == -* || "$a" == install || "$a" == bookworm-backports ]] && continue\n'
        f'  grep "^$a|" "{simfile}" | cut -d"|" -f2-\n'
        '  echo "Inst $a (1.0-1 Debian:12/stable [amd64])"\n'
        'done\n')
    (bin_ / "dpkg-query").write_text(
        "#!/usr/bin/env bash\n"
        'fmt="${2#-f=}"; pkg="${3:-}"; [[ "$2" == -f ]] && { fmt="$3"; pkg="$4"; }\n'
        f'line="$(grep "^$pkg " "{db}")" || exit 1\n'
        'case "$fmt" in *Status*) echo "install ok installed" ;; *Version*) echo "${line#* }" ;; esac\n')
    (bin_ / "id").write_text("#!/usr/bin/env bash\necho 0\n")
    (bin_ / "debconf-set-selections").write_text("#!/usr/bin/env bash\ncat >/dev/null\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    osr = tmp_path / "os-release"
    osr.write_text("VERSION_CODENAME=bookworm\n")
    sources = tmp_path / "sources.list.d"
    sources.mkdir(exist_ok=True)
    res = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=120, check=False,
                         env={"PATH": f"{bin_}:/usr/bin:/bin", "HOME": str(tmp_path), "SETUP_OS_RELEASE": str(osr),
                              "SETUP_APT_SOURCES": str(sources), **env})
    lines = calls.read_text().splitlines() if calls.exists() else []
    return res, lines


def _everything(but: tuple[str, ...] = (), curl: str = "8.14.1-2~bpo12+1") -> dict[str, str]:
    main, backports = _arrays()
    have = {p: "1.0-1" for p in main + backports if p not in but}
    if "libcurl3-gnutls" in have:
        have["libcurl3-gnutls"] = curl
    return have


def _installs(lines: list[str]) -> list[str]:
    return [c for c in lines if c.split()[:1] == ["install"] and "-s" not in c.split()]


def test_everything_installed_calls_no_apt_at_all(tmp_path: Path) -> None:
    res, lines = _setup(tmp_path, _everything(), {})
    assert res.returncode == 0, res.stderr
    assert lines == []


def test_missing_packages_are_installed_without_upgrading_installed_ones(tmp_path: Path) -> None:
    res, lines = _setup(tmp_path, _everything(but=("tshark", "d-itg")), {})
    assert res.returncode == 0, res.stderr
    installs = _installs(lines)
    assert installs and all("--no-upgrade" in c.split() for c in installs), lines
    assert any(c.split()[-2:] == ["tshark", "d-itg"] for c in installs), installs


def test_a_package_that_would_upgrade_installed_ones_waits_for_consent(tmp_path: Path) -> None:
    upgrades = {"tshark": ["Inst libsystemd0 [252.22-1~deb12u1] (252.39-1~deb12u2 Debian:12.12/stable [amd64])",
                           "Inst systemd [252.22-1~deb12u1] (252.39-1~deb12u2 Debian:12.12/stable [amd64])"]}
    res, lines = _setup(tmp_path, _everything(but=("tshark", "d-itg")), upgrades)
    assert res.returncode == 0, res.stderr
    installs = _installs(lines)
    assert not any("tshark" in c.split() for c in installs), installs
    assert any(c.split()[-1] == "d-itg" and "--no-upgrade" in c.split() for c in installs), installs
    out = res.stdout + res.stderr
    assert "tshark" in out and "libsystemd0 252.22-1~deb12u1 -> 252.39-1~deb12u2" in out and "SETUP_UPGRADE=1" in out
    res, lines = _setup(tmp_path, _everything(but=("tshark", "d-itg")), upgrades, SETUP_UPGRADE="1")
    assert res.returncode == 0, res.stderr
    assert any("tshark" in c.split() for c in _installs(lines)), lines


def test_an_old_libcurl_is_kept_unless_an_upgrade_is_asked_for(tmp_path: Path) -> None:
    res, lines = _setup(tmp_path, _everything(curl="7.88.1-10+deb12u14"), {})
    assert res.returncode == 0, res.stderr
    assert lines == [], "no apt run at all: nothing is missing and nothing may be upgraded"
    assert "libcurl3-gnutls 7.88.1-10+deb12u14" in res.stdout + res.stderr and "SETUP_UPGRADE=1" in res.stdout + res.stderr
    res, lines = _setup(tmp_path, _everything(curl="7.88.1-10+deb12u14"), {}, SETUP_UPGRADE="1")
    assert res.returncode == 0, res.stderr
    assert any("-t bookworm-backports" in c and c.split()[-1] == "libcurl3-gnutls" for c in _installs(lines)), lines


def test_suricata_comes_from_backports_without_upgrades(tmp_path: Path) -> None:
    res, lines = _setup(tmp_path, _everything(but=("suricata",)), {})
    assert res.returncode == 0, res.stderr
    installs = _installs(lines)
    assert len(installs) == 1 and "-t bookworm-backports" in installs[0] and "--no-upgrade" in installs[0].split() \
        and installs[0].split()[-1] == "suricata", lines
    assert (tmp_path / "sources.list.d" / "testbed-backports.sources").is_file()


def test_the_readme_lists_exactly_what_the_first_run_installs() -> None:
    main, backports = _arrays()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("What the first run installs", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`([a-z0-9][a-z0-9.+-]+)`", block))
    assert set(main) | set(backports) <= listed, sorted(set(main) | set(backports) - listed)
    assert "--no-upgrade" in block and "SETUP_UPGRADE=1" in block
