"""D-ITG flows for the security-function experiment (docs/secfn.md): ITGSend in the UE
namespace, ITGRecv on the N6 server, ITGDec over the receiver log. 512 B payloads with Poisson
inter-departure times (`-O <mean packets/s>`), as the seed study sent them. The clocks of both
ends are the same host's, so the one-way delay ITGDec reports is exact (no clock offset)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

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


def send_command(server: str, protocol: str, rate: float, duration_s: float, send_log: Path,
                 recv_log: Path) -> list[str]:
    return ["ITGSend", "-T", protocol.upper(), "-a", server, "-c", str(PAYLOAD), "-O", f"{rate:g}",
            "-t", str(int(duration_s * 1000)), "-l", str(send_log), "-x", str(recv_log)]


def decode(recv_log: Path) -> dict[str, float | str]:
    """The TOTAL RESULTS block of `ITGDec <receiver log>` plus the flow's source (NAT proof)."""
    try:
        res = subprocess.run(["ITGDec", str(recv_log)], capture_output=True, text=True, timeout=120, check=False)
    except FileNotFoundError:
        raise DitgError("ITGDec not found: apt-get install d-itg (make setup)") from None
    text = res.stdout
    if TOTAL not in text:
        raise DitgError(f"ITGDec {recv_log.name}: no '{TOTAL}' (exit {res.returncode}): {text[-300:]}{res.stderr[-300:]}")
    total = text[text.index(TOTAL):]
    out: dict[str, float | str] = {}
    for key, pattern in FIELDS.items():
        m = re.search(pattern, total)
        if m is None:
            raise DitgError(f"ITGDec {recv_log.name}: no '{key}' in its totals")
        out[key] = float(m.group(1))
    src = re.search(r"^From\s+([0-9a-fA-F.:]+?):\d+\s*$", text, flags=re.M)
    out["seen_source"] = src.group(1) if src else ""
    return out
