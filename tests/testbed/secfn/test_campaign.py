"""Campaigns over SECFN x IDS (testbed/campaign.py, scripts/campaign.sh): units behind one N3
profile, seeded order per block, resume from the runs' manifests, the plan printed by DRY_RUN."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from testbed import campaign, manifest, profiles, secfn
from tests.conftest import ROOT


def test_every_unit_once_per_block_behind_the_n3_profile(tmp_path: Path) -> None:
    slots = campaign.plan(tmp_path, "c", "secfn-lab", reps=2, seed=3, n3_profile="aes128gcm")
    assert len(slots) == 2 * len(secfn.all_units())
    for rep in (1, 2):
        assert sorted(s.profile for s in slots if s.rep == rep) == sorted(f"aes128gcm.{u}" for u in secfn.all_units())
    assert [s.id for s in slots] == [s.id for s in campaign.plan(tmp_path, "c", "secfn-lab", 2, 3,
                                                                 n3_profile="aes128gcm")]
    with pytest.raises(profiles.ProfileError, match="unknown configuration"):
        campaign.plan(tmp_path, "c", "secfn", 1, 1, ["ips-nat-zeek"])


def test_resume_skips_a_complete_valid_unit(tmp_path: Path) -> None:
    sid = "secfn-lab.baseline.nat-none.r01"
    run = manifest.create(tmp_path, "secfn-lab", "baseline", {"CAMPAIGN": "c", "SLOT": sid, "SECFN": "nat"})
    manifest.set_validity(run, True, 0, 0, "ok")
    manifest.finish(run, "complete")
    status = {s.id: s.status for s in campaign.plan(tmp_path, "c", "secfn-lab", 1, 1, ["nat-none", "ips-nat-snort"])}
    assert status == {sid: "done", "secfn-lab.baseline.ips-nat-snort.r01": "todo"}


def test_dry_run_prints_the_plan(tmp_path: Path) -> None:
    env = {**os.environ, "DRY_RUN": "1", "RESULTS": str(tmp_path), "PROFILE": "wireguard",
           "PROFILES": "ids-nat-snort ips-nat-passthrough"}
    res = subprocess.run(["bash", str(ROOT / "scripts" / "campaign.sh"), "secfn-lab", "--campaign", "x", "--boots", "2"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert "4 slots, 4 to run" in res.stdout and "wireguard.ips-nat-passthrough" in res.stdout
