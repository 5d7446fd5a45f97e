"""README.md "How long the defaults take": its measured parts are the defaults' arithmetic
(testbed/runparams.py) and its profile counts the catalogue's, so the table cannot drift."""
from __future__ import annotations

from testbed import ROOT, profiles, runparams


def section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("## How long the defaults take", 1)[1].split("\n## ", 1)[0]


def test_measured_parts_follow_the_default_parameters() -> None:
    s = section()
    n3 = runparams.validate("n3", {})
    per_boot = (n3["warmup"] + len(n3["sizes"]) * n3["sets"] * n3["pings"]) * n3["interval"]
    assert f"{n3['boots']} x {per_boot:,.0f} s" in s
    ov = runparams.validate("overlay", {})
    per_boot = (ov["warmup"] + len(ov["sizes"]) * ov["sets"] * ov["pings"]) * ov["interval"]
    assert f"{ov['boots']} x {per_boot:.2f} s" in s
    tp = runparams.validate("throughput", {})
    assert f"{tp['boots']} x {len(tp['transports']) * tp['reps'] * tp['duration']} s" in s
    assert f"{runparams.validate('sbi', {})['iterations']} fresh cores" in s
    cpu = runparams.validate("cpu", {})
    assert f"{len(cpu['ues'])} UE counts x {cpu['reps']} reps = {len(cpu['ues']) * cpu['reps']} boots" in s


def test_campaign_profile_counts_are_the_catalogues() -> None:
    s = section()
    on = {plane: sum(plane in p.planes for p in profiles.load().values()) for plane in ("n3", "sbi")}
    assert f"`campaign-n3`: {on['n3']} profiles" in s and f"`campaign-overlay`: {on['n3']} profiles" in s
    assert f"`campaign-sbi`: {on['sbi']} profiles" in s
