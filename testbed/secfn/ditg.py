"""D-ITG flows for the security-function experiment (docs/secfn.md): ITGSend at the UE,
ITGRecv on the N6 server, ITGDec over both logs. 512 B payloads with Poisson inter-departure
times (`-O <mean packets/s>`), as the seed study sent them.

ITGDec's text is kept beside the binary logs (`<log>.txt`) and parsed here: its TOTAL RESULTS
block, plus the flow's source address as the receiver saw it (the NAT proof at the receiver).
Between namespaces both ends read the same host clock, so the one-way delay is exact; in the
stack the containers share the host's clock too.
"""
from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

from testbed import host_tools

PAYLOAD = 512
FIELDS = {
    "total_time_s": r"Total time\s*=\s*([\d.]+) s",
    "packets": r"Total packets\s*=\s*(\d+)",
    "delay_min_s": r"Minimum delay\s*=\s*(-?[\d.]+) s",
    "delay_max_s": r"Maximum delay\s*=\s*(-?[\d.]+) s",
    "delay_avg_s": r"Average delay\s*=\s*(-?[\d.]+) s",
    "jitter_avg_s": r"Average jitter\s*=\s*([\d.]+) s",
    "delay_sd_s": r"Delay standard deviation\s*=\s*([\d.]+) s",
    "bytes": r"Bytes received\s*=\s*(\d+)",
    "bitrate_kbps": r"Average bitrate\s*=\s*([\d.]+) Kbit/s",
    "packet_rate": r"Average packet rate\s*=\s*([\d.]+) pkt/s",
    "dropped": r"Packets dropped\s*=\s*(-?\d+)",
}
TOTAL = "TOTAL RESULTS"


class DitgError(RuntimeError):
    """D-ITG failed or wrote nothing readable; the message has its output."""


def plan(protocols: list[str], rates: list[int], runs: int, seed: int) -> list[tuple[str, int, int]]:
    """(protocol, rate, run) for every flow, in a random order from `seed`: drift over the
    measurement hits every rate and protocol alike."""
    flows = [(p, r, i) for i in range(runs) for p in protocols for r in rates]
    random.Random(seed).shuffle(flows)
    return flows


def tag(protocol: str, rate: int, run: int) -> str:
    return f"{protocol}-{rate}-{run}"


def v4mapped(address: str) -> str:
    """`::ffff:a.b.c.d` for an IPv4 address (anything else as it is)."""
    return f"::ffff:{address}" if re.fullmatch(r"\d{1,3}(\.\d{1,3}){3}", address) else address


def send_command(server: str, protocol: str, rate: int, duration_s: float, send_log: Path | str,
                 recv_log: Path | str, source: str | None = None) -> list[str]:
    """ITGSend for one flow; `recv_log` is a path on the receiver's side (ITGRecv writes it)."""
    if not source:
        argv = ["ITGSend", "-T", protocol.upper(), "-a", server]
    else:
        # the UE's address for the flow and for D-ITG's signalling: UERANSIM routes only what
        # leaves from it into the PDU session, so both cross the UPF. D-ITG 2.8.1 binds a source
        # on an IPv6 socket: an IPv4 -sa fails ("Address family not supported by protocol",
        # no packet sent), the IPv4-mapped forms of both ends work and send plain IPv4
        # (tests/integration/test_secfn_ditg_source.py)
        argv = ["ITGSend", "-T", protocol.upper(), "-a", v4mapped(server),
                "-sa", v4mapped(source), "-Ssa", v4mapped(source)]
    return argv + ["-c", str(PAYLOAD), "-O", str(int(rate)), "-t", str(int(duration_s * 1000)),
                   "-l", str(send_log), "-x", str(recv_log)]


def parse(text: str, name: str = "ITGDec output") -> dict[str, float | str]:
    """The TOTAL RESULTS block of ITGDec's text plus the flow's source as the receiver saw it."""
    if TOTAL not in text:
        raise DitgError(f"{name}: no '{TOTAL}' block: {text[-300:]}")
    total = text[text.index(TOTAL):]
    out: dict[str, float | str] = {}
    for key, pattern in FIELDS.items():
        m = re.search(pattern, total)
        if m is None:
            raise DitgError(f"{name}: no '{key}' in its totals")
        out[key] = float(m.group(1))
    src = re.search(r"^From\s+([0-9a-fA-F.:]+?):\d+\s*$", text, flags=re.M)
    # an IPv4-mapped source (a sender bound with -sa, send_command) is the IPv4 address it maps
    out["seen_source"] = src.group(1).removeprefix("::ffff:") if src else ""
    return out


def decode(log: Path) -> dict[str, float | str]:
    """Run ITGDec over a binary log, keep its text as `<log>.txt`, and parse it."""
    try:
        res = subprocess.run(["ITGDec", str(log)], capture_output=True, text=True, timeout=120, check=False)
    except FileNotFoundError:
        raise DitgError(f"ITGDec not found: {host_tools.install_hint('ITGDec')}") from None
    Path(f"{log}.txt").write_text(res.stdout, encoding="utf-8")
    if TOTAL not in res.stdout:
        raise DitgError(f"ITGDec {log.name} (exit {res.returncode}): no '{TOTAL}': "
                        f"{res.stdout[-300:]}{res.stderr[-300:]}")
    return parse(res.stdout, log.name)
