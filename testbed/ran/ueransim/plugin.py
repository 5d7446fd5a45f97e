"""The UERANSIM RAN plug-in: configs (config.py) and Compose services (services.py)."""
from __future__ import annotations

from testbed.contract import RanPlugin, Values
from testbed.ran import RanError


class Ueransim(RanPlugin):
    def check_options(self, uu: str | None, values: Values) -> None:
        if uu:
            raise RanError(f"UU={uu}: the AS security choice needs an OpenAirInterface RAN "
                             "(RAN=oai or RAN=split); UERANSIM has no AS security (docs/ran.md)")

    def image_versions(self) -> dict[str, tuple[str, str]]:
        return {"ueransim": ("ueransim", "ueransim_version"), "ueransim_commit": ("ueransim", "ueransim_commit"),
                "iperf3": ("ueransim", "iperf3"), "ping": ("ueransim", "iputils-ping")}
