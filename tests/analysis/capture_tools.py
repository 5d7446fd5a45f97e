"""Helpers for tests that combine real captures with the real Wireshark tools (mergecap,
editcap, capinfos), so many captures cost one tshark run."""
from __future__ import annotations

import subprocess
from pathlib import Path


def numbered(folder: Path) -> list[Path]:
    """``0.pcap``, ``1.pcap``, ... in file-number order."""
    return sorted(folder.glob("*.pcap"), key=lambda p: int(p.stem))


def first_packet_times(files: list[Path]) -> dict[Path, float]:
    out = subprocess.run(["capinfos", "-a", "-T", "-r", "-S", *map(str, files)],
                         check=True, capture_output=True, text=True).stdout
    times = [float(line.split("\t")[-1]) for line in out.splitlines() if line.strip()]
    return dict(zip(files, times))


def merge(files: list[Path], out: Path) -> Path:
    subprocess.run(["mergecap", "-F", "pcapng", "-w", str(out), *map(str, files)], check=True)
    return out


def in_time_order(files: list[Path]) -> list[Path]:
    """The files ordered by their first packet (how their registrations appear in a merge)."""
    starts = first_packet_times(files)
    return sorted(files, key=lambda f: starts[f])
