"""Reading a cluster (testbed/runtime/k8s/cluster.py) on canned kubectl answers: nodes, the
placement's targets, the kubelet's sysctls, kernel modules, CPU model, and the record a run's
manifest keeps (per node its name, kernel, CPU model; per pod the addresses N3 and N2 took)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from testbed import manifest
from testbed.runtime.k8s import cluster, networks, tool
from tests.testbed.runtime import k8s_schemas

DATA = Path(__file__).resolve().parents[2] / "data" / "k8s-cluster"


def _load(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def test_nodes_are_read_from_kubectl_get_nodes() -> None:
    found = cluster.nodes(_load("nodes.json"))
    assert [(n.name, n.ready, n.kernel) for n in found] == [("core", True, "6.12.57+deb13-amd64"),
                                                             ("edge", True, "6.12.57+deb13-amd64"),
                                                             ("spare", False, "6.1.0-41-amd64")]
    assert found[1].labels["site"] == "edge" and found[1].addresses["InternalIP"] == "192.168.122.12"


def test_the_placement_names_nodes_that_exist_and_are_ready() -> None:
    found = cluster.nodes(_load("nodes.json"))
    assert cluster.placement_problems({"upf": "edge", "gnb": "site=core"}, found) == []
    problems = cluster.placement_problems({"upf": "edg", "gnb": "site=moon", "amf": "spare"}, found)
    assert problems == ["amf:spare: spare not Ready",
                        "gnb:site=moon: no node carries that label (nodes: core, edge, spare)",
                        "upf:edg: no node of that name (nodes: core, edge, spare)"]


def test_a_bridge_whose_pods_may_land_on_different_nodes_is_named() -> None:
    """A node-local bridge holds together only pods on one node: unplaced pods on a cluster of two
    schedulable Ready nodes may not (the guest's run-sbi without PLACEMENT: the AMF on node-b never
    reached the NRF on node-a), pods all pinned to one node do; macvlan spans nodes; a node that is
    not Ready, cordoned or tainted NoSchedule takes no pod."""
    data = _load("nodes.json")
    found = cluster.nodes(data)
    loose = {"sbi": {"nrf": None, "amf": None}, "n3": {"upf": "core", "gnb": "core"}}
    assert cluster.bridge_problems(loose, {"sbi": "bridge", "n3": "bridge"}, found) == [
        'sbi is a node-local bridge and its pods may land on different nodes (core, edge), where they would '
        'not reach each other: PLACEMENT="*:<node>" keeps the stack on one node, or K8S_CNI="bridge '
        'sbi:macvlan" (with K8S_MASTER) spans them']
    assert cluster.bridge_problems(loose, {"sbi": "macvlan", "n3": "bridge"}, found) == []
    assert cluster.bridge_problems({"sbi": {"nrf": "core", "amf": "site=core"}}, {}, found) == []
    assert cluster.bridge_problems({"sbi": {"nrf": "core", "amf": "site=edge"}}, {}, found) != []
    for item in data["items"]:
        if item["metadata"]["name"] == "edge":
            item.setdefault("spec", {})["taints"] = [{"key": "node-role.kubernetes.io/control-plane",
                                                      "effect": "NoSchedule"}]
    tainted = cluster.nodes(data)
    assert [n.schedulable for n in tainted] == [True, False, True]
    assert cluster.bridge_problems(loose, {"sbi": "bridge"}, tainted) == []     # only core takes them


def test_versions_sysctls_modules_and_cpu() -> None:
    assert cluster.server_version({"serverVersion": {"major": "1", "minor": "34", "gitVersion": "v1.34.2"}}) == (1, 34)
    assert cluster.server_version({"serverVersion": {"major": "", "minor": "", "gitVersion": "v1.28.15+k3s1"}}) == (1, 28)
    assert cluster.server_version({}) is None
    configz = {"kubeletconfig": {"allowedUnsafeSysctls": ["net.ipv4.ip_forward"]}}
    assert cluster.unsafe_sysctls_allowed(configz) == {"net.ipv4.ip_forward"}
    assert cluster.modules("kernel 6.12\nmodule sctp yes\nmodule wireguard no\nnoise\n") == {"sctp": True, "wireguard": False}
    info = (DATA / "cpuinfo-edge.txt").read_text()
    assert cluster.cpu_model(info) == "AMD EPYC 7763 64-Core Processor"
    assert cluster.cpu_model("processor : 0\nBogoMIPS : 50.00\nModel : Raspberry Pi 4 Model B Rev 1.4\n") \
        == "Raspberry Pi 4 Model B Rev 1.4"


def test_the_record_names_each_node_and_the_addresses_n3_and_n2_took() -> None:
    rec = cluster.record(_load("nodes.json"), _load("pods.json"),
                         {"edge": (DATA / "cpuinfo-edge.txt").read_text()}, {"upf": "edge"})
    assert rec["requested"] == {"upf": "edge"}
    assert set(rec["nodes"]) == {"core", "edge"}                 # the nodes that ran a pod
    edge = rec["nodes"]["edge"]
    assert edge["kernel"] == "6.12.57+deb13-amd64" and edge["cpu_model"] == "AMD EPYC 7763 64-Core Processor"
    assert edge["pods"] == ["upf"] and edge["internal_ip"] == "192.168.122.12"
    assert rec["nodes"]["core"]["cpu_model"] == ""               # no cpuinfo read there: said as unknown
    assert rec["pods"]["upf"] == {"node": "edge", "addresses": {"n3": "10.160.3.7", "n4": "10.160.4.7",
                                                                "n6": "10.160.6.7", "pod": "10.244.1.9"}}
    assert rec["pods"]["gnb"]["addresses"]["n3"] == "10.160.3.50" and rec["pods"]["gnb"]["addresses"]["n2"] == "10.160.2.50"
    # the manifest takes it as its `placement` record
    schema = json.loads(manifest.SCHEMA_FILE.read_text())
    jsonschema.validate(rec, schema["properties"]["placement"])
    assert "placement" in manifest.SET_FIELDS


def test_the_record_is_written_when_a_nodes_exec_does_not_answer(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A loaded API server let the exec that reads a node's CPU model time out, and the guest's
    run-sbi lost its whole placement record so: now the node's next pod is asked, and a node no
    pod answers for keeps its name, pods and kernel with its CPU model unknown."""
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "objects.yaml").write_text("kind: Namespace\napiVersion: v1\nmetadata: {name: g5tb}\n")
    (tmp_path / "k8s" / "placement.yaml").write_text("'*': core\n")
    fake = tmp_path / "kubectl"
    fake.write_text(f'''#!/usr/bin/env bash
case "$*" in
  "get --raw=/readyz"*) ;;
  "get pods -n g5tb -o json") cat "{DATA}/pods.json" ;;
  "get nodes -o json") cat "{DATA}/nodes.json" ;;
  "exec -n g5tb gnb "*) sleep 10 ;;                                  # core's first pod: no answer
  "exec -n g5tb amf "*) cat "{DATA}/cpuinfo-edge.txt" ;;
  "exec -n g5tb upf "*) echo "Internal error occurred: Timeout occurred" >&2; exit 1 ;;
  *) exit 1 ;;
esac
''')
    fake.chmod(0o755)
    monkeypatch.setenv("KUBECTL", str(fake))
    monkeypatch.setattr(tool, "EXEC_SECONDS", 1.0)
    assert tool.record(tmp_path, None) == 0
    rec = json.loads((tmp_path / tool.RECORD).read_text())
    assert rec["nodes"]["core"]["cpu_model"] == "AMD EPYC 7763 64-Core Processor"   # asked in amf
    assert rec["nodes"]["edge"]["cpu_model"] == "" and rec["nodes"]["edge"]["pods"] == ["upf"]
    assert rec["nodes"]["edge"]["kernel"] == "6.12.57+deb13-amd64"


def test_pod_addresses_skip_the_default_network_and_ipv6() -> None:
    status = [{"name": "cbr0", "interface": "eth0", "ips": ["10.244.0.5"], "default": True},
              {"name": "g5tb/g5tb-n3", "interface": "n3", "ips": ["fd00::1", "10.160.3.50"]}]
    pod = {"metadata": {"annotations": {networks.STATUS_ANNOTATION: json.dumps(status)}}, "status": {}}
    assert cluster.pod_addresses(pod) == {"n3": "10.160.3.50"}


def test_the_node_info_pod_needs_no_privilege() -> None:
    pod = tool.node_info_pod("edge", "g5tb/tools:1", "g5tb-doctor-edge")
    c, = pod["spec"]["containers"]
    assert c["securityContext"] == {"capabilities": {"drop": ["ALL"]}, "allowPrivilegeEscalation": False}
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "edge"}
    assert k8s_schemas.errors(pod) == []
    assert all(f" {m} " in c["command"][2] or f" {m};" in c["command"][2] for m in cluster.MODULES)


def test_without_kubectl_the_tool_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KUBECTL", "kubectl-absent-here")
    assert tool.main(["preflight", str(tmp_path)]) == 1
    assert "kubectl not found" in capsys.readouterr().err
    with pytest.raises(cluster.ClusterError, match="kubectl not found"):
        cluster.Kubectl("kubectl-absent-here")
    assert tool.main(["doctor"]) == 1
    assert "kubectl not found" in capsys.readouterr().out


FAKE_KUBECTL = '''#!{python}
"""kubectl as a cluster of tests/data/k8s-cluster would answer (the doctor's questions only)."""
import json, sys
from pathlib import Path
data = Path({data!r})
args = sys.argv[1:]
with open({calls!r}, "a") as fh:
    fh.write(" ".join(args) + "\\n")
if args[:1] == ["get"] and args[1].startswith("--raw=/readyz"):
    print("ok")
elif args[:1] == ["version"]:
    print(json.dumps({{"serverVersion": {{"major": "1", "minor": "34", "gitVersion": "v1.34.2"}}}}))
elif args[:2] == ["get", "nodes"]:
    print((data / "nodes.json").read_text())
elif args[:2] == ["get", "crd"]:
    sys.exit("Error from server (NotFound)")
elif args[:2] == ["get", "--raw"] and args[2].endswith("/configz"):
    allowed = ["net.ipv4.ip_forward", "net.core.xfrm_larval_drop"] if "/core/" in args[2] else []
    print(json.dumps({{"kubeletconfig": {{"allowedUnsafeSysctls": allowed}}}}))
elif args[:2] == ["get", "pod"]:
    print("Succeeded", end="")
elif args[:1] == ["logs"]:
    print("kernel 6.12.57\\nmodule sctp yes\\nmodule tun yes\\nmodule esp4 yes\\nmodule xfrm_user yes\\n"
          "module wireguard yes\\nmodule macsec no")
'''


def test_the_doctor_reads_a_cluster_and_names_what_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    import sys
    calls = tmp_path / "calls"
    fake = tmp_path / "kubectl"
    fake.write_text(FAKE_KUBECTL.format(python=sys.executable, data=str(DATA), calls=str(calls)))
    fake.chmod(0o755)
    monkeypatch.setenv("KUBECTL", str(fake))
    monkeypatch.setenv("TOOLS_IMAGE", "g5tb/tools:test")
    assert tool.main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "[ ok ] Kubernetes version: 1.34" in out
    assert "[ ok ] node core: Ready, kernel 6.12.57+deb13-amd64, 4 CPUs, containerd://2.1.4" in out
    assert "[WARN] node spare: not Ready" in out
    assert "[WARN] Multus: no NetworkAttachmentDefinition CRD" in out
    assert "[ ok ] node core sysctls" in out
    assert "[FAIL] node edge sysctls: the kubelet does not allow net.ipv4.ip_forward, net.core.xfrm_larval_drop" in out
    assert "[ ok ] node edge sctp: present" in out and "[WARN] node edge macsec: missing" in out
    applied = [line for line in calls.read_text().splitlines() if line.startswith("apply")]
    assert len(applied) == 2                     # one node-info pod per Ready node, each deleted after
    assert sum(line.startswith("delete pod") for line in calls.read_text().splitlines()) == 4
