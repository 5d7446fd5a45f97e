"""The OpenAirInterface RAN plug-ins: RAN=oai (monolithic gNB) and RAN=split (CU-CP, CU-UP, DU and
their F1-C, F1-U and E1 interfaces). Configs: config.py (libconfig.py); services: services.py."""
from __future__ import annotations

from testbed.contract import RanPlugin, Values
from testbed.ran import RanError
from testbed.ran.oai import config, services


class Oai(RanPlugin):
    def check_options(self, uu: str | None, values: Values) -> None:
        if uu:
            try:
                config.security(values, uu)
            except config.OaiConfigError as exc:      # names the valid choices
                raise RanError(str(exc)) from None

    def image_versions(self) -> dict[str, tuple[str, str]]:
        return {"oai": ("oai", "oai_version"), "oai_commit": ("oai", "oai_commit"),
                "iperf3": ("oai", "iperf3"), "ping": ("oai", "iputils-ping")}


class Split(Oai):
    planes = services.SPLIT_NETWORKS
