"""A driver's server on the n6 gateway of a cluster's stack: run-throughput's iperf3 (nodepods.py n6_server).

    python -m testbed.runtime.k8s.server --render-dir R plan  NAME ADDRESS PORT -- CMD...
    python -m testbed.runtime.k8s.server --render-dir R start NAME ADDRESS PORT [--run-dir D] -- CMD...
    python -m testbed.runtime.k8s.server --render-dir R stop  NAME LOG

`start` applies the pod in the stack's namespace on the node the UPF's pod runs on (so the
namespace's deletion removes it with the stack), waits until it listens on ADDRESS:PORT, prints
that node and, with --run-dir, records where it ran in the run's manifest (`placement.servers`).
`stop` keeps its output (its log) in LOG and deletes it. `plan` (DRY_RUN) says what `start` would
do, the node as the placement asks for it. Exit 0 done, 1 failure, 2 usage.
"""
from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from testbed import environment, manifest, placement as placement_mod
from testbed.runtime.k8s import apply as apply_mod, nodepods, pods as pods_mod, render, stackctl

UPF = "upf"                     # the NF whose n6 packets leave onto its node's n6 bridge (nf-configs/stack.yaml)


def _image(st: stackctl.Stack) -> str:
    roles = {p: json.loads((o["metadata"].get("annotations") or {}).get(pods_mod.ROLES_ANNOTATION, "{}"))
             for p, o in st.pods.items()}
    imgs = {p: {c["name"]: c["image"] for c in o["spec"].get("initContainers", []) + o["spec"]["containers"]}
            for p, o in st.pods.items()}
    return nodepods.tools_image(roles, imgs)


def pod(st: stackctl.Stack, name: str, node: str, address: str, port: int, command: list[str]) -> dict[str, Any]:
    return nodepods.n6_server(name, st.namespace, node, _image(st), address, port, command)


def planned_node(render_dir: Path) -> str:
    """Where the render's placement puts the UPF (DRY_RUN: no cluster to ask)."""
    asked = yaml.safe_load((render_dir / render.PLACEMENT).read_text(encoding="utf-8")) or {}
    target = asked.get(UPF) or asked.get(placement_mod.EVERY)
    return f"the UPF's node, {target} by the placement" if target else "the UPF's node (the scheduler's choice)"


def _run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, text=True, check=False, **kw)


def upf_node(st: stackctl.Stack) -> str:
    res = _run(st.k("get", "pod", st.pod_of(UPF), "-o", "jsonpath={.spec.nodeName}"), capture_output=True)
    return res.stdout.strip() if res.returncode == 0 else ""


def record(run_dir: Path, name: str, entry: dict[str, Any]) -> None:
    """placement.servers[NAME] in the run's manifest, beside where the stack ran (engine_record)."""
    # without the stack's record (engine_record warned) the server's place is kept all the same
    rec = manifest.load(run_dir).get("placement") or {"engine": "k8s", "requested": {}, "nodes": {}, "pods": {}}
    rec.setdefault("servers", {})[name] = entry
    manifest.set_field(run_dir, "placement", rec)


def start(st: stackctl.Stack, name: str, address: str, port: int, command: list[str], run_dir: Path | None) -> int:
    node = upf_node(st)
    if not node:
        print(f"error: the UPF's pod ({st.pod_of(UPF)}) runs on no node: is the stack up?", file=sys.stderr)
        return 1
    obj = pod(st, name, node, address, port, command)
    # stdout is the node alone (the driver reads it): the apply keeps kubectl's lines off it, the wait's go to stderr
    why = apply_mod.apply(st.k("apply", "-f", "-"), json.dumps(obj), f"the server pod {name}", stackctl.start_seconds())
    if why:
        print(f"error: applying the server pod {name}: {why}", file=sys.stderr)
        return 1
    ready = _run(st.k("wait", "--for=condition=Ready", f"pod/{name}", f"--timeout={stackctl.start_seconds()}s"),
                 stdout=sys.stderr)
    if ready.returncode != 0:
        _run(st.k("describe", "pod", name), stdout=sys.stderr)
        _run(st.k("logs", name, "--tail=40"), stdout=sys.stderr)
        _run(stackctl.delete_argv(st, name), stdout=sys.stderr)
        print(f"error: the server pod {name} on node {node} did not listen on {address}:{port} within "
              f"{stackctl.start_seconds()} s (above: its description and log)", file=sys.stderr)
        return 1
    if run_dir is not None:
        record(run_dir, name, {"node": node, "pod": name, "namespace": st.namespace, "host_network": True,
                               "address": address, "port": port, "beside": st.pod_of(UPF),
                               "command": command})
    print(node)
    return 0


def stop(st: stackctl.Stack, name: str, log: Path) -> int:
    with open(log, "w", encoding="utf-8") as fh:
        rc = _run(st.k("logs", name), stdout=fh, stderr=subprocess.STDOUT).returncode
    return _run(stackctl.delete_argv(st, name), stdout=subprocess.DEVNULL).returncode or rc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.runtime.k8s.server", description=__doc__.split("\n")[0])
    parser.add_argument("--render-dir", type=Path, required=True)
    sub = parser.add_subparsers(dest="verb", required=True)
    for verb in ("plan", "start"):
        sp = sub.add_parser(verb)
        sp.add_argument("name")
        sp.add_argument("address")
        sp.add_argument("port", type=int)
        sp.add_argument("--run-dir", type=Path)
        sp.add_argument("command", nargs="+")
    sp = sub.add_parser("stop")
    sp.add_argument("name")
    sp.add_argument("log", type=Path)
    args = parser.parse_args(argv)
    st = stackctl.load(args.render_dir, environment.get("KUBECTL", "kubectl"))
    if args.verb == "stop":
        return stop(st, args.name, args.log)
    if args.verb == "plan":
        obj = pod(st, args.name, "NODE", args.address, args.port, args.command)
        ctx = obj["spec"]["containers"][0]["securityContext"]
        caps = ", ".join(ctx["capabilities"].get("add", [])) or "no capability"
        print(f"pod {args.name} in namespace {st.namespace} on {planned_node(args.render_dir)}: hostNetwork, "
              f"uid {ctx['runAsUser']}, {caps}, read-only root, ready once {args.address}:{args.port} "
              f"listens; {shlex.join(args.command)}")
        return 0
    return start(st, args.name, args.address, args.port, args.command, args.run_dir)


if __name__ == "__main__":
    sys.exit(main())
