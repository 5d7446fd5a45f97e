"""Host-wide CPU accounting (testbed/hostcpu.py) against a known busy loop in a namespace."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import hostcpu


def _snap(path: Path, label: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"{label} {time.time_ns()} {Path('/proc/stat').read_text().splitlines()[0]}\n")


def test_rows_from_constructed_snapshots(tmp_path: Path) -> None:
    hz = hostcpu.HZ
    f = tmp_path / "s.txt"
    # 2 s window with 3 s of busy CPU (two CPUs), idle window of 1 s with 0.25 s busy
    f.write_text(f"boot-start 0 cpu 0 0 0 0 0 0 0 0 0 0\n"
                 f"last-pdu 2000000000 cpu {2 * hz} 0 {hz // 2} 0 0 0 {hz // 2} 0 0 0\n"
                 f"idle-start 3000000000 cpu 0 0 0 0 0 0 0 0 0 0\n"
                 f"idle-end 4000000000 cpu {hz // 4} 0 0 0 0 0 0 0 0 0\n")
    rows = dict(hostcpu.rows(f))
    assert rows["host:busy"] == 3_000_000 and rows["host:softirq"] == 500_000
    assert rows["host:idle-busy"] == 500_000                  # 0.25 s per s, over the 2 s window
    assert rows["host:net"] == 2_500_000 and rows["host:wall"] == 2_000_000


def test_rows_sum_the_nodes_the_stack_ran_on(tmp_path: Path) -> None:
    """ENGINE=k8s: a line per node's kernel (testbed/runtime/k8s/cpu.py); a node counts when it has
    a last-pdu snapshot (a pod of the stack ran there at the last PDU session)."""
    hz = hostcpu.HZ
    f = tmp_path / "s.txt"
    lines = []
    for node, busy in (("node-a", hz), ("node-c", 2 * hz)):
        lines += [f"boot-start@{node} 0 cpu 0 0 0 0 0 0 0 0 0 0",
                  f"last-pdu@{node} 2000000000 cpu {busy} 0 0 0 0 0 0 0 0 0",
                  f"idle-start@{node} 3000000000 cpu 0 0 0 0 0 0 0 0 0 0",
                  f"idle-end@{node} 4000000000 cpu {hz // 4} 0 0 0 0 0 0 0 0 0"]
    lines.append("boot-start@node-z 0 cpu 0 0 0 0 0 0 0 0 0 0")      # no stack pod there: not counted
    f.write_text("\n".join(lines) + "\n")
    rows = dict(hostcpu.rows(f))
    assert rows["host:busy"] == 3_000_000 and rows["host:idle-busy"] == 1_000_000
    assert rows["host:net"] == 2_000_000 and rows["host:wall"] == 2_000_000


def test_missing_snapshot_is_named(tmp_path: Path) -> None:
    f = tmp_path / "s.txt"
    f.write_text("boot-start 0 cpu 0 0 0 0 0 0 0 0\n")
    with pytest.raises(hostcpu.HostCpuError, match="no 'last-pdu' snapshot"):
        hostcpu.rows(f)


def test_a_known_busy_loop_in_a_namespace_is_counted(tmp_path: Path) -> None:
    """A process in its own network namespace burns 1.5 s of CPU in a 2 s window; host-wide busy
    time over that window minus the idle windows' (the same length, before and after) is that
    1.5 s. The tolerance grows with the host's own background noise, read from how much the two
    idle windows differ (a shared CI host is never idle)."""
    if os.geteuid() != 0:
        pytest.skip("needs root (a network namespace for the busy loop)")
    ns = f"hostcpu-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    burn = ("import resource\n"
            "while resource.getrusage(resource.RUSAGE_SELF).ru_utime < 1.5:\n"
            "    for _ in range(200_000): pass\n")
    try:
        f = tmp_path / "s.txt"
        _snap(f, "idle-a-start")
        time.sleep(2.0)
        _snap(f, "idle-a-end")
        _snap(f, "boot-start")
        t0 = time.monotonic()
        subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", burn], check=True, timeout=60)
        time.sleep(max(0.0, 2.0 - (time.monotonic() - t0)))    # same window length as the idle ones
        _snap(f, "last-pdu")
        _snap(f, "idle-start")
        time.sleep(2.0)
        _snap(f, "idle-end")
        snaps = hostcpu.parse(f)
        a = hostcpu.window(snaps, "idle-a-start", "idle-a-end")["busy_s"]
        b = hostcpu.window(snaps, "idle-start", "idle-end")["busy_s"]
        w = hostcpu.window(snaps, "boot-start", "last-pdu")
        capacity = (os.cpu_count() or 1) * 2.0
        if min(a, b) > 0.75 * capacity:
            pytest.skip(f"host saturated by other work ({min(a, b):.2f} of {capacity:.0f} CPU-seconds busy while "
                        "idle): a busy loop cannot add CPU time to measure")
        net = w["busy_s"] - (a + b) / 2 * w["wall_s"] / 2.0
        noise = abs(a - b)
        assert abs(net - 1.5) <= 0.4 + 2 * noise, (net, a, b, w)
        assert w["user_s"] >= 1.5 - noise, w              # the loop's own user time is in the window
    finally:
        subprocess.run(["ip", "netns", "delete", ns], check=False)
