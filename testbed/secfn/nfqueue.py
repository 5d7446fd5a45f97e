"""Can this kernel queue packets to userspace (SECFN=ips-nat, docs/secfn.md)? Tried for real in a
throw-away network namespace, with each front end that may be installed: the xtables NFQUEUE
target through iptables-legacy and through iptables-nft, and nftables' own `queue` statement.
Some kernels (this project's CI hosts) have the xtables target but not nft's queue
(CONFIG_NFT_QUEUE unset): iptables-legacy is then the way. `make doctor` reports it.

    python -m testbed.secfn.nfqueue      # one line per front end: NAME yes|no REASON
"""
from __future__ import annotations

import shutil
import subprocess
import sys

RULE = ["FORWARD", "-s", "10.45.0.0/16", "-j", "NFQUEUE", "--queue-num", "4", "--queue-bypass"]
FRONT_ENDS = ("iptables-legacy", "iptables-nft", "nft")


def _in_netns(script: str) -> tuple[bool, str]:
    res = subprocess.run(["unshare", "--net", "sh", "-c", script], capture_output=True, text=True,
                         timeout=30, check=False)
    lines = [ln.strip() for ln in (res.stderr + res.stdout).splitlines() if ln.strip()]
    why = next((ln for ln in lines if "rror" in ln), lines[0] if lines else "")
    return res.returncode == 0, why


def probe() -> dict[str, tuple[bool, str]]:
    """{front end: (works, why not)}; front ends not installed say so."""
    out: dict[str, tuple[bool, str]] = {}
    for name in FRONT_ENDS:
        if shutil.which(name) is None:
            out[name] = (False, "not installed")
            continue
        if name == "nft":
            script = ("nft add table ip tbq && nft add chain ip tbq fq '{ type filter hook forward priority 0; }' "
                      "&& nft add rule ip tbq fq ip saddr 10.45.0.0/16 queue num 4 bypass")
        else:
            script = f"{name} -A " + " ".join(RULE)
        ok, why = _in_netns(script)
        out[name] = (ok, "" if ok else why or "refused")
    return out


def main() -> int:
    if shutil.which("unshare") is None:
        print("unshare missing: util-linux", file=sys.stderr)
        return 1
    for name, (ok, why) in probe().items():
        print(name, "yes" if ok else "no", (why or "-").replace("\n", " "))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
