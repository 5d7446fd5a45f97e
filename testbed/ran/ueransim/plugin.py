"""The UERANSIM RAN plug-in: configs (config.py) and Compose services (services.py)."""
from __future__ import annotations

from typing import Any, ClassVar

from testbed.contract import RanPlugin, Values
from testbed.ran import RanError
from testbed.ran.ueransim import services


class Ueransim(RanPlugin):
    name: ClassVar[str] = "ueransim"
    services_module: ClassVar[Any] = services
    pinned_key: ClassVar[str] = "ueransim_version"
    summary: ClassVar[str] = "UERANSIM 3.2.7 gNB and UEs (the default RAN)"

    def nodes(self, values: Values) -> list[str]:
        return services.nodes(self.name, values)

    def env_nodes(self) -> list[str]:
        return services.env_nodes(self.name)

    def check_options(self, uu: str | None, values: Values) -> None:
        if uu:
            raise RanError(f"UU={uu}: the AS security choice needs an OpenAirInterface RAN "
                             "(RAN=oai or RAN=split); UERANSIM has no AS security (docs/ran.md)")

    def image_versions(self) -> dict[str, tuple[str, str]]:
        return {"ueransim": ("ueransim", "ueransim_version"), "ueransim_commit": ("ueransim", "ueransim_commit"),
                "iperf3": ("ueransim", "iperf3"), "ping": ("ueransim", "iputils-ping")}
