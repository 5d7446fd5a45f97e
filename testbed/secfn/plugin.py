"""The UPF security function as a dimension plug-in (testbed/contract.py DimensionPlugin):
SECFN/IDS (with QUEUE_MAXLEN, QUEUES, FAIL_OPEN) choose it, and the chosen function renders its
engine directory and Compose services (testbed/secfn/compose.py); render never names it."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed import secfn
from testbed.contract import DimensionChoice, DimensionPlugin, Values
from testbed.dimensions import SelectionError
from testbed.profiles import Profile
from testbed.secfn import compose


@dataclass(frozen=True)
class SecfnDimension(DimensionChoice):
    """A resolved SECFN x IDS in the stack."""

    sf: secfn.Secfn
    name: str = compose.NAME

    def render(self, profile: Profile, plane: str, values: Values, out_dir: Path) -> dict[str, str]:
        return compose.render(self.sf, values, out_dir)

    def compose_services(self, profile: Profile, plane: str, values: Values) -> dict[str, dict[str, Any]]:
        return compose.services(self.sf, values)

    def describe(self, env: dict[str, str]) -> str:
        return (f"{secfn.unit(self.sf)}: upf {self.sf.function} ({self.sf.mode or 'no engine'}), "
                f"N6 server dn {env['DN_SERVER_IP']}, D-ITG sender ue-ditg in ue1's namespace")


def resolve(options: Mapping[str, str]) -> secfn.Secfn | None:
    """The checked security function, None without SECFN; SecfnError names the valid values."""
    function, engine = options.get("SECFN", ""), options.get("IDS", "")
    if not function:
        return None
    maxlen = options.get("QUEUE_MAXLEN") or None
    queues = options.get("QUEUES") or None
    fail_open = options.get("FAIL_OPEN") or None
    for name, value in (("QUEUE_MAXLEN", maxlen), ("QUEUES", queues)):
        if value is not None and not value.isdigit():
            raise secfn.SecfnError(f"{name}={value!r}: must be a whole number")
    return secfn.resolve(function, engine or None, queue_maxlen=int(maxlen) if maxlen else None,
                         queues=int(queues) if queues else None,
                         fail_open=None if fail_open is None else fail_open in ("1", "yes", "true"))


class SecurityFunction(DimensionPlugin):
    def select(self, options: Mapping[str, str], profile: Profile, plane: str, ran: str) -> SecfnDimension | None:
        """The function for an N3 profile with the UERANSIM RAN; SelectionError otherwise."""
        try:
            sf = resolve(options)
        except secfn.SecfnError as exc:
            raise SelectionError(str(exc)) from None
        if sf is None:
            return None
        if ran and ran != "ueransim":        # ue-ditg joins UERANSIM's UE 1 (testbed/secfn/compose.py)
            raise SelectionError(
                f"SECFN runs with the UERANSIM RAN (its UE 1 sends the D-ITG flows); RAN={ran} "
                "is not supported with a security function yet (docs/secfn.md)")
        if "n3" not in profile.planes:
            raise SelectionError(
                f"SECFN needs an N3 profile (the UPF's user plane): {profile.id} runs on "
                f"{', '.join(profile.planes)} (make profiles PLANE=n3)")
        return SecfnDimension(sf)
