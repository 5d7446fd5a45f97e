"""analysis/parse/ping.py on real ping output (the real program on loopback) and edge cases."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from analysis.parse.ping import COLUMNS, parse_ping, parse_ping_text, rtt_samples
from tests.conftest import require_tools

D_OUTPUT = """PING 10.45.0.1 (10.45.0.1) 64(92) bytes of data.
[1763770000.100000] 72 bytes from 10.45.0.1: icmp_seq=1 ttl=64 time=0.512 ms
[1763770000.300000] 72 bytes from 10.45.0.1: icmp_seq=2 ttl=64 time=0.498 ms
[1763770000.700000] 72 bytes from 10.45.0.1: icmp_seq=4 ttl=64 time=10.9 ms
[1763770000.700100] 72 bytes from 10.45.0.1: icmp_seq=4 ttl=64 time=11.0 ms (DUP!)

--- 10.45.0.1 ping statistics ---
6 packets transmitted, 3 received, +1 duplicates, 50% packet loss, time 1000ms
rtt min/avg/max/mdev = 0.498/3.970/10.900/4.900 ms
"""


def test_real_ping_output_with_timestamps(tmp_path):
    require_tools("ping")
    env = {**os.environ, "LC_ALL": "C"}
    proc = subprocess.run(["ping", "-D", "-n", "-c", "5", "-i", "0.2", "-s", "64", "127.0.0.1"],
                          capture_output=True, text=True, env=env, timeout=30)
    if proc.returncode != 0:
        pytest.skip(f"ping on loopback not permitted here: {proc.stderr.strip()}")
    (tmp_path / "ping.txt").write_text(proc.stdout)
    frame = parse_ping(tmp_path / "ping.txt")
    assert list(frame.columns) == COLUMNS
    assert frame["seq"].tolist() == [1, 2, 3, 4, 5]
    assert not frame["lost"].any()
    assert (frame["bytes"] == 72).all()
    assert frame["timestamp"].is_monotonic_increasing and frame["timestamp"].min() > 1.6e9
    # the RTTs are exactly the printed ones
    printed = [float(x.split("time=")[1].split()[0]) for x in proc.stdout.splitlines() if "time=" in x]
    assert frame["rtt_ms"].tolist() == printed


def test_losses_are_sequence_gaps_and_tail_and_duplicates_are_flagged():
    frame = parse_ping_text(D_OUTPUT)
    assert frame["seq"].tolist() == [1, 2, 3, 4, 4, 5, 6]
    assert frame.loc[frame["lost"], "seq"].tolist() == [3, 5, 6]      # gap + the 2 never answered
    assert frame["dup"].sum() == 1
    assert rtt_samples(frame).tolist() == [0.512, 0.498, 10.9]          # DUP! not a sample
    assert np.isnan(frame.loc[frame["lost"], "rtt_ms"]).all()


def test_plain_ping_without_timestamps():
    text = "\n".join(line.split("] ", 1)[1] if line.startswith("[") else line for line in D_OUTPUT.splitlines())
    frame = parse_ping_text(text)
    assert frame["timestamp"].isna().all()
    assert rtt_samples(frame).tolist() == [0.512, 0.498, 10.9]


def test_truncated_output_without_summary_counts_only_gaps():
    head = D_OUTPUT.split("\n\n")[0].splitlines()[:4]            # up to seq 4, no DUP, no summary
    frame = parse_ping_text("\n".join(head) + "\n[1763770000.9] 72 bytes from 10.45")  # torn last line
    assert frame["seq"].tolist() == [1, 2, 3, 4]
    assert frame.loc[frame["lost"], "seq"].tolist() == [3]


def test_sequence_wraparound_is_undone():
    seqs = list(range(1, 65536)) + [0, 1, 2]          # icmp_seq is 16 bits: 65535 -> 0
    lines = [f"64 bytes from 10.0.0.1: icmp_seq={s} ttl=64 time=1.0 ms" for s in seqs]
    frame = parse_ping_text("\n".join(lines))
    assert frame["seq"].tolist()[-4:] == [65535, 65536, 65537, 65538]
    assert len(frame) == len(seqs) and not frame["lost"].any()


def test_empty_and_unrelated_input_give_an_empty_frame():
    assert parse_ping_text("").empty
    assert parse_ping_text("ping: connect: Network is unreachable\n").empty


UNREACHABLE = """PING 10.45.0.1 (10.45.0.1) 56(84) bytes of data.
64 bytes from 10.45.0.1: icmp_seq=1 ttl=64 time=0.040 ms
From 10.45.0.9 icmp_seq=2 Destination Host Unreachable
64 bytes from 10.45.0.1: icmp_seq=3 ttl=64 time=0.041 ms

--- 10.45.0.1 ping statistics ---
3 packets transmitted, 2 received, +1 errors, 33.3333% packet loss, time 2003ms
"""
MIXED = "[1.5] 64 bytes from a: icmp_seq=1 ttl=1 time=1 ms\n64 bytes from a: icmp_seq=2 ttl=1 time=2 ms\n"
TRUNCATED = "64 bytes from a: icmp_seq=1 ttl=1 time=1 ms\n64 bytes from a: icmp_seq=2 ttl=1 (truncated)\n"
NAMES = "64 bytes from localhost (127.0.0.1): icmp_seq=1 ttl=64 time=0.05 ms\n"   # ping without -n


@pytest.mark.parametrize("text", [D_OUTPUT, UNREACHABLE, MIXED, TRUNCATED, NAMES, "",
                                  "\n".join(ln.split("] ", 1)[-1] for ln in D_OUTPUT.splitlines())],
                         ids=["dup-and-gaps", "unreachable", "mixed-stamps", "truncated", "names", "empty", "plain"])
def test_fast_path_equals_regex_path(text):
    assert parse_ping_text(text).equals(parse_ping_text(text, fast=False))
    assert len(parse_ping_text(text)) == len(parse_ping_text(text, fast=False)) >= (1 if text else 0)


def test_fast_path_on_real_rwth_values(shared):
    from analysis.bench import build_ping_text
    text = build_ping_text(shared / "rwth-internal-ran-security" / "f1u-ping" / "noenc_2025-08-20-T02-45-02.txt", 20000)
    fast = parse_ping_text(text)
    assert fast.equals(parse_ping_text(text, fast=False))
    assert len(fast) == 20000 and not fast["lost"].any()


def test_unreachable_counts_as_lost():
    frame = parse_ping_text(UNREACHABLE)
    assert frame.loc[frame["lost"], "seq"].tolist() == [2]
    assert rtt_samples(frame).tolist() == [0.040, 0.041]
