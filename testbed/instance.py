"""One stack per state directory: what a STATE directory's stack is called and where it lives.

`STATE=` picks the state directory (keys, renders, the record of the running stack). Two stacks
can run side by side on one host when their STATE differs: each gets its own Compose project,
host bridge names and address block, derived from the directory (docs/stack.md "Two stacks at
once"), so nobody edits nf-configs/stack.yaml. The default directory (.state in the repository)
keeps the names and addresses of stack.yaml as they are (project g5tb, bridges g5tb-<net>).

The address block: every address and subnet of stack.yaml that lies in a /16 holding one of its
`networks` (10.100.0.0/16) moves to 10.(100+slot).0.0/16, slot 1..99, taken from a hash of the
directory's absolute path. STACK_SLOT, COMPOSE_PROJECT and BRIDGE_PREFIX in the environment win
(two directories whose hashes meet on one slot: set STACK_SLOT for one of them).

Standard library only (scripts/lib/state.sh runs it before a venv may exist).
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import ipaddress
import os
from pathlib import Path
from typing import Any, Iterator, Mapping

from testbed import environment
from testbed import ROOT

DEFAULT_PROJECT = "g5tb"
SLOTS = 99                      # 10.101 .. 10.199: the second octet + slot stays below 200
SLOT_ENV = "STACK_SLOT"


class InstanceError(ValueError):
    """A STATE directory or STACK_SLOT that cannot name a stack."""


@dataclasses.dataclass(frozen=True)
class Instance:
    state: Path
    project: str                # docker compose -p
    bridge_prefix: str          # host bridges <prefix>-<network> (15 characters at most)
    slot: int                   # 0: stack.yaml's addresses; n: every block moved by n /16s


def state_dir(state: str | os.PathLike[str] | None = None) -> Path:
    """The absolute state directory: STATE relative to the repository (as the Makefile means it)."""
    raw = str(state) if state not in (None, "") else environment.get("STATE", ".state")
    p = Path(raw).expanduser()
    return (p if p.is_absolute() else ROOT / p).resolve()


def is_default(state: Path) -> bool:
    return Path(state).resolve() == (ROOT / ".state").resolve()


def slot_of(value: str) -> int:
    try:
        slot = int(value)
    except ValueError:
        raise InstanceError(f"{SLOT_ENV}={value!r}: a number from 0 to {SLOTS}") from None
    if not 0 <= slot <= SLOTS:
        raise InstanceError(f"{SLOT_ENV}={slot}: a number from 0 to {SLOTS}")
    return slot


def of(state: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Instance:
    env = environment.mapping() if env is None else env
    path = state_dir(state)
    if is_default(path):
        project, bridge, slot = DEFAULT_PROJECT, DEFAULT_PROJECT, 0
    else:
        h = hashlib.sha256(str(path).encode()).hexdigest()
        project, bridge, slot = f"{DEFAULT_PROJECT}-{h[:6]}", f"{DEFAULT_PROJECT}{h[:4]}", 1 + int(h[:8], 16) % SLOTS
    if env.get(SLOT_ENV):
        slot = slot_of(env[SLOT_ENV])
    return Instance(path, env.get("COMPOSE_PROJECT") or project, env.get("BRIDGE_PREFIX") or bridge, slot)


def env_slot(env: Mapping[str, str] | None = None) -> int:
    """The address slot the environment asks for (0 when STACK_SLOT is unset)."""
    env = environment.mapping() if env is None else env
    return slot_of(env[SLOT_ENV]) if env.get(SLOT_ENV) else 0


def _blocks(values: dict[str, Any]) -> list[ipaddress.IPv4Network]:
    nets = {ipaddress.ip_network(str(spec["subnet"])).supernet(new_prefix=16)
            for spec in (values.get("networks") or {}).values()}
    return sorted(nets)        # type: ignore[arg-type]


def shift(values: dict[str, Any], slot: int) -> dict[str, Any]:
    """A copy of the stack values with every address and subnet of the networks' /16 blocks
    moved by `slot` /16s (the UE subnet, DNS servers and anything outside stay)."""
    if slot == 0:
        return values
    blocks = _blocks(values)
    step = slot * 65536

    def move(text: str) -> str:
        try:
            if "/" in text:
                net = ipaddress.ip_network(text)
                if any(net.subnet_of(b) for b in blocks):       # type: ignore[arg-type]
                    return str(ipaddress.ip_network(f"{net.network_address + step}/{net.prefixlen}"))
                return text
            addr = ipaddress.ip_address(text)
        except ValueError:
            return text
        if any(addr in b for b in blocks):
            moved = addr + step
            if not moved.is_private:
                raise InstanceError(f"slot {slot} moves {addr} out of the private range")
            return str(moved)
        return text

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, str):
            return move(node)
        return node

    return walk(copy.deepcopy(values))


@contextlib.contextmanager
def addresses_of(state: str | os.PathLike[str] | None = None) -> Iterator[Instance]:
    """For a Python command given a state directory: stack.load() sees that stack's addresses in
    the block (its slot, unless the environment already names one: a stack script exported it)."""
    inst = of(state)
    before = environment.get(SLOT_ENV)
    environment.export(SLOT_ENV, before if before else str(inst.slot))
    try:
        yield inst
    finally:
        if not before:                  # environment.get says "" for unset: the slot was ours to clear
            environment.unset(SLOT_ENV)


def shell_env(inst: Instance) -> dict[str, str]:
    """What scripts/lib/state.sh exports for the stack of this directory."""
    return {"STATE_DIR": str(inst.state), "COMPOSE_PROJECT": inst.project, "BRIDGE_PREFIX": inst.bridge_prefix,
            SLOT_ENV: str(inst.slot)}
