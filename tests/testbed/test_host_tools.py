"""testbed/host_tools.py: the hints for a missing host program name commands that install it (issue
30 §2: `suricata not found: make setup installs it` was false where setup had left it out)."""
from __future__ import annotations

import re

from testbed import host_tools
from tests.conftest import ROOT
from tests.scripts.test_setup_host import _arrays


def _setup_packages() -> set[str]:
    main, backports = _arrays()
    return {p for entry in main + backports for p in entry.split("|")}


def test_every_hinted_package_is_one_setup_installs() -> None:
    missing = {pkg for pkg, _ in host_tools.PACKAGES.values()} - _setup_packages()
    assert not missing, f"hints say `sudo make host-tools` installs {sorted(missing)}, scripts/setup-host.sh does not"


def test_the_hint_names_setup_and_the_exact_apt_command() -> None:
    assert host_tools.install_hint("suricata") == (
        "`sudo make host-tools` installs it (package suricata), or "
        "`sudo apt-get install --no-install-recommends -t bookworm-backports suricata` on Debian 12; "
        "Debian 13: without -t bookworm-backports")
    assert host_tools.apt_command("ITGDec") == "sudo apt-get install --no-install-recommends d-itg"
    assert host_tools.install_hint("iptables").endswith("`sudo apt-get install --no-install-recommends iptables`")


def test_no_message_says_make_setup_installs_a_host_program() -> None:
    """`make setup` as a user installs no host package (mk/00-setup.mk): the messages name
    `sudo make host-tools` or host_tools' commands."""
    stale = []
    for d in ("testbed", "ipsec", "wireguard", "tls", "dtls", "macsec", "analysis", "scripts", "tests"):
        for f in (ROOT / d).rglob("*"):
            if f.suffix in (".py", ".sh") and f.is_file() and f.name != "test_host_tools.py":
                text = f.read_text(encoding="utf-8", errors="replace")
                stale += [f"{f.relative_to(ROOT)}: {m}" for m in re.findall(r"[^\n]*make setup installs[^\n]*", text)]
    assert not stale, stale
