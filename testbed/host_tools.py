"""What a message about a missing host program tells the user to run: `sudo make host-tools`
(scripts/setup-host.sh installs the program's Debian package), and the apt-get command for that
package alone, for a host where setup left it out (SETUP_UPGRADE=0, or an upgrade from another
suite it needs: setup-host names those too)."""
from __future__ import annotations

# program -> (Debian package, the suite Debian 12 takes it from where not its own); every package
# here is one scripts/setup-host.sh installs (tests/testbed/test_host_tools.py checks)
PACKAGES: dict[str, tuple[str, str]] = {
    "suricata": ("suricata", "bookworm-backports"),
    "iptables": ("iptables", ""),
    "iptables-legacy": ("iptables", ""),
    "ITGSend": ("d-itg", ""),
    "ITGRecv": ("d-itg", ""),
    "ITGDec": ("d-itg", ""),
    "gcc": ("gcc", ""),
    "tshark": ("tshark", ""),
    "editcap": ("tshark", ""),
    "dumpcap": ("tshark", ""),
    "openssl": ("openssl", ""),
    "wg": ("wireguard-tools", ""),
    "wireguard-go": ("wireguard-go", ""),
    "swanctl": ("strongswan-swanctl", ""),
    "nft": ("nftables", ""),
    "socat": ("socat", ""),
    "iperf3": ("iperf3", ""),
    "nghttpd": ("nghttp2-server", ""),
    "nghttp": ("nghttp2-client", ""),
}


def apt_command(program: str) -> str:
    """The apt-get command that installs the program's package (Debian 12 and 13; -t for a
    package Debian 12 takes from backports, as setup does)."""
    package, suite = PACKAGES.get(program, (program, ""))
    target = f"-t {suite} " if suite else ""
    return f"sudo apt-get install --no-install-recommends {target}{package}"


def install_hint(program: str) -> str:
    """"<program> not found: ..." ends with this: the commands that install it."""
    package, suite = PACKAGES.get(program, (program, ""))
    where = f" on Debian 12; Debian 13: without -t {suite}" if suite else ""
    return f"`sudo make host-tools` installs it (package {package}), or `{apt_command(program)}`{where}"
