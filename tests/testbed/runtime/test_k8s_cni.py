"""The CNI per network (K8S_CNI, testbed/runtime/k8s/networks.py `choice` and `crossings`): the
mixed form's attachments, the refusals before anything is written, the check against PLACEMENT,
what the plan says and what the record keeps."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed import placement
from testbed.contract import RuntimeOptionError
from testbed.render import Rendered
from testbed.runtime.k8s import cluster, networks, plugin as k8s_plugin, render as k8s_render
from tests.testbed.runtime.helpers import by_kind, objects, render_k8s

CATALOGUE = ("sbi", "n2", "n3", "n4", "n6", "ran", "db")
MIXED = {"K8S_CNI": "bridge n2:macvlan n3:macvlan", "K8S_MASTER": "eth1"}
# docs/kubernetes.md "Networks": the core and the UPF on node-a, the gNB and the UEs on node-b
APART = "*:node-a gnb:node-b ue1:node-b ue2:node-b ue-scale:node-b"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return render_k8s("baseline", "n3", tmp_path_factory.mktemp("cni") / "r", place=APART, options=MIXED)


def _plugin(r: Rendered, net: str) -> dict[str, Any]:
    conf = json.loads(by_kind(objects(r), "NetworkAttachmentDefinition")[f"g5tb-{net}"]["spec"]["config"])
    plugin: dict[str, Any] = conf["plugins"][0]
    return plugin


def test_one_word_is_every_network_and_pairs_override_it() -> None:
    assert networks.choice("", "", CATALOGUE) == dict.fromkeys(CATALOGUE, "bridge")
    assert networks.choice("macvlan", "eth1", CATALOGUE) == dict.fromkeys(CATALOGUE, "macvlan")
    got = networks.choice("bridge n2:macvlan, n3:macvlan", "eth1", CATALOGUE)
    assert got == {**dict.fromkeys(CATALOGUE, "bridge"), "n2": "macvlan", "n3": "macvlan"}
    assert networks.choice("macvlan n6:bridge", "eth1", CATALOGUE)["n6"] == "bridge"
    assert networks.choice("n3:macvlan", "eth1", CATALOGUE)["n6"] == "bridge"      # no default: bridge


@pytest.mark.parametrize(("option", "master", "message"), [
    ("calico", "", r"K8S_CNI=calico: 'calico' is not a CNI \(bridge, macvlan\)"),
    ("bridge n3:calico", "eth1", r"'n3:calico': 'calico' is not a CNI"),
    ("bridge n9:macvlan", "eth1", r"'n9:macvlan': 'n9' is not a network \(sbi, n2"),
    ("bridge macvlan", "eth1", r"'macvlan': a second default"),
    ("n3:macvlan n3:bridge", "eth1", r"'n3:bridge': n3 given twice"),
    ("bridge n3:macvlan", "", r"macvlan \(n3\) needs K8S_MASTER"),
    ("macvlan", " ", r"macvlan \(every network\) needs K8S_MASTER"),
])
def test_a_bad_word_is_refused_naming_it(option: str, master: str, message: str) -> None:
    with pytest.raises(RuntimeOptionError, match=message):
        networks.choice(option, master, CATALOGUE)


def test_every_bad_word_at_once() -> None:
    with pytest.raises(RuntimeOptionError, match=r"'n9:bridge'.*'n3:calico'"):
        networks.choice("bridge n9:bridge n3:calico", "eth1", CATALOGUE)


def test_the_mixed_form_crosses_n3_on_the_master_and_keeps_n6_the_hosts_bridge(mixed: Rendered) -> None:
    n3, n2, n6 = _plugin(mixed, "n3"), _plugin(mixed, "n2"), _plugin(mixed, "n6")
    assert n3["type"] == n2["type"] == "macvlan" and n3["master"] == n2["master"] == "eth1"
    assert "isGateway" not in n3
    # n6 stays the node's bridge holding the gateway address: the UE's ping target (the host)
    assert n6["type"] == "bridge" and n6["isGateway"] is True and n6["bridge"] == "g5tb-n6"
    assert _plugin(mixed, "sbi")["type"] == _plugin(mixed, "ran")["type"] == "bridge"
    recorded = yaml.safe_load((mixed.dir / k8s_render.NETWORKS).read_text())
    assert recorded["cni"] == {"db": "bridge", "n2": "macvlan", "n3": "macvlan", "n4": "bridge", "n6": "bridge",
                               "ran": "bridge", "sbi": "bridge"}
    assert recorded["master"] == "eth1" and recorded["warnings"] == []


def test_the_plan_names_each_cni_and_its_networks(mixed: Rendered) -> None:
    lines = k8s_plugin.Kubernetes().plan(mixed, placement.parse(APART), MIXED)
    nets, = [line for line in lines if line.startswith("networks")]
    assert "bridge: db n4 n6 ran sbi; macvlan on eth1: n2 n3" in nets
    assert not [line for line in lines if line.startswith("warning")]


def test_bad_cni_options_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    for opts, what in (({"K8S_CNI": "bridge n3:calico", "K8S_MASTER": "eth1"}, "n3:calico"),
                       ({"K8S_CNI": "bridge x2:macvlan", "K8S_MASTER": "eth1"}, "'x2' is not a network"),
                       ({"K8S_CNI": "bridge n3:macvlan"}, "K8S_MASTER")):
        with pytest.raises(RuntimeOptionError, match=what):
            render_k8s("baseline", "n3", tmp_path / "r", options=opts)
        assert not (tmp_path / "r").exists()


def test_a_bridge_whose_pods_are_placed_on_two_nodes_is_refused_naming_them(tmp_path: Path) -> None:
    with pytest.raises(RuntimeOptionError, match=r"n3 is a node-local bridge but gnb is placed on node-b and upf on node-c"):
        render_k8s("baseline", "n3", tmp_path / "r", place="upf:node-c gnb:node-b")
    assert not (tmp_path / "r" / k8s_render.OBJECTS).exists()
    # n2 stays a bridge while the AMF (node-a) and the gNB (node-b) are apart
    with pytest.raises(RuntimeOptionError, match=r"n2 is a node-local bridge but amf is placed on node-a and gnb on node-b"):
        render_k8s("baseline", "n3", tmp_path / "s", place=APART,
                   options={"K8S_CNI": "bridge n3:macvlan", "K8S_MASTER": "eth1"})


def test_pods_that_may_land_apart_on_a_bridge_are_warned_of_in_the_plan(tmp_path: Path) -> None:
    r = render_k8s("baseline", "n3", tmp_path / "r", place="upf:node-a gnb:site=ran", options=MIXED)
    lines = k8s_plugin.Kubernetes().plan(r, placement.parse("upf:node-a gnb:site=ran"), MIXED)
    warned = [line for line in lines if line.startswith("warning")]
    assert any("n4 is a node-local bridge" in w and "smf on any node, upf on node-a" in w for w in warned)
    assert any(w.startswith("warning   ran is a node-local bridge") for w in warned)


def test_crossings_warn_of_n6_on_macvlan() -> None:
    refusals, warnings = networks.crossings({"n6": {"upf": "a", "dn": None}}, {"n6": "macvlan"})
    assert refusals == [] and len(warnings) == 1 and "UE's ping target" in warnings[0]
    assert networks.crossings({"n6": {"upf": "a", "dn": "a"}}, {"n6": "bridge"}) == ([], [])


def test_the_record_keeps_the_cni_and_the_placement_key_names_what_crossed() -> None:
    rec = cluster.record({"items": []}, {"items": []}, {}, {}, {"n3": "macvlan", "n6": "bridge"})
    assert rec["networks"] == {"n3": "macvlan", "n6": "bridge"}
    nodes = {"a": {"pods": ["upf"], "cpu_model": "X", "kernel": "6.12"}}
    assert placement.key({"nodes": nodes, "networks": {"n2": "macvlan", "n3": "macvlan", "n6": "bridge"}}) \
        == "upf @ X, 6.12; macvlan n2,n3"
    # all bridges: the key of a record from before the CNI was recorded
    assert placement.key({"nodes": nodes, "networks": {"n6": "bridge"}}) == placement.key({"nodes": nodes})


@pytest.mark.parametrize(("cni", "master", "bridged"), [
    ("", "", True), ("macvlan", "eth1", False), ("bridge n3:macvlan", "eth1", True),
    ("macvlan n6:bridge", "eth1", True), ("macvlan", "", True)])     # refused by the boot's render: warned
def test_the_sharded_dry_run_warns_while_any_network_is_a_bridge(cni: str, master: str, bridged: bool,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from testbed.cli import campaign_k8s
    monkeypatch.setenv("K8S_CNI", cni)
    monkeypatch.setenv("K8S_MASTER", master)
    assert campaign_k8s._bridged() is bridged


def test_a_missing_master_is_named_beside_the_other_bad_words() -> None:
    with pytest.raises(RuntimeOptionError, match=r"'n9' is not a network.*; macvlan \(every network\) needs K8S_MASTER"):
        networks.choice("macvlan n9:bridge", "", CATALOGUE)
