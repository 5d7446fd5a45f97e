"""testbed/shards.py: a sharded campaign's node groups and its boots' assignment (pure)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed import campaign, manifest, shards
from testbed.placement import PlacementError, Target
from testbed.runtime.k8s import cluster
from tests.conftest import ROOT

NODES = cluster.nodes(json.loads((ROOT / "tests/data/k8s-cluster/nodes.json").read_text()))   # core, edge Ready; spare not


def _slots(n: int, done: tuple[int, ...] = ()) -> list[campaign.Slot]:
    return [campaign.Slot(f"n3.p{i}.r01", "n3", f"p{i}", 1, "done" if i in done else "todo", ()) for i in range(n)]


def _never_two_at_once(boots: list[shards.Boot]) -> None:
    for k in {b.shard for b in boots}:
        mine = sorted((b.start, b.end) for b in boots if b.shard == k)
        assert all(a[1] <= b[0] for a, b in zip(mine, mine[1:])), f"shard {k} runs two stacks at once: {mine}"


def test_equal_boots_go_round_the_shards_in_the_seeded_order() -> None:
    boots = shards.assign(_slots(7), 3, lambda s: 100.0)
    assert [b.slot.id for b in boots] == [s.id for s in _slots(7)]
    assert [b.shard for b in boots] == [1, 2, 3, 1, 2, 3, 1]
    assert [b.start for b in boots] == [0, 0, 0, 100, 100, 100, 200]
    assert max(b.end for b in boots) == 300
    _never_two_at_once(boots)


def test_the_shard_free_first_takes_the_next_boot_and_the_start_order_is_the_plan() -> None:
    lengths = {"p0": 500.0, "p1": 100.0, "p2": 100.0, "p3": 100.0, "p4": 50.0}
    boots = shards.assign(_slots(5), 2, lambda s: lengths[s.profile])
    assert [(b.slot.profile, b.shard, b.start) for b in boots] == [
        ("p0", 1, 0), ("p1", 2, 0), ("p2", 2, 100), ("p3", 2, 200), ("p4", 2, 300)]
    starts = [b.start for b in boots]
    assert starts == sorted(starts), "a boot never starts before one earlier in the seeded order"
    _never_two_at_once(boots)


def test_done_slots_are_skipped_and_one_shard_is_one_host() -> None:
    boots = shards.assign(_slots(5, done=(1, 3)), 1, lambda s: 10.0)
    assert [b.slot.profile for b in boots] == ["p0", "p2", "p4"] and boots[-1].end == 30


def test_resume_skips_the_slots_a_complete_valid_run_fills(tmp_path: Path) -> None:
    slots = campaign.plan(tmp_path, "c", "n3", 2, 7, ["baseline", "aes256gcm"])
    first = slots[0]
    run = manifest.create(tmp_path, "n3", first.profile, {"CAMPAIGN": "c", "SLOT": first.id}, datapath_facts={})
    manifest.finish(run, "complete")
    manifest.set_validity(run, True, 0, 1, "test")
    again = campaign.plan(tmp_path, "c", "n3", 2, 7, ["baseline", "aes256gcm"])
    assert [s.id for s in again] == [s.id for s in slots]
    boots = shards.assign(again, 2, lambda s: 1.0)
    assert first.id not in {b.slot.id for b in boots} and len(boots) == 3
    assert [b.slot.id for b in boots] == [s.id for s in slots[1:]]


def test_groups_from_the_cluster_every_ready_node_or_a_label() -> None:
    assert shards.derive_groups(NODES) == [Target(node="core"), Target(node="edge")]
    assert shards.derive_groups(NODES, "site") == [Target(label=("site", "core")), Target(label=("site", "edge"))]
    assert shards.group_problems(shards.derive_groups(NODES, "site"), NODES) == []


def test_unknown_unready_repeated_and_overlapping_groups_are_named() -> None:
    problems = shards.group_problems(shards.parse_groups("edge nowhere site=moon spare"), NODES)
    assert "node group nowhere: no node of that name (nodes: core, edge, spare)" in problems
    assert "node group site=moon: no node carries that label (nodes: core, edge, spare)" in problems
    assert "node group spare: spare not Ready" in problems
    assert shards.group_problems(shards.parse_groups("edge site=edge"), NODES) == [
        "node edge is in node groups edge and site=edge: two stacks would share it"]
    assert "node group core named twice" in shards.group_problems(shards.parse_groups("core core"), NODES)
    with pytest.raises(PlacementError, match="'Bad_Node' is not a node name"):
        shards.parse_groups("core Bad_Node")


def test_shards_never_more_than_the_groups_each_its_namespace() -> None:
    groups = shards.parse_groups("core edge")
    got = shards.shards("", groups)
    assert [(s.index, s.namespace, s.placement) for s in got] == [(1, "g5tb-s1", "*:core"), (2, "g5tb-s2", "*:edge")]
    assert [s.group for s in shards.shards("1", groups)] == [Target(node="core")]
    with pytest.raises(shards.ShardError, match=r"SHARDS=3 but only 2 node group\(s\) \(core edge\)"):
        shards.shards("3", groups)
    for bad in ("0", "two", "-1"):
        with pytest.raises(shards.ShardError, match="a whole number >= 1"):
            shards.shards(bad, groups)
    with pytest.raises(shards.ShardError, match="no node group"):
        shards.shards("1", [])
    with pytest.raises(shards.ShardError, match="g5tbtests-s2 is longer than 11"):
        shards.shards("", groups, "g5tbtests")


def test_estimates_by_profile_then_the_table(tmp_path: Path) -> None:
    seconds, how = shards.estimates(tmp_path, "n3")
    assert seconds(_slots(1)[0]) == pytest.approx(40 * 3600 / 85) and "README's table" in how
    run = manifest.create(tmp_path, "n3", "baseline", {"CAMPAIGN": "c", "SLOT": "n3.baseline.r01"}, datapath_facts={})
    m = manifest.load(run)
    m.update(state="complete", started="2026-11-29T08:00:00Z", finished="2026-11-29T08:10:00Z")
    manifest.write(run, m)
    seconds, how = shards.estimates(tmp_path, "n3")
    assert seconds(campaign.Slot("n3.baseline.r02", "n3", "baseline", 2, "todo", ())) == 600
    assert seconds(_slots(1)[0]) == 600 and "median complete run" in how     # the experiment's median
    assert shards.estimates(tmp_path, "cpu")[1].startswith("UNKNOWN")
