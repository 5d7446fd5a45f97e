"""make campaign-n3 ENGINE=k8s (python -m testbed campaign-k8s): the plan over node groups and its
DRY_RUN output, refusals before anything starts, and a run against a kubectl that plays the
canned cluster of tests/data/k8s-cluster (core and edge Ready, spare not) and records every call."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import campaign
from tests.conftest import ROOT
from tests.testbed.render.helpers import keys_root

NODES = ROOT / "tests" / "data" / "k8s-cluster" / "nodes.json"

FAKE_KUBECTL = r'''#!/usr/bin/env bash
# kubectl as the canned cluster would answer a sharded campaign: every call logged (what it applies
# as kind/name, namespace and nodeSelector), every wait met at once, no namespace there before it
# is made. Bash but for apply: a Python start per call is most of a boot's time here.
echo "kubectl $*" >>"{calls}"
case "$1 ${{2:-}}" in
  "apply "*) "{python}" -c 'import sys, yaml
for o in yaml.load_all(sys.stdin.read(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    if o:
        print("applied %s/%s in %s on %s" % (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace", "-"),
                                             (o.get("spec") or {{}}).get("nodeSelector")))' >>"{calls}" ;;
  "version "*) echo '{{"serverVersion": {{"major": "1", "minor": "34"}}}}' ;;
  "get nodes") cat "{nodes}" ;;
  "get namespace") exit 1 ;;
  "get pods") echo '{{"items": []}}' ;;
esac
exit 0
'''


FAKE_DRIVER = '''#!/usr/bin/env bash
# a driver that measures nothing: it records what it was given and fills its slot with a valid run
set -euo pipefail
echo "$SLOT $K8S_NAMESPACE $PLACEMENT $ENGINE $(basename "$K8S_RENDER_DIR")" >>"{drivers}"
"$PYTHON" -c 'import sys
from testbed import manifest
run = manifest.create(sys.argv[1], "n3", sys.argv[2], {{"CAMPAIGN": sys.argv[3], "SLOT": sys.argv[4]}}, datapath_facts={{}})
manifest.finish(run, "complete")
manifest.set_validity(run, True, 0, 1, "fake driver")' "$RESULTS" "$PROFILE" "$CAMPAIGN" "$SLOT"
'''


def _fake(tmp_path: Path) -> tuple[Path, Path]:
    calls = tmp_path / "calls"
    fake = tmp_path / "kubectl"
    fake.write_text(FAKE_KUBECTL.format(python=sys.executable, calls=str(calls), nodes=str(NODES)))
    fake.chmod(0o755)
    return fake, calls


def _campaign(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("SHARDS", "SHARD_GROUPS", "SHARD_LABEL", "PLACEMENT",
                                                             "DRY_RUN", "K8S_NAMESPACE")}
    return subprocess.run([sys.executable, "-m", "testbed", "campaign-k8s", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, env={**base, "PYTHON": sys.executable, **env})


def _args(results: Path, *more: str) -> list[str]:
    return ["n3", "--results", str(results), "--campaign", "c", "--reps", "2", "--seed", "3",
            "--profiles", "baseline aes256gcm", *more]


def test_dry_run_shows_each_boot_on_its_shard_in_the_seeded_order_and_the_eta(tmp_path: Path) -> None:
    fake, calls = _fake(tmp_path)
    res = _campaign(_args(tmp_path / "results", "--dry-run"), KUBECTL=str(fake))
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "2 shard(s)" in out
    assert re.search(r"s1 +node group core +namespace g5tb-s1 +nodes core\n", out)
    assert re.search(r"s2 +node group edge +namespace g5tb-s2 +nodes edge\n", out)      # spare: not Ready
    rows = [line.split() for line in out.splitlines() if re.match(r" +\d+ +n3\.", line)]
    order = [s.id for s in campaign.plan(tmp_path / "results", "c", "n3", 2, 3, ["baseline", "aes256gcm"])]
    assert [r[1] for r in rows] == order
    assert [r[5] for r in rows] == ["s1", "s2", "s1", "s2"]
    assert [r[6] for r in rows] == ["0h00m", "0h00m", "0h28m", "0h28m"]
    assert "4 slots, 4 to run, 0 done" in out
    assert "ETA: one host 1h52m; 2 shard(s) 0h56m (each boot 28 min, from the README's table" in out
    eta = _campaign(_args(tmp_path / "results", "--eta"), KUBECTL=str(fake))
    assert eta.returncode == 0 and eta.stdout.splitlines() == [out.splitlines()[-1]]
    logged = calls.read_text()
    assert "apply" not in logged and "create" not in logged and "delete" not in logged


def test_dry_run_without_a_cluster_plans_on_shards_alone(tmp_path: Path) -> None:
    res = subprocess.run(["bash", "scripts/campaign.sh", "n3"], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={**os.environ, "PYTHON": sys.executable, "ENGINE": "k8s", "DRY_RUN": "1", "SHARDS": "3",
                              "BOOTS": "1", "PROFILES": "baseline aes256gcm", "KUBECTL": "kubectl-absent-here",
                              "RESULTS": str(tmp_path / "r"), "STATE": str(tmp_path / "s")})
    assert res.returncode == 0, res.stderr
    assert "3 shard(s)" in res.stdout and "node group group-3" in res.stdout
    assert "not checked: kubectl not found on PATH" in res.stdout
    assert "ETA: one host 0h56m; 3 shard(s) 0h28m" in res.stdout
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(("more", "env", "message"), [
    (["--shards", "3"], {}, "SHARDS=3 but only 2 node group(s) (core edge): never two stacks on one node group"),
    (["--groups", "core moon"], {}, "node group moon: no node of that name (nodes: core, edge, spare)"),
    (["--groups", "core site=core"], {}, "node core is in node groups core and site=core"),
    (["--group-label", "site", "--shards", "3"], {}, "SHARDS=3 but only 2 node group(s) (site=core site=edge)"),
    ([], {"PLACEMENT": "upf:edge"}, "PLACEMENT= with a sharded campaign"),
    (["--driver", "/bin/true"], {"KUBECTL": "kubectl-absent-here"}, "kubectl not found on PATH"),
])
def test_bad_input_is_refused_before_anything_starts(tmp_path: Path, more: list[str], env: dict[str, str],
                                                     message: str) -> None:
    fake, calls = _fake(tmp_path)
    res = _campaign(_args(tmp_path / "results", "--driver", "/bin/true", *more), **{"KUBECTL": str(fake), **env})
    assert res.returncode == 2, res.stdout + res.stderr
    assert message in res.stderr and "nothing was started" in res.stderr
    assert not calls.exists() or "apply" not in calls.read_text()
    assert not (tmp_path / "results").exists()


def test_the_drivers_on_a_cluster_are_those_the_k8s_driver_library_runs() -> None:
    from testbed.cli import campaign_k8s
    assert campaign_k8s.DRIVERS_ON_K8S == {"n3", "sbi", "throughput", "cpu"} == set(campaign_k8s.EXPERIMENTS)


@pytest.mark.parametrize("experiment", ["throughput", "cpu"])
def test_throughput_and_cpu_campaigns_plan_on_the_shards(tmp_path: Path, experiment: str) -> None:
    """The drivers the k8s library runs since run-throughput and run-cpu do are planned as n3 is."""
    fake, calls = _fake(tmp_path)
    res = _campaign([experiment, "--results", str(tmp_path / "results"), "--campaign", "c", "--reps", "1",
                     "--seed", "3", "--profiles", "baseline aes256gcm", "--dry-run"], KUBECTL=str(fake))
    assert res.returncode == 0, res.stderr
    rows = [line.split() for line in res.stdout.splitlines() if re.match(rf" +\d+ +{experiment}\.", line)]
    assert sorted(r[5] for r in rows) == ["s1", "s2"] and "2 slots, 2 to run, 0 done" in res.stdout
    assert "apply" not in calls.read_text()


def test_a_campaign_of_a_driver_the_cluster_does_not_run_is_refused(tmp_path: Path) -> None:
    res = _campaign(["overlay", "--results", str(tmp_path / "results"), "--campaign", "c", "--dry-run", "--shards", "2"])
    assert res.returncode == 2
    assert "ENGINE=k8s campaigns run n3, sbi, cpu, throughput, not overlay" in res.stderr


OWN_STACK_DRIVER = '''#!/usr/bin/env bash
# the experiment's own driver as the runner starts it: it brings its stack up itself (here it
# records what it was given, and that no stack was brought up for it), then fills its slot
set -euo pipefail
echo "$SLOT $K8S_NAMESPACE $PLACEMENT $ENGINE ${{K8S_RENDER_DIR:-none}} $STATE" >>"{drivers}"
"$PYTHON" -c 'import sys
from testbed import manifest
run = manifest.create(sys.argv[1], "n3", sys.argv[2], {{"CAMPAIGN": sys.argv[3], "SLOT": sys.argv[4]}}, datapath_facts={{}})
manifest.finish(run, "complete")
manifest.set_validity(run, True, 0, 1, "fake driver")' "$RESULTS" "$PROFILE" "$CAMPAIGN" "$SLOT"
'''


def test_the_experiments_own_driver_brings_its_stack_up_in_its_shard_and_the_runner_deletes_it(tmp_path: Path) -> None:
    """make campaign-n3 ENGINE=k8s: the runner renders and applies nothing itself; each boot's driver
    gets ENGINE=k8s, its shard's namespace, placement and state, and the namespace is deleted after it."""
    from testbed import shardrun, shards
    from testbed.placement import Target
    fake, calls = _fake(tmp_path)
    drivers = tmp_path / "drivers"
    driver = tmp_path / "run-n3.sh"
    driver.write_text(OWN_STACK_DRIVER.format(drivers=str(drivers)))
    driver.chmod(0o755)
    results, state = tmp_path / "results", tmp_path / "state"
    (state / "keys").mkdir(parents=True)
    slots = campaign.plan(results, "c", "n3", 2, 3, ["baseline"])
    chosen = shards.shards("2", [Target(node="core"), Target(node="edge")], "g5tb")
    ctx = shardrun.Context("n3", "c", results, state, "0", 2, {}, driver, own_stack=True)
    os.environ["KUBECTL"] = str(fake)
    try:
        out = shardrun.Runner(ctx, chosen, slots).run()
    finally:
        del os.environ["KUBECTL"]
    assert (out.ran, out.failed, out.stop) == (2, 0, 0)
    lines = calls.read_text().splitlines()
    assert not any(line.startswith(("applied", "kubectl apply")) for line in lines)
    assert sorted(line.split()[3] for line in lines if line.startswith("kubectl delete namespace")) == ["g5tb-s1", "g5tb-s2"]
    ran = sorted(line.split() for line in drivers.read_text().splitlines())
    assert [r[1:5] for r in ran] == [["g5tb-s1", "*:core", "k8s", "none"], ["g5tb-s2", "*:edge", "k8s", "none"]]
    assert all(r[5].endswith(f"shards/s{r[1][-1]}") for r in ran)
    assert len(list(results.glob("c/n3/baseline/*/manifest.json"))) == 2


def test_two_shards_boot_a_fresh_stack_per_slot_in_their_namespaces_into_one_results_tree(tmp_path: Path) -> None:
    """Three boots of one profile on two shards (core, edge): every boot renders and brings up a
    stack in its shard's namespace with every pod on its node group, runs the driver, and
    deletes the namespace before that shard's next boot; the runs land in one results tree."""
    fake, calls = _fake(tmp_path)
    drivers = tmp_path / "drivers"
    driver = tmp_path / "driver.sh"
    driver.write_text(FAKE_DRIVER.format(drivers=str(drivers)))
    driver.chmod(0o755)
    results = tmp_path / "results"
    state = keys_root().parent
    args = ["n3", "--results", str(results), "--campaign", "c", "--reps", "3", "--seed", "3", "--profiles", "baseline",
            "--driver", str(driver), "--state", str(state)]
    res = _campaign(args, KUBECTL=str(fake))
    assert res.returncode == 0, res.stderr + "".join(p.read_text() for p in (results / "c" / "shards").glob("*.log"))
    lines = calls.read_text().splitlines()
    made = [line.split()[1].split("/")[1] for line in lines if line.startswith("applied Namespace/")]
    deleted = [line.split()[3] for line in lines if line.startswith("kubectl delete namespace")]
    assert len(made) == 3 and set(made) == {"g5tb-s1", "g5tb-s2"} and sorted(deleted) == sorted(made)
    for ns in ("g5tb-s1", "g5tb-s2"):       # a fresh stack each boot: made, deleted, made, deleted ...
        seq = ["made" if line.startswith("applied Namespace/") else "deleted" for line in lines
               if line.startswith(f"applied Namespace/{ns} ") or line.startswith(f"kubectl delete namespace {ns} ")]
        assert seq == ["made", "deleted"] * (len(seq) // 2) and seq, (ns, seq)
    on = {"g5tb-s1": "{'kubernetes.io/hostname': 'core'}", "g5tb-s2": "{'kubernetes.io/hostname': 'edge'}"}
    pods = [line.split(" in ")[1] for line in lines if line.startswith("applied Pod/")]
    assert pods and all(p.split(" on ", 1)[1] == on[p.split()[0]] for p in pods), set(pods)
    ran = [line.split() for line in drivers.read_text().splitlines()]
    order = [s.id for s in campaign.plan(tmp_path / "none", "c", "n3", 3, 3, ["baseline"])]
    assert sorted(r[0] for r in ran) == sorted(order)
    for slot, ns, place, engine, _ in ran:
        assert engine == "k8s" and place == {"g5tb-s1": "*:core", "g5tb-s2": "*:edge"}[ns]
    # one results tree, every slot filled: a second invocation has nothing to run
    assert len(list(results.glob("c/n3/baseline/*/manifest.json"))) == 3
    assert {s.status for s in campaign.plan(results, "c", "n3", 3, 3, ["baseline"])} == {"done"}
    res = _campaign(args, KUBECTL=str(fake))
    assert res.returncode == 0 and "3 already done, 0 to run" in res.stderr
    assert len(drivers.read_text().splitlines()) == 3
    plans = list((results / "c" / "plans").glob("*.json"))
    assert plans and json.loads(plans[0].read_text())["parameters"]["SHARD_GROUPS"] == "core edge"


def test_a_stack_the_cluster_refuses_stops_the_campaign_as_bad_input(tmp_path: Path) -> None:
    """k8s.sh up refuses (here: the shard's namespace is there already) before applying anything:
    its exit 3 stops every shard as a driver's exit 2 does, and no driver runs."""
    fake, calls = _fake(tmp_path)
    fake.write_text(fake.read_text().replace('"get namespace") exit 1', '"get namespace") exit 0'))
    drivers = tmp_path / "drivers"
    driver = tmp_path / "driver.sh"
    driver.write_text(FAKE_DRIVER.format(drivers=str(drivers)))
    driver.chmod(0o755)
    results = tmp_path / "results"
    res = _campaign(["n3", "--results", str(results), "--campaign", "c", "--reps", "3", "--seed", "3",
                     "--profiles", "baseline", "--driver", str(driver), "--state", str(keys_root().parent)],
                    KUBECTL=str(fake))
    logs = "".join(p.read_text() for p in (results / "c" / "shards").glob("*.log"))
    assert res.returncode == 2, res.stderr + logs
    assert "a stack is up" in logs and not drivers.exists()
    assert not [line for line in calls.read_text().splitlines() if line.startswith("applied Pod/")]


def test_a_shards_interrupted_boot_stops_the_campaign_and_is_counted_as_interrupted(tmp_path: Path) -> None:
    """One shard's driver is stopped (its exit 130, as on a SIGTERM to it) while the other shard's
    boot completes: no further boot starts, the campaign ends 130, and its last line counts the
    boot as interrupted, apart from the done and the failed ones."""
    fake, _ = _fake(tmp_path)
    drivers, started = tmp_path / "drivers", tmp_path / "started"
    driver = tmp_path / "driver.sh"
    # s1 exits 130 once s2's boot has begun (so both shards are under way), s2 completes its boot
    driver.write_text(FAKE_DRIVER.format(drivers=str(drivers)).replace(
        "set -euo pipefail\n",
        f'set -euo pipefail\necho "$K8S_NAMESPACE" >>"{started}"\n'
        f'if [ "$K8S_NAMESPACE" = g5tb-s1 ]; then\n'
        f'  for _ in $(seq 600); do grep -qx g5tb-s2 "{started}" && exit 130; sleep 0.1; done; exit 1\n'
        f'fi\nuntil grep -qx g5tb-s1 "{started}"; do sleep 0.1; done\nsleep 1\n', 1))
    driver.chmod(0o755)
    results = tmp_path / "results"
    res = _campaign(["n3", "--results", str(results), "--campaign", "c", "--reps", "3", "--seed", "3",
                     "--profiles", "baseline", "--driver", str(driver), "--state", str(keys_root().parent)],
                    KUBECTL=str(fake))
    assert res.returncode == 130, res.stderr
    assert "2 boot(s), 1 done, 0 failed or invalid, 1 interrupted" in res.stderr, res.stderr
    assert sorted(started.read_text().split()) == ["g5tb-s1", "g5tb-s2"]      # no third boot
    assert len(list(results.glob("c/n3/baseline/*/manifest.json"))) == 1


def test_an_interrupt_ends_the_boots_under_way_and_deletes_their_stacks(tmp_path: Path) -> None:
    fake, calls = _fake(tmp_path)
    started = tmp_path / "started"
    driver = tmp_path / "driver.sh"
    driver.write_text(f'#!/usr/bin/env bash\necho "$K8S_NAMESPACE" >>"{started}"\nexec sleep 60\n')
    driver.chmod(0o755)
    args = ["n3", "--results", str(tmp_path / "results"), "--campaign", "c", "--reps", "3", "--seed", "3",
            "--profiles", "baseline", "--driver", str(driver), "--state", str(keys_root().parent)]
    base = {k: v for k, v in os.environ.items() if k not in ("SHARDS", "SHARD_GROUPS", "SHARD_LABEL", "PLACEMENT",
                                                             "DRY_RUN", "K8S_NAMESPACE")}
    proc = subprocess.Popen([sys.executable, "-m", "testbed", "campaign-k8s", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**base, "PYTHON": sys.executable, "KUBECTL": str(fake)})
    deadline = time.monotonic() + 240
    while not (started.exists() and len(started.read_text().split()) == 2) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.5)
    proc.terminate()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    deleted = sorted(line.split()[3] for line in calls.read_text().splitlines()
                     if line.startswith("kubectl delete namespace"))
    assert deleted == ["g5tb-s1", "g5tb-s2"] and "interrupted" in err
    assert "2 boot(s), 0 done, 0 failed or invalid, 2 interrupted" in err, err
    assert len(started.read_text().split()) == 2              # no third boot after the interrupt
