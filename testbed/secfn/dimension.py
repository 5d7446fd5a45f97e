"""The UPF security function as a render dimension (testbed/dimensions.py, docs/contracts.md):
`--secfn/--ids` (default $SECFN/$IDS, with $QUEUE_MAXLEN, $QUEUES, $FAIL_OPEN) choose it, and
the chosen function renders its engine directory and Compose services (testbed/secfn/compose.py)
through the dimension hooks; render itself never names it."""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed import dimensions, secfn
from testbed.secfn import compose


@dataclass(frozen=True)
class SecfnDimension:
    """A resolved SECFN x IDS in the stack (implements dimensions.Dimension)."""

    sf: secfn.Secfn

    @property
    def name(self) -> str:
        return compose.NAME

    def render(self, profile: Any, plane: str, values: dict[str, Any], out_dir: Path) -> dict[str, str]:
        return compose.render(self.sf, values, out_dir)

    def compose_services(self, profile: Any, plane: str, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return compose.services(self.sf, values)

    def describe(self, env: dict[str, str]) -> str:
        return (f"{secfn.unit(self.sf)}: upf {self.sf.function} ({self.sf.mode or 'no engine'}), "
                f"N6 server dn {env['DN_SERVER_IP']}, D-ITG sender ue-ditg in ue1's namespace")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--secfn", default=os.environ.get("SECFN") or "",
                        help="UPF security function none|nat|ids-nat|ips-nat (default: $SECFN, or none "
                             "of the stack's own; docs/secfn.md)")
    parser.add_argument("--ids", default=os.environ.get("IDS") or "",
                        help="its engine suricata|snort|passthrough (default: $IDS, or suricata)")


def resolve(function: str, engine: str) -> secfn.Secfn | None:
    """The checked security function (with QUEUE_MAXLEN/QUEUES/FAIL_OPEN from the environment),
    None without SECFN; SecfnError names the valid values."""
    if not function:
        return None
    maxlen = os.environ.get("QUEUE_MAXLEN") or None
    queues = os.environ.get("QUEUES") or None
    fail_open = os.environ.get("FAIL_OPEN") or None
    for name, value in (("QUEUE_MAXLEN", maxlen), ("QUEUES", queues)):
        if value is not None and not value.isdigit():
            raise secfn.SecfnError(f"{name}={value!r}: must be a whole number")
    return secfn.resolve(function, engine or None, queue_maxlen=int(maxlen) if maxlen else None,
                         queues=int(queues) if queues else None,
                         fail_open=None if fail_open is None else fail_open in ("1", "yes", "true"))


def select(args: argparse.Namespace, profile: Any, plane: str) -> SecfnDimension | None:
    """The function of --secfn/--ids for an N3 profile; SelectionError otherwise."""
    try:
        sf = resolve(args.secfn, args.ids)
    except secfn.SecfnError as exc:
        raise dimensions.SelectionError(str(exc)) from None
    if sf is None:
        return None
    ran_variant = str(getattr(args, "ran", "") or "ueransim")
    if ran_variant != "ueransim":        # ue-ditg joins UERANSIM's UE 1 (testbed/secfn/compose.py)
        raise dimensions.SelectionError(
            f"SECFN runs with the UERANSIM RAN (its UE 1 sends the D-ITG flows); RAN={ran_variant} "
            "is not supported with a security function yet (docs/secfn.md)")
    if "n3" not in profile.planes:
        raise dimensions.SelectionError(
            f"SECFN needs an N3 profile (the UPF's user plane): {profile.id} runs on "
            f"{', '.join(profile.planes)} (make profiles PLANE=n3)")
    return SecfnDimension(sf)
