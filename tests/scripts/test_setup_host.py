"""scripts/setup-host.sh (`make host-tools`, run by the first `make test`) installs what is missing,
with the upgrades apt needs for it from the host's own release, named first, and nothing from
another suite, no removal (issue 22.4, issue 30 §2). apt-get, apt-cache, dpkg-query, id and
debconf-set-selections are stand-ins on PATH that record their arguments and answer as a Debian 12
host would, in apt's own format (the package manager is not the thing under test; dpkg itself
compares the versions; tests/scripts/test_setup_host_roots.py runs the script against the real apt
in Debian 12 and 13 roots)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path


from tests.conftest import ROOT, require_tools

SCRIPT = ROOT / "scripts" / "setup-host.sh"
SYSTEMD_UP = ["Inst libsystemd0 [252.38-1~deb12u1] (252.39-1~deb12u2 Debian:12.15/oldstable [amd64])",
              "Inst systemd [252.38-1~deb12u1] (252.39-1~deb12u2 Debian:12.15/oldstable [amd64])"]


def _arrays() -> tuple[list[str], list[str]]:
    """The script's package entries ("a|b": one of them) and its backports packages."""
    text = SCRIPT.read_text()
    main = [w.strip('"') for w in re.search(r"readonly APT_PACKAGES=\(([^)]*)\)", text).group(1).split()]
    backports = re.search(r"readonly BACKPORTS_PACKAGES=\(([^)]*)\)", text).group(1).split()
    return main, backports


def _setup(tmp_path: Path, installed: dict[str, str], sim: dict[str, list[str]], **env: str):
    """Run the script with the stand-ins. sim: package -> the lines apt's simulation prints for it
    (default: one new package from Debian 12.15); ["FAIL"]: apt cannot install it (exit 100)."""
    require_tools("dpkg")
    bin_ = tmp_path / "bin"
    bin_.mkdir(parents=True, exist_ok=True)
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
        f'  if grep -q "^$a|FAIL" "{simfile}"; then echo " $a : Conflicts: other"; echo "E: Unable to correct problems"; exit 100; fi\n'
        f'  grep "^$a|" "{simfile}" | cut -d"|" -f2-\n'
        f'  grep -q "^$a|Inst $a " "{simfile}" || echo "Inst $a (1.0-1 Debian:12.15/oldstable [amd64])"\n'
        'done\n')
    (bin_ / "apt-cache").write_text(
        "#!/usr/bin/env bash\n"
        f'echo "apt-cache $*" >> "{calls}"\n'
        'echo " 100 http://deb.debian.org/debian bookworm-backports/main amd64 Packages"\n'
        'echo "     release o=Debian Backports,a=oldstable-backports,n=bookworm-backports,l=Debian Backports,c=main,b=amd64"\n')
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
    osr.write_text('VERSION_ID="12"\nVERSION_CODENAME=bookworm\n')
    sources = tmp_path / "sources.list.d"
    sources.mkdir(exist_ok=True)
    res = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=120, check=False,
                         env={"PATH": f"{bin_}:/usr/bin:/bin", "HOME": str(tmp_path), "SETUP_OS_RELEASE": str(osr),
                              "SETUP_APT_SOURCES": str(sources), **env})
    lines = calls.read_text().splitlines() if calls.exists() else []
    return res, lines


def _everything(but: tuple[str, ...] = (), curl: str = "8.14.1-2~bpo12+1") -> dict[str, str]:
    main, backports = _arrays()
    have = {p.split("|")[0]: "1.0-1" for p in main + backports if p.split("|")[0] not in but}
    if "libcurl3-gnutls" in have:
        have["libcurl3-gnutls"] = curl
    return have


def _installs(lines: list[str]) -> list[list[str]]:
    return [c.split() for c in lines if c.split()[:1] == ["install"] and "-s" not in c.split()]


def test_everything_installed_calls_no_apt_at_all(tmp_path: Path) -> None:
    res, lines = _setup(tmp_path, _everything(), {})
    assert res.returncode == 0, res.stderr
    assert lines == []


def test_missing_packages_are_installed_in_one_go_upgrading_and_removing_nothing(tmp_path: Path) -> None:
    res, lines = _setup(tmp_path, _everything(but=("tshark", "d-itg")), {})
    assert res.returncode == 0, res.stderr
    installs = _installs(lines)
    assert len(installs) == 1 and installs[0][-2:] == ["tshark", "d-itg"], lines
    assert {"--no-upgrade", "--no-remove", "--no-install-recommends"} <= set(installs[0])
    assert "upgrading" not in res.stdout


def test_upgrades_from_the_hosts_release_are_named_then_made(tmp_path: Path) -> None:
    res, lines = _setup(tmp_path, _everything(but=("tshark", "d-itg")), {"tshark": SYSTEMD_UP})
    assert res.returncode == 0, res.stderr
    installs = _installs(lines)
    assert len(installs) == 1 and installs[0][-2:] == ["tshark", "d-itg"], lines
    said = [ln for ln in res.stdout.splitlines() if ln.startswith("setup-host: upgrading")]
    assert said and "libsystemd0 252.38-1~deb12u1 -> 252.39-1~deb12u2" in said[0] \
        and "systemd 252.38-1~deb12u1 -> 252.39-1~deb12u2" in said[0], res.stdout
    assert "left out" not in res.stderr


def test_setup_upgrade_0_leaves_out_what_needs_an_upgrade_naming_the_command(tmp_path: Path) -> None:
    res, lines = _setup(tmp_path, _everything(but=("tshark", "d-itg")), {"tshark": SYSTEMD_UP}, SETUP_UPGRADE="0")
    assert res.returncode == 0, res.stderr
    installs = _installs(lines)
    assert installs == [installs[0]] and installs[0][-1] == "d-itg" and "tshark" not in installs[0], lines
    assert "libsystemd0 252.38-1~deb12u1 -> 252.39-1~deb12u2" in res.stderr
    assert "`sudo apt-get install --no-install-recommends tshark`" in res.stderr, res.stderr


def test_an_upgrade_from_another_suite_is_never_made(tmp_path: Path) -> None:
    trixie = ["Inst libc6 [2.36-9+deb12u14] (2.41-12+deb13u5 Debian:13.8/stable [amd64])"]
    res, lines = _setup(tmp_path, _everything(but=("tshark", "d-itg")), {"tshark": trixie})
    assert res.returncode == 0, res.stderr
    installs = _installs(lines)
    assert len(installs) == 1 and installs[0][-1] == "d-itg" and "tshark" not in installs[0], lines
    assert "libc6 2.36-9+deb12u14 -> 2.41-12+deb13u5 would come from Debian:13.8/stable" in res.stderr
    assert "`sudo apt-get install --no-install-recommends tshark`" in res.stderr, res.stderr


def test_a_removal_is_never_made(tmp_path: Path) -> None:
    res, lines = _setup(tmp_path, _everything(but=("tshark",)), {"tshark": ["Remv systemd-timesyncd [252.38-1~deb12u1]"]})
    assert res.returncode == 0, res.stderr
    assert _installs(lines) == [] and "systemd-timesyncd would be removed" in res.stderr


def test_of_two_alternatives_the_one_the_release_can_install(tmp_path: Path) -> None:
    # Debian 13 names the package libcurl3t64-gnutls: libcurl3-gnutls cannot be installed there, so
    # the other is, and never both
    res, lines = _setup(tmp_path, _everything(but=("libcurl3-gnutls", "d-itg")), {"libcurl3-gnutls": ["FAIL"]})
    assert res.returncode == 0, res.stderr
    installs = _installs(lines)
    assert installs and sorted(installs[0][-2:]) == ["d-itg", "libcurl3t64-gnutls"], lines
    assert not any("libcurl3-gnutls" in c for c in installs) and "left out" not in res.stderr
    # the first of them where it can be installed
    res, lines = _setup(tmp_path / "first", _everything(but=("libcurl3-gnutls",)), {})
    assert _installs(lines)[0][-1] == "libcurl3-gnutls" and not any("libcurl3t64" in c for c in lines), lines


def test_one_alternative_installed_is_enough(tmp_path: Path) -> None:
    have = _everything(but=("libcurl3-gnutls",))
    have["libcurl3t64-gnutls"] = "8.14.1-2"
    res, lines = _setup(tmp_path, have, {})
    assert res.returncode == 0, res.stderr
    assert lines == []


def test_strongswan_charon_never_charon_systemd(tmp_path: Path) -> None:
    """The IPsec entrypoint runs /usr/lib/ipsec/charon: on Debian 13, where charon-systemd excludes
    it, strongswan-charon is still the package asked for (the guest had charon-systemd, and every
    IPsec lab hung on `charon-systemd --version`)."""
    have = _everything(but=("strongswan-charon",))
    have["charon-systemd"] = "6.0.1-6+deb13u7"
    res, lines = _setup(tmp_path, have, {})
    assert res.returncode == 0, res.stderr
    assert _installs(lines) and _installs(lines)[0][-1] == "strongswan-charon", lines


def test_an_old_libcurl_is_kept_naming_the_command_that_upgrades_it(tmp_path: Path) -> None:
    res, lines = _setup(tmp_path, _everything(curl="7.88.1-10+deb12u14"), {})
    assert res.returncode == 0, res.stderr
    assert lines == [], "no apt run at all: nothing is missing and nothing installed is taken from backports"
    out = res.stdout + res.stderr
    assert "libcurl3-gnutls 7.88.1-10+deb12u14" in out
    assert "`sudo apt-get install --no-install-recommends -t bookworm-backports libcurl3-gnutls`" in out


def test_suricata_comes_from_backports_with_new_packages_only(tmp_path: Path) -> None:
    bpo = ["Inst libhtp2 (1:0.5.50-1+deb13u1~bpo12+1 Debian Backports:oldstable-backports [amd64])",
           "Inst suricata (1:7.0.10-1~bpo12+1 Debian Backports:oldstable-backports [amd64])",
           "Inst libevent-2.1-7 [2.1.12-stable-8] (2.1.12-stable-8+deb12u1 Debian:12.15/oldstable [amd64])"]
    res, lines = _setup(tmp_path, _everything(but=("suricata",)), {"suricata": bpo})
    assert res.returncode == 0, res.stderr
    installs = _installs(lines)
    assert len(installs) == 1 and installs[0][-3:] == ["-t", "bookworm-backports", "suricata"], lines
    assert "libevent-2.1-7 2.1.12-stable-8 -> 2.1.12-stable-8+deb12u1" in res.stdout
    assert (tmp_path / "sources.list.d" / "testbed-backports.sources").is_file()
    # an installed package upgraded from backports: left out, the command named
    bpo_up = [*bpo, "Inst libbpf1 [1:1.1.0-1] (1:1.4.6-1~bpo12+1 Debian Backports:oldstable-backports [amd64])"]
    res, lines = _setup(tmp_path / "up", _everything(but=("suricata",)), {"suricata": bpo_up})
    assert res.returncode == 0, res.stderr
    assert _installs(lines) == [] and "libbpf1 1:1.1.0-1 -> 1:1.4.6-1~bpo12+1" in res.stderr
    assert "`sudo apt-get install --no-install-recommends -t bookworm-backports suricata`" in res.stderr


def test_setup_upgrade_takes_0_or_1(tmp_path: Path) -> None:
    res, lines = _setup(tmp_path, _everything(but=("tshark",)), {}, SETUP_UPGRADE="yes")
    assert res.returncode == 2 and "SETUP_UPGRADE=yes" in res.stderr and lines == []


def test_the_readme_lists_exactly_what_the_first_run_installs() -> None:
    main, backports = _arrays()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("What the first run installs", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`([a-z0-9][a-z0-9.+-]+)`", block))
    names = {p for entry in main + backports for p in entry.split("|")}
    assert names <= listed, sorted(names - listed)
    assert "SETUP_UPGRADE=0" in block and "--no-remove" in block
