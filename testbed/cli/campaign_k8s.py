"""A sharded campaign on a Kubernetes cluster: up to SHARDS stacks at once, one per node group.

`make campaign-n3 ENGINE=k8s` (scripts/campaign.sh hands over here): the campaign's plan as
`python -m testbed campaign` makes it (seeded order, resume), its boots spread over the shards
(testbed/shards.py), DRY_RUN=1 the plan and its ETA against one host; otherwise the boots run
(testbed/shardrun.py). Every problem with the input is told before anything starts (exit 2).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from testbed import ROOT, campaign, instance, keys, placement, registry, runparams, shards, shardrun
from testbed.cli import campaign as campaign_cli
from testbed.contract import RuntimeOptionError
from testbed.runtime.k8s import cluster, render, tool

def drivers_on(runtime: str = "k8s") -> frozenset[str]:
    """The experiments whose drivers run on that runtime (its driver library's ENGINE_EXPERIMENTS)."""
    rt = registry.runtime(runtime)
    m = re.search(r'^ENGINE_EXPERIMENTS="([^"]*)"', (rt.folder / rt.driver).read_text(encoding="utf-8"), re.M)
    return frozenset(m.group(1).split()) if m else frozenset()


DRIVERS_ON_K8S = drivers_on()
# Experiments a sharded campaign runs: those whose drivers run against a cluster's stack, as the
# k8s runtime's driver library says (testbed/runtime/k8s/driver.sh ENGINE_EXPERIMENTS).
EXPERIMENTS = tuple(e for e in runparams.EXPERIMENTS if e in DRIVERS_ON_K8S)


def _env(name: str) -> str:
    return os.environ.get(name, "") or ""


def _bridged() -> bool:
    """Whether K8S_CNI leaves any network a node-local bridge (a bad K8S_CNI counts: the boot's
    render refuses it, naming the word)."""
    try:
        return "bridge" in render.cni_choice({"K8S_CNI": _env("K8S_CNI"), "K8S_MASTER": _env("K8S_MASTER")}).values()
    except RuntimeOptionError:
        return True


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    campaign_cli.add_arguments(parser, name)
    parser.add_argument("--shards", default=_env("SHARDS"),
                        help="stacks at once (default: $SHARDS, or one per node group)")
    parser.add_argument("--groups", default=_env("SHARD_GROUPS"),
                        help='node groups, node names or label=value ("n1 n2", "pool=a pool=b"; default: '
                             "$SHARD_GROUPS, or every Ready node, or each value of --group-label)")
    parser.add_argument("--group-label", default=_env("SHARD_LABEL"),
                        help="derive the node groups from this node label's values (default: $SHARD_LABEL)")
    parser.add_argument("--namespace", default=_env("K8S_NAMESPACE") or "g5tb",
                        help="shard k's namespace is <namespace>-s<k> (default: $K8S_NAMESPACE or g5tb)")
    parser.add_argument("--state", type=Path, default=None, help="state dir (default: $STATE or .state)")
    parser.add_argument("--dry-run", action="store_true", default=_env("DRY_RUN") == "1",
                        help="print the plan and its ETA, start nothing (default: $DRY_RUN)")
    parser.add_argument("--driver", type=Path, default=None,
                        help="per-boot program, run against the stack in $K8S_RENDER_DIR "
                             "(default: scripts/run-<experiment>.sh)")


def _nodes() -> list[cluster.Node] | str:
    """The cluster's nodes, or why there are none to read."""
    try:
        k = tool._connect()
        return cluster.nodes(k.json("get", "nodes"))
    except cluster.ClusterError as exc:
        return str(exc)


def _groups(args: argparse.Namespace, nodes: list[cluster.Node] | str, errors: list[str]) -> list[placement.Target]:
    try:
        if args.groups:
            groups = shards.parse_groups(args.groups)
        elif isinstance(nodes, list):
            groups = shards.derive_groups(nodes, args.group_label)
        elif (args.dry_run or args.eta) and args.shards.strip().isdigit():
            return [placement.Target(node=f"group-{k}") for k in range(1, int(args.shards) + 1)]
        else:
            errors.append(f"no node groups: {nodes}; name them with SHARD_GROUPS= (DRY_RUN=1 also takes SHARDS= alone)")
            return []
    except placement.PlacementError as exc:
        errors.append(str(exc).replace("PLACEMENT", "SHARD_GROUPS"))
        return []
    if isinstance(nodes, list):
        errors.extend(shards.group_problems(groups, nodes))
    return groups


def _plan_lines(args: argparse.Namespace, chosen: list[shards.Shard],
                slots: list[campaign.Slot], nodes: list[cluster.Node] | str) -> list[str]:
    """The dry run's report: the shards, every boot on its shard with its estimated times, the ETA."""
    out: list[str] = []
    out.append(f"sharded campaign {args.campaign}, experiment {args.experiment}, seed {args.seed}, {args.reps} block(s), "
          f"ENGINE=k8s, {len(chosen)} shard(s), one stack at a time each")
    for sh in chosen:
        on = (" ".join(n.name for n in shards.members(sh.group, nodes)) if isinstance(nodes, list)
              else "(not checked: " + nodes.split(";")[0] + ")")
        out.append(f"  s{sh.index}  node group {sh.group.text():<20} namespace {sh.namespace:<12} nodes {on}")
        if isinstance(nodes, list) and len(shards.members(sh.group, nodes)) > 1 and _bridged():
            out.append(f"      warning: s{sh.index}'s pods may spread over its {len(shards.members(sh.group, nodes))} "
                  "nodes, and the bridge CNI keeps each network on one node: one node per group, or K8S_CNI=macvlan")
    seconds, how = shards.estimates(args.results, args.experiment)
    plan = shards.assign(slots, len(chosen), seconds)
    out.append("plan (order, slot, profile, block, status, shard, start, end; estimated):")
    by_slot = {b.slot.id: b for b in plan}
    n = 0
    for s in slots:
        b = by_slot.get(s.id)
        if b is None:
            out.append(f"   -  {s.id}\t{s.profile}\t{s.rep}\t{s.status}\t(skipped)")
            continue
        n += 1
        out.append(f"{n:>4}  {s.id}\t{s.profile}\t{s.rep}\t{s.status}\ts{b.shard}\t"
              f"{campaign._hms(b.start)}\t{campaign._hms(b.end)}")
    one_host = sum(b.end - b.start for b in plan)
    span = max((b.end for b in plan), default=0.0)
    out.append(f"{len(slots)} slots, {len(plan)} to run, {len(slots) - len(plan)} done")
    out.append(f"ETA: one host {campaign._hms(one_host)}; {len(chosen)} shard(s) {campaign._hms(span)} ({how})")
    return out


def run(args: argparse.Namespace) -> int:
    errors: list[str] = []
    if args.experiment not in EXPERIMENTS:
        errors.append(f"ENGINE=k8s campaigns run {', '.join(EXPERIMENTS)}, not {args.experiment}")
    if _env("PLACEMENT"):
        errors.append("PLACEMENT= with a sharded campaign: each shard's stack goes whole on its node group "
                      "(SHARD_GROUPS=); one placement per shard is not built")
    driver = args.driver or ROOT / "scripts" / f"run-{args.experiment}.sh"
    planning = args.dry_run or args.eta         # nothing is started: no cluster needed
    if not planning and args.driver is None and args.experiment not in DRIVERS_ON_K8S:
        errors.append(f"{driver.name} does not run against a cluster's stack yet (docs/kubernetes.md "
                      "\"Not yet\"): DRY_RUN=1 shows the plan")
    slots, raw, plan_errors = campaign_cli.checked_plan(args)
    errors += plan_errors
    nodes = _nodes()
    if isinstance(nodes, str) and not planning:
        errors.append(nodes)
    groups = _groups(args, nodes, errors)
    chosen: list[shards.Shard] = []
    if groups:
        try:
            chosen = shards.shards(args.shards, groups, args.namespace)
        except shards.ShardError as exc:
            errors.append(str(exc))
    if errors:
        for e in errors:
            print(f"error: {e}", file=sys.stderr)
        print("error: nothing was started", file=sys.stderr)
        return 2
    if planning:
        lines = _plan_lines(args, chosen, slots, nodes)
        print("\n".join(lines[-1:] if args.eta else lines))
        return 0
    state = args.state if args.state is not None else keys.default_state_dir()
    # The shards' renders share the campaign's keys and its stack's addresses (its STATE's slot,
    # testbed/instance.py): each shard's state dir would otherwise take its own block, and the
    # certificates, whose names carry the addresses, would be reissued under the other shards.
    with instance.addresses_of(state) as inst:
        keys.ensure(state)
        slot = os.environ.get(instance.SLOT_ENV) or str(inst.slot)
    params = {**raw, "SHARDS": str(len(chosen)), "SHARD_GROUPS": " ".join(s.group.text() for s in chosen)}
    path = campaign.record_plan(args.results, args.campaign, args.experiment, args.seed, args.reps, slots, params)
    todo = [s for s in slots if s.status != "done"]
    print(f"campaign {args.campaign}: {args.experiment}, {len(slots)} slots, {len(slots) - len(todo)} already done, "
          f"{len(todo)} to run on {len(chosen)} shard(s) (seed {args.seed}; plan in {path})", file=sys.stderr)
    # the experiment's own driver brings its stack up itself (its captures rendered into the pods);
    # another program (--driver) runs against the stack the runner brings up for it
    ctx = shardrun.Context(args.experiment, args.campaign, args.results, Path(state), slot, args.reps, raw, driver,
                           own_stack=args.driver is None)
    out = shardrun.Runner(ctx, chosen, todo).run()
    print(f"campaign {args.campaign} ({args.experiment}): {out.summary()}", file=sys.stderr)
    if out.stop:
        return out.stop
    return 1 if out.failed else 0
