"""Sharded campaigns (ENGINE=k8s, docs/kubernetes.md "Sharded campaigns"): which node groups the
campaign's stacks run on, and which boot goes to which shard, in what order.

A shard is one stack at a time on one node group (a node by name, or the nodes carrying a label
`key=value`, the syntax of testbed/placement.py). Groups must not share a node, so two stacks never
run on one node. The campaign's seeded order (testbed/campaign.py `plan`) is kept: the shard that
becomes free first takes the next boot of that order (ties: the lowest shard). `assign` simulates
that with an estimate per boot, for DRY_RUN=1 and its ETA; the runner (testbed/cli/campaign_k8s.py)
does the same live, each free shard taking the next boot from one queue.

Everything here is pure (data in, data out); the cluster is read by the caller.
"""
from __future__ import annotations

import dataclasses
import heapq
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from testbed import campaign, placement
from testbed.placement import Target
from testbed.runtime.k8s.cluster import Node

# What one campaign slot takes on one host by the README's table ("How long"): campaign-n3 is
# 17 profiles x 5 boots in about 40 h, campaign-sbi one boot of each of 107 profiles in about 45 h
# (25 min a profile). Used only when no complete run under RESULTS times a slot.
TABLE_SLOT_SECONDS = {"n3": 40 * 3600 / (17 * 5), "sbi": 25 * 60}
NAMESPACE_MAX = 11                  # testbed/runtime/k8s/render.py settings: it prefixes bridge names


class ShardError(ValueError):
    """Shards or node groups that cannot be honoured; the message names each problem."""


@dataclasses.dataclass(frozen=True)
class Shard:
    index: int                      # 1-based
    group: Target
    namespace: str

    @property
    def placement(self) -> str:
        """PLACEMENT= of this shard's stacks: every NF on its node group."""
        return f"{placement.EVERY}:{self.group.text()}"


@dataclasses.dataclass(frozen=True)
class Boot:
    slot: campaign.Slot
    shard: int                      # 1-based
    start: float                    # s from the campaign's start (estimated)
    end: float


def parse_groups(text: str) -> list[Target]:
    """SHARD_GROUPS="node1 node2" or "pool=a pool=b": node names or labels, each a group."""
    found = placement.parse(" ".join(f"g{i}:{t}" for i, t in enumerate(text.split())))
    return [found[f"g{i}"] for i in range(len(found))]


def members(group: Target, nodes: Sequence[Node]) -> list[Node]:
    if group.node is not None:
        return [n for n in nodes if n.name == group.node]
    key, value = group.label or ("", "")
    return [n for n in nodes if n.labels.get(key) == value]


def derive_groups(nodes: Sequence[Node], label: str = "") -> list[Target]:
    """The node groups a cluster offers: each Ready node on its own, or with `label` each value of
    that label among the Ready nodes (sorted)."""
    ready = [n for n in nodes if n.ready]
    if not label:
        return [Target(node=n.name) for n in sorted(ready, key=lambda n: n.name)]
    values = sorted({n.labels[label] for n in ready if label in n.labels})
    return [Target(label=(label, v)) for v in values]


def group_problems(groups: Sequence[Target], nodes: Sequence[Node]) -> list[str]:
    """Groups no Ready node is in, groups named twice, and nodes in two groups (two stacks would
    share them)."""
    out: list[str] = []
    seen: dict[str, str] = {}
    texts = [g.text() for g in groups]
    for g in groups:
        if texts.count(g.text()) > 1 and g.text() not in seen.values():
            out.append(f"node group {g.text()} named twice")
        hits = members(g, nodes)
        if not any(n.ready for n in hits):
            known = ", ".join(n.name for n in nodes) or "none"
            out.append(f"node group {g.text()}: " + (f"{', '.join(n.name for n in hits)} not Ready" if hits else
                                                     f"no node {'carries that label' if g.label else 'of that name'}"
                                                     f" (nodes: {known})"))
        for n in hits:
            if n.name in seen and seen[n.name] != g.text():
                out.append(f"node {n.name} is in node groups {seen[n.name]} and {g.text()}: two stacks would share it")
            seen.setdefault(n.name, g.text())
    return out


def shards(count: str, groups: Sequence[Target], namespace: str = "g5tb") -> list[Shard]:
    """The shards: SHARDS (default: one per group) on the first groups, each with its namespace
    `<namespace>-s<k>`. ShardError for a count that is not a whole number >= 1 or exceeds the groups."""
    if not groups:
        raise ShardError("no node group to run on (SHARD_GROUPS=, or Ready nodes in the cluster)")
    text = count.strip()
    if text and (not text.isdigit() or int(text) < 1):
        raise ShardError(f"SHARDS={count}: a whole number >= 1")
    n = int(text) if text else len(groups)
    if n > len(groups):
        raise ShardError(f"SHARDS={n} but only {len(groups)} node group(s) ({' '.join(g.text() for g in groups)}): "
                         "never two stacks on one node group; lower SHARDS or add groups")
    out = [Shard(k, groups[k - 1], f"{namespace}-s{k}") for k in range(1, n + 1)]
    if len(out[-1].namespace) > NAMESPACE_MAX:
        raise ShardError(f"K8S_NAMESPACE={namespace}: {out[-1].namespace} is longer than {NAMESPACE_MAX} "
                         "characters; a shorter K8S_NAMESPACE")
    return out


def assign(slots: Sequence[campaign.Slot], count: int, seconds: Callable[[campaign.Slot], float]) -> list[Boot]:
    """Every slot still to run, in the plan's order, to the shard free first (ties: the lowest),
    each taking `seconds(slot)`: one stack per shard at a time, the seeded order kept as the start
    order."""
    free = [(0.0, k) for k in range(1, count + 1)]
    out = []
    for s in slots:
        if s.status == "done":
            continue
        t, k = heapq.heappop(free)
        end = t + max(seconds(s), 0.0)
        out.append(Boot(s, k, t, end))
        heapq.heappush(free, (end, k))
    return out


def estimates(results: Path, experiment: str) -> tuple[Callable[[campaign.Slot], float], str]:
    """Seconds per slot and how they were had: each profile's median complete run under `results`,
    else the experiment's median, else the README's table, else 1 (the order only)."""
    times = campaign.run_times(results, experiment)
    every = [t for ts in times.values() for t in ts]
    fallback = statistics.median(every) if every else TABLE_SLOT_SECONDS.get(experiment)
    medians: Mapping[str, float] = {k: statistics.median(v) for k, v in times.items() if v}

    def seconds(s: campaign.Slot) -> float:
        name = s.id[len(experiment) + 1:s.id.rfind(".r")]
        return medians.get(name) or fallback or 1.0

    if every:
        how = f"each boot by its profile's median complete run under {results} ({len(every)} timed), else their median"
    elif fallback:
        how = f"each boot {fallback / 60:.0f} min, from the README's table (no complete {experiment} run under {results})"
    else:
        how = f"UNKNOWN: no complete {experiment} run under {results} to time a boot by; every boot counted equal"
    return seconds, how

