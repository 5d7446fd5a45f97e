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
