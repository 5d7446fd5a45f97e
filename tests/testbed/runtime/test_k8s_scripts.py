"""The Kubernetes runtime's scripts without a cluster: make doctor ENGINE=k8s and k8s-up/down say
what is missing (kubectl, the cluster, the render) and start nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, require_tools
from tests.testbed.runtime.helpers import render_k8s

K8S_SH = ROOT / "testbed" / "runtime" / "k8s" / "k8s.sh"


def _run(cmd: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "PYTHON": sys.executable, **env})


def test_doctor_without_kubectl_names_it_and_checks_nothing_else() -> None:
    res = _run(["bash", "scripts/doctor.sh"], ENGINE="k8s", KUBECTL="kubectl-absent-here")
    assert res.returncode == 1
    assert "[FAIL] kubectl (kubectl-absent-here): not found on PATH" in res.stdout
    assert "nothing was checked or started" in res.stdout and "Docker" not in res.stdout


def test_doctor_refuses_an_unknown_engine() -> None:
    res = _run(["bash", "scripts/doctor.sh"], ENGINE="nomad")
    assert res.returncode == 2 and "ENGINE=nomad: not a runtime" in res.stderr


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_k8s("baseline", "n3", tmp_path_factory.mktemp("k8s") / "r").dir


def test_up_without_kubectl_starts_nothing(rendered: Path) -> None:
    res = _run(["bash", str(K8S_SH), "up", str(rendered)], KUBECTL="kubectl-absent-here")
    assert res.returncode == 1
    assert "kubectl (kubectl-absent-here) not found on PATH" in res.stderr and "nothing was started" in res.stderr
    res = _run(["bash", str(K8S_SH), "down", "g5tb"], KUBECTL="kubectl-absent-here")
    assert res.returncode == 1 and "not found on PATH" in res.stderr


def test_up_applies_nothing_when_the_cluster_does_not_answer(rendered: Path, tmp_path: Path) -> None:
    """A kubectl that records its calls and finds no cluster: the preflight stops k8s-up before
    any apply."""
    calls = tmp_path / "calls"
    fake = tmp_path / "kubectl"
    fake.write_text(f'#!/usr/bin/env bash\necho "$*" >>"{calls}"\necho "connection refused" >&2\nexit 1\n')
    fake.chmod(0o755)
    res = _run(["bash", str(K8S_SH), "up", str(rendered)], KUBECTL=str(fake))
    assert res.returncode == 1 and "no cluster answers" in res.stderr
    assert calls.read_text().splitlines() == ["get --raw=/readyz --request-timeout=10s"]


def test_up_wants_a_render_and_usage_is_a_usage_error(tmp_path: Path) -> None:
    res = _run(["bash", str(K8S_SH), "up", str(tmp_path)])
    assert res.returncode == 1 and "render first" in res.stderr
    assert _run(["bash", str(K8S_SH), "bogus"]).returncode == 2


def test_the_scripts_are_shellcheck_clean() -> None:
    require_tools("shellcheck")
    res = subprocess.run(["shellcheck", "-x", str(K8S_SH), str(K8S_SH.parent / "doctor.sh")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout


FAKE_CLUSTER = '''#!{python}
"""kubectl as a one-node cluster with Multus would answer k8s-up: every call logged, applied
objects logged as kind/name, every wait met at once."""
import json, sys
import yaml
args = sys.argv[1:]
log = open({calls!r}, "a")
log.write("kubectl " + " ".join(args) + "\\n")
if args[:1] == ["apply"]:
    for o in yaml.safe_load_all(sys.stdin.read()):
        if o:
            log.write(f"applied {{o['kind']}}/{{o['metadata']['name']}}\\n")
elif args[:1] == ["version"]:
    print(json.dumps({{"serverVersion": {{"major": "1", "minor": "34"}}}}))
elif args[:2] == ["get", "nodes"]:
    print(json.dumps({{"items": [{{"metadata": {{"name": "kind", "labels": {{}}}},
                                 "status": {{"conditions": [{{"type": "Ready", "status": "True"}}],
                                            "nodeInfo": {{"kernelVersion": "6.12.57"}}}}}}]}}))
elif args[:2] == ["get", "namespace"]:
    sys.exit(1)                                       # no stack up yet
elif args[:1] == ["get"] and "pods" in args:
    print(json.dumps({{"items": [{{"metadata": {{"name": "upf", "annotations": {{}}}},
                                 "spec": {{"nodeName": "kind", "containers": [{{"name": "upf"}}]}},
                                 "status": {{"phase": "Running", "podIP": "10.244.0.9"}}}}]}}))
elif args[:1] == ["exec"]:
    print("model name\\t: Test CPU")
'''


def test_up_applies_the_data_first_then_the_pods_wave_by_wave_and_records(tmp_path: Path) -> None:
    r = render_k8s("baseline", "n3", tmp_path / "r")
    calls = tmp_path / "calls"
    fake = tmp_path / "kubectl"
    fake.write_text(FAKE_CLUSTER.format(python=sys.executable, calls=str(calls)))
    fake.chmod(0o755)
    res = _run(["bash", str(K8S_SH), "up", str(r.dir)], KUBECTL=str(fake))
    assert res.returncode == 0, res.stderr
    lines = calls.read_text().splitlines()
    applied = [line.split()[1] for line in lines if line.startswith("applied ")]
    pods_at = [i for i, a in enumerate(applied) if a.startswith("Pod/")]
    assert applied[0] == "Namespace/g5tb" and min(pods_at) > max(i for i, a in enumerate(applied)
                                                                 if not a.startswith("Pod/"))
    order = [a.split("/")[1] for a in applied if a.startswith("Pod/")]
    waves = [[e.split("=")[0] for e in w.split()] for w in (r.dir / "k8s" / "waves.txt").read_text().splitlines()]
    assert order == [p for w in waves for p in w]
    # each pod applied after the waits for every pod of the wave before
    def at(prefix: str) -> int:
        return next(i for i, line in enumerate(lines) if line.startswith(prefix) or prefix in line)
    for before, wave in zip(waves, waves[1:]):
        last_wait = max(at(f" pod/{p} --timeout") for p in before)
        assert min(at(f"applied Pod/{p}") for p in wave) > last_wait, (before, wave)
    assert any("--for=condition=Ready pod/nrf " in line for line in lines)
    # no pod before the namespace's default service account exists (the API server refuses it)
    assert at("--for=create serviceaccount/default") < at("applied Pod/")
    assert any("--for=jsonpath={.status.phase}=Succeeded pod/provision " in line for line in lines)
    record = json.loads((r.dir / "k8s" / "placement-record.json").read_text())
    assert record["nodes"]["kind"]["cpu_model"] == "Test CPU" and record["pods"]["upf"]["node"] == "kind"


def test_the_compose_bring_up_refuses_another_engine(tmp_path: Path) -> None:
    """make up starts the Compose stack (scripts/up.sh; the drivers call it through the Compose
    runtime's driver library only): with ENGINE=k8s it stops (a stack must not land on Docker while
    its user asked for a cluster)."""
    res = _run(["bash", "scripts/up.sh", "--profile", "baseline"], ENGINE="k8s", STATE=str(tmp_path))
    assert res.returncode == 2 and "ENGINE=k8s: this starts the Docker Compose stack" in res.stderr
    assert "make k8s-up" in res.stderr and not (tmp_path / "stack.current").exists()
