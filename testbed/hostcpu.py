"""Host-wide CPU time from /proc/stat snapshots (docs/experiments.md, "CPU time").

The container cgroups miss the kernel's share of an overlay: WireGuard's crypt workers, ESP in
softirq, xfrm and the network stack run in kernel threads and interrupt context, outside every
container. /proc/stat's aggregate `cpu` line counts all of it (user, nice, system, irq, softirq,
steal), so the busy time of a window is exactly what the whole host spent. An idle window of
the same length measured the same way (the stack down) is subtracted: what remains is what the
stack added.

Snapshot lines (written by the runtime's engine_cpu_read for scripts/run-cpu.sh, one per instant):
    <label>[@<node>] <unix time ns> cpu <user> <nice> <system> <idle> <iowait> <irq> <softirq> <steal> ...
"""
from __future__ import annotations

import os
from pathlib import Path

FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
BUSY = ("user", "nice", "system", "irq", "softirq", "steal")
HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class HostCpuError(ValueError):
    """A snapshot file lacks a label or a line is malformed; the message says which."""


def parse(path: Path) -> dict[str, tuple[int, dict[str, int]]]:
    """{label: (time_ns, {field: jiffies})}."""
    out = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 3 + len(FIELDS) or parts[2] != "cpu":
            raise HostCpuError(f"{path}:{n}: not '<label> <ns> cpu <jiffies...>': {line[:80]!r}")
        out[parts[0]] = (int(parts[1]), dict(zip(FIELDS, (int(x) for x in parts[3:3 + len(FIELDS)]))))
    return out


def window(snaps: dict[str, tuple[int, dict[str, int]]], start: str, end: str) -> dict[str, float]:
    """Seconds per field between two snapshots, plus busy_s and wall_s."""
    for label in (start, end):
        if label not in snaps:
            raise HostCpuError(f"no '{label}' snapshot (have: {', '.join(snaps) or 'none'})")
    (t0, a), (t1, b) = snaps[start], snaps[end]
    out = {f"{f}_s": (b[f] - a[f]) / HZ for f in FIELDS}
    out["busy_s"] = sum(out[f"{f}_s"] for f in BUSY)
    out["wall_s"] = (t1 - t0) / 1e9
    return out


def rows(path: Path) -> list[tuple[str, int]]:
    """(service, cpu_usec) rows for the CPU accounting CSV: host:<field> over the measured window
    (boot-start -> last-pdu), host:busy, host:idle-busy (the same length of idle, scaled to the
    window's wall time) and host:net = busy - idle-busy. Labels may name a node (`last-pdu@node-a`,
    ENGINE=k8s: testbed/runtime/k8s/cpu.py, one line per node's kernel): each node that has a
    last-pdu snapshot (one the stack ran on) is its own window, and the rows are their sums
    (host:wall the longest window)."""
    snaps = parse(path)
    nodes = sorted({label.partition("@")[2] for label in snaps if label.partition("@")[0] == "last-pdu"})
    if not nodes:
        raise HostCpuError(f"no 'last-pdu' snapshot (have: {', '.join(snaps) or 'none'})")
    busy = {f: 0.0 for f in BUSY}
    total = idle_total = wall = 0.0
    for node in nodes:
        at = f"@{node}" if node else ""
        w = window(snaps, f"boot-start{at}", f"last-pdu{at}")
        idle = window(snaps, f"idle-start{at}", f"idle-end{at}")
        for f in BUSY:
            busy[f] += w[f"{f}_s"]
        total += w["busy_s"]
        idle_total += idle["busy_s"] * (w["wall_s"] / idle["wall_s"]) if idle["wall_s"] > 0 else 0.0
        wall = max(wall, w["wall_s"])
    out = [(f"host:{f}", round(busy[f] * 1e6)) for f in BUSY]
    out += [("host:busy", round(total * 1e6)), ("host:idle-busy", round(idle_total * 1e6)),
            ("host:net", round((total - idle_total) * 1e6)), ("host:wall", round(wall * 1e6))]
    return out


def _main(argv: list[str]) -> int:
    import sys
    if len(argv) != 2 or argv[0] != "rows":
        print("usage: python -m testbed.hostcpu rows SNAPSHOTS", file=sys.stderr)
        return 2
    try:
        for service, usec in rows(Path(argv[1])):
            print(f"{service},{usec}")
    except (OSError, HostCpuError) as exc:
        print(f"hostcpu: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(_main(sys.argv[1:]))
