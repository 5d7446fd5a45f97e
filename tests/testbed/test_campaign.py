"""testbed/campaign.py: deterministic slots, seeded shuffle, resume status from manifests."""
from __future__ import annotations

from pathlib import Path

import pytest

from testbed import campaign, manifest, profiles


def test_every_profile_of_the_plane_once_per_repetition(tmp_path: Path) -> None:
    slots = campaign.plan(tmp_path, "c", "n3", reps=2, seed=1)
    n3 = profiles.names("n3")
    assert "baseline" in n3
    assert len(slots) == 2 * len(n3)
    for rep in (1, 2):
        assert sorted(s.profile for s in slots if s.rep == rep) == sorted(n3)
    assert [s.rep for s in slots] == sorted(s.rep for s in slots), "repetition by repetition"
    assert {s.status for s in slots} == {"todo"}
    assert slots[0].id == f"n3.{slots[0].profile}.r01"


def test_order_is_shuffled_but_reproducible(tmp_path: Path) -> None:
    a = [s.id for s in campaign.plan(tmp_path, "c", "sbi", 1, seed=5)]
    b = [s.id for s in campaign.plan(tmp_path, "c", "sbi", 1, seed=5)]
    c = [s.id for s in campaign.plan(tmp_path, "c", "sbi", 1, seed=6)]
    assert a == b and a != c
    assert a != [f"sbi.{p}.r01" for p in profiles.names("sbi")]


def test_requested_profiles_are_checked(tmp_path: Path) -> None:
    with pytest.raises(profiles.ProfileError, match="cannot run on the n3 plane"):
        campaign.plan(tmp_path, "c", "overlay", 1, 1, ["baseline", "tls13-aes128gcm"])


def _run_for(results: Path, slot: str, profile: str, state: str, valid: bool | None) -> Path:
    run = manifest.create(results, "overlay", profile, {"CAMPAIGN": "c", "SLOT": slot},
                          datapath_facts={})
    if state != "running":
        manifest.finish(run, state)
    if valid is not None:
        manifest.set_validity(run, valid, 0, 1, "test")
    return run


def test_resume_status(tmp_path: Path) -> None:
    _run_for(tmp_path, "overlay.baseline.r01", "baseline", "complete", True)
    _run_for(tmp_path, "overlay.baseline.r02", "baseline", "interrupted", None)
    _run_for(tmp_path, "overlay.wireguard.r01", "wireguard", "complete", False)    # invalid: redo
    status = {s.id: s.status for s in campaign.plan(tmp_path, "c", "overlay", 2, 1, ["baseline", "wireguard"])}
    assert status == {"overlay.baseline.r01": "done", "overlay.baseline.r02": "redo",
                      "overlay.wireguard.r01": "redo", "overlay.wireguard.r02": "todo"}


def test_record_plan_never_overwrites(tmp_path: Path) -> None:
    slots = campaign.plan(tmp_path, "c", "overlay", 1, 1, ["baseline"])
    a = campaign.record_plan(tmp_path, "c", "overlay", 1, 1, slots, {})
    b = campaign.record_plan(tmp_path, "c", "overlay", 1, 1, slots, {})
    assert a != b and a.is_file() and b.is_file()


def test_a_campaign_on_other_planes_has_its_own_slots(tmp_path) -> None:
    from testbed import campaign
    slots = campaign.plan(tmp_path, "c", "sbi", 1, 1, plane="n2,n4")
    assert {s.profile for s in slots} >= {"baseline", "aes128gcm-psk", "wireguard"}
    assert not any(s.profile.startswith("tls") or s.profile.endswith("-trap") for s in slots)
    assert all(s.id == f"sbi.{s.profile}@n2+n4.r01" for s in slots)
    assert campaign.plan(tmp_path, "c", "sbi", 1, 1)[0].id.count("@") == 0


def _timed(results: Path, slot: str, profile: str, minutes: float) -> None:
    import json
    run = _run_for(results, slot, profile, "complete", True)
    m = json.loads((run / "manifest.json").read_text())
    m["started"], m["finished"] = "2026-11-27T10:00:00Z", f"2026-11-27T10:{int(minutes):02d}:00Z"
    (run / "manifest.json").write_text(json.dumps(m))


def test_the_eta_times_each_slot_by_its_profiles_runs(tmp_path: Path) -> None:
    """Issue 22 point 10: DRY_RUN=1 says how long the campaign takes, from the runs present."""
    slots = campaign.plan(tmp_path, "c", "overlay", 3, 1, ["baseline", "wireguard"])
    assert campaign.eta(tmp_path, "overlay", slots).startswith("ETA: unknown: no complete overlay run")
    _timed(tmp_path, "overlay.baseline.r01", "baseline", 2)
    _timed(tmp_path, "overlay.wireguard.r01", "wireguard", 10)
    slots = campaign.plan(tmp_path, "c", "overlay", 3, 1, ["baseline", "wireguard"])
    # 2 baseline slots x 2 min + 2 wireguard slots x 10 min
    assert campaign.eta(tmp_path, "overlay", slots).startswith("ETA: 0h24m for 4 slot(s) to run")
    slots = campaign.plan(tmp_path, "c", "overlay", 1, 1, ["baseline", "wireguard", "aes128gcm"])
    text = campaign.eta(tmp_path, "overlay", slots)
    assert text.startswith("ETA: 0h06m for 1 slot(s)") and "by the experiment's median 0h06m" in text


def test_campaign_dry_run_prints_the_eta(tmp_path: Path) -> None:
    import os
    import subprocess
    from testbed import ROOT
    _timed(tmp_path, "overlay.baseline.r01", "baseline", 3)
    env = {**os.environ, "RESULTS": str(tmp_path), "CAMPAIGN": "c", "DRY_RUN": "1", "PROFILES": "baseline"}
    res = subprocess.run(["bash", str(ROOT / "scripts" / "campaign.sh"), "overlay", "--boots", "3"], cwd=ROOT,
                         env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert "ETA: 0h06m for 2 slot(s) to run" in res.stdout
