"""run-cpu's reads on a cluster: each node's /proc/stat and the stack's containers' cgroup CPU time.

    python -m testbed.runtime.k8s.cpu plan                    what `up` and `read` would do (DRY_RUN)
    python -m testbed.runtime.k8s.cpu up                      the readers: a pod per node (nodepods.py cpu_reader)
    python -m testbed.runtime.k8s.cpu read SNAPS LABEL [--table TABLE]
    python -m testbed.runtime.k8s.cpu down                    delete the readers' namespace

On Compose run-cpu reads this host's /proc/stat at each edge of its windows and, at the last PDU
session, every container's cgroup cpu.stat (scripts/run-cpu.sh, testbed/runtime/compose/driver.sh
engine_cpu_read). Here the same numbers come from a reader pod on each node, in a namespace of its
own (<K8S_NAMESPACE>-cpu) because the readers outlive each boot's stack: the idle window after
the teardown is read on the same nodes. The readers go on the nodes PLACEMENT's `*` entry names
(a node or a label: a sharded campaign's group), else on every Ready node, before the stack starts.

`read` is one `kubectl exec` per reader, all at once: each prints its kernel's boot id, the time
and /proc/stat's aggregate line and, with --table, usage_usec of every container cgroup under
kubepods on the node (one grep over the files: one instant per node; the container's cgroup path
holds its container ID under either kubelet cgroup driver). SNAPS gets one line per kernel
(`LABEL@NODE NS cpu ...`, testbed/hostcpu.py): two nodes on one kernel (the project's test
cluster) are counted once. At the --table edge only the kernels that run a pod of the stack are
written, so testbed/hostcpu.py rows counts the nodes the stack ran on. TABLE gets
`service,cpu_usec` per running container of the stack (the captures and the start gate left
out, as on Compose, where they are no stack containers); a container whose cgroup the node's tree
does not show is read by `kubectl exec` into it (/sys/fs/cgroup/cpu.stat, its own cgroup), after
the edge, and named on stderr.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from testbed import environment, placement as placement_mod
from testbed.runtime.k8s import apply as apply_mod, cluster, nodepods, pods as pods_mod, stackctl


def stack_namespace() -> str:
    return (environment.get("K8S_NAMESPACE") or "g5tb").strip()


def namespace() -> str:
    return f"{stack_namespace()}-cpu"


def kubectl(*args: str) -> list[str]:
    return [environment.get("KUBECTL", "kubectl"), *args]


def wanted(placement: placement_mod.Placement, found: list[cluster.Node]) -> list[str]:
    """The Ready nodes the readers go on: those PLACEMENT's `*` entry (every pod) or any entry names
    when `*` is there; every Ready node otherwise (a pod without a target may land anywhere)."""
    ready = [n for n in found if n.ready]
    if placement_mod.EVERY not in placement:
        return sorted(n.name for n in ready)
    hits = set()
    for t in placement.values():
        hits |= {n.name for n in ready if (t.node is not None and n.name == t.node)
                 or (t.label is not None and n.labels.get(t.label[0]) == t.label[1])}
    return sorted(hits)


def script(table: bool) -> str:
    text = "cat /proc/sys/kernel/random/boot_id; date +%s%N; head -n 1 /proc/stat"
    if table:
        text += (f"; find {nodepods.CGROUP_MOUNT} -path '*kubepods*' -name cpu.stat "
                 "-exec grep -H '^usage_usec' {} + 2>/dev/null; true")
    return text


def read_argv(pod: str, table: bool) -> list[str]:
    return kubectl("-n", namespace(), "exec", pod, "-c", "reader", "--", "/bin/sh", "-c", script(table))


def plan() -> int:
    asked = placement_mod.parse(environment.get("PLACEMENT") or "")
    where = (f"each Ready node PLACEMENT's entries name ({', '.join(sorted({t.text() for t in asked.values()}))})"
             if placement_mod.EVERY in asked else "every Ready node")
    print(f"cpu readers: namespace {namespace()}, a pod cpu-NODE on {where}, uid {pods_mod.NOBODY}, no capability, "
          f"{nodepods.CGROUP_HOST} read-only at {nodepods.CGROUP_MOUNT}")
    print(f"each edge, every reader at once: {shlex.join(read_argv('cpu-NODE', False))}")
    print(f"at the last PDU session, also every container: {shlex.join(read_argv('cpu-NODE', True)[-1:])}")
    return 0


def up() -> int:
    try:
        k = cluster.Kubectl(environment.get("KUBECTL", "kubectl"))
        found = cluster.nodes(k.json("get", "nodes"))
        asked = placement_mod.parse(environment.get("PLACEMENT") or "")
    except (cluster.ClusterError, placement_mod.PlacementError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    nodes = wanted(asked, found)
    if not nodes:
        print(f"error: no Ready node for the CPU readers (PLACEMENT={environment.get('PLACEMENT') or ''}; nodes: "
              f"{', '.join(n.name for n in found) or 'none'})", file=sys.stderr)
        return 1
    ns, image = namespace(), nodepods.tools_image()
    steps = [(kubectl("apply", "-f", "-"), json.dumps({"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": ns, "labels": {"testbed.stack": ns}}})),
             # a pod is admitted once the namespace's default service account exists (k8s.sh up)
             (kubectl("-n", ns, "wait", "--for=create", "serviceaccount/default", f"--timeout={stackctl.start_seconds()}s"), None),
             (kubectl("apply", "-f", "-"), json.dumps({"apiVersion": "v1", "kind": "List",
                                                       "items": [nodepods.cpu_reader(ns, n, image) for n in nodes]})),
             (kubectl("-n", ns, "wait", "--for=condition=Ready", "pod", "--all", f"--timeout={stackctl.start_seconds()}s"), None)]
    for argv, stdin in steps:
        # an apply that a loaded API server let time out is tried again (apply.py); a wait has its deadline
        if stdin is not None:
            why = apply_mod.apply(argv, stdin, f"the CPU readers of namespace {ns}", stackctl.start_seconds())
        else:
            why = "" if subprocess.run(argv, text=True, stdout=subprocess.DEVNULL, check=False).returncode == 0 else "failed"
        if why:
            print(f"error: the CPU readers in namespace {ns} did not come up (`{' '.join(argv[1:])}`: {why})",
                  file=sys.stderr)
            return 1
    print(" ".join(nodes))
    return 0


def down() -> int:
    return subprocess.run(kubectl("delete", "namespace", namespace(), "--ignore-not-found", "--wait=true"),
                          stdout=subprocess.DEVNULL, check=False).returncode


@dataclasses.dataclass
class Reading:
    node: str
    boot_id: str
    nanos: str
    stat: str                               # /proc/stat's aggregate line
    usage: dict[str, int]                   # cgroup path -> usage_usec


def parse_reading(node: str, text: str) -> Reading:
    lines = text.splitlines()
    if len(lines) < 3 or not lines[2].startswith("cpu "):
        raise ValueError(f"reader on {node}: not boot id, time, /proc/stat: {text[:200]!r}")
    usage = {}
    for line in lines[3:]:
        path, _, value = line.rpartition(":usage_usec ")
        if path and value.strip().isdigit():
            usage[path] = int(value)
    return Reading(node, lines[0].strip(), lines[1].strip(), lines[2].strip(), usage)


def _json(*args: str) -> Any:
    res = subprocess.run(kubectl(*args, "-o", "json"), capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise ValueError(f"`kubectl {' '.join(args)}` failed: {res.stderr.strip()}")
    return json.loads(res.stdout)


def running(pods: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(node, pod, container, container ID) of every running container of the stack's pods but the
    captures and the start gate."""
    out = []
    for item in pods.get("items") or ():
        st = item.get("status") or {}
        for c in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or []):
            name = c.get("name", "")
            if "running" in (c.get("state") or {}) and c.get("containerID") and not name.startswith("cap-") \
                    and name != pods_mod.GATE:
                out.append((item["spec"].get("nodeName", ""), item["metadata"]["name"], name,
                            c["containerID"].rpartition("://")[2]))
    return out


def read(snaps: Path, label: str, table: Path | None) -> int:
    try:
        readers = {i["metadata"]["name"]: i["spec"].get("nodeName", "")
                   for i in _json("-n", namespace(), "get", "pods").get("items") or ()}
        stack = running(_json("-n", stack_namespace(), "get", "pods")) if table is not None else []
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not readers:
        print(f"error: no CPU reader in namespace {namespace()} (cpu up first)", file=sys.stderr)
        return 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(readers)) as pool:
        done = {pod: pool.submit(subprocess.run, read_argv(pod, table is not None), capture_output=True, text=True,
                                 timeout=60, check=False) for pod in readers}
    readings = []
    for pod, fut in sorted(done.items()):
        res = fut.result()
        if res.returncode != 0:
            print(f"error: reader {pod} on {readers[pod]}: {res.stderr.strip()}", file=sys.stderr)
            return 1
        readings.append(parse_reading(readers[pod], res.stdout))
    kernels: dict[str, Reading] = {}
    for r in sorted(readings, key=lambda r: r.node):
        kernels.setdefault(r.boot_id, r)                 # one line per kernel, named after its first node
    if table is not None:
        on = {r.boot_id for r in readings if r.node in {node for node, *_ in stack}}
        kernels = {b: r for b, r in kernels.items() if b in on}
    with open(snaps, "a", encoding="utf-8") as fh:
        for r in kernels.values():
            fh.write(f"{label}@{r.node} {r.nanos} {r.stat}\n")
    if table is not None:
        write_table(table, stack, readings)
    return 0


def write_table(table: Path, stack: list[tuple[str, str, str, str]], readings: list[Reading]) -> None:
    rows, missing = [], []
    for _, pod, name, cid in stack:
        usec = next((u for r in readings for path, u in r.usage.items() if cid in path), None)
        if usec is None:
            res = subprocess.run(kubectl("-n", stack_namespace(), "exec", pod, "-c", name, "--", "cat",
                                         "/sys/fs/cgroup/cpu.stat"), capture_output=True, text=True, check=False)
            usec = next((int(line.split()[1]) for line in res.stdout.splitlines()
                         if line.startswith("usage_usec ")), None)
            missing.append(name)
        if usec is not None:
            rows.append(f"{name},{usec}")
        else:
            print(f"warning: no cpu.stat for {name} (pod {pod})", file=sys.stderr)
    if missing:
        print(f"warning: not in their node's cgroup tree, read by exec after the edge: {', '.join(missing)}",
              file=sys.stderr)
    table.write_text("service,cpu_usec\n" + "".join(f"{r}\n" for r in rows), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.runtime.k8s.cpu", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    for verb in ("plan", "up", "down"):
        sub.add_parser(verb)
    sp = sub.add_parser("read")
    sp.add_argument("snaps", type=Path)
    sp.add_argument("label")
    sp.add_argument("--table", type=Path)
    args = parser.parse_args(argv)
    if args.verb == "read":
        return read(args.snaps, args.label, args.table)
    return {"plan": plan, "up": up, "down": down}[args.verb]()


if __name__ == "__main__":
    sys.exit(main())
