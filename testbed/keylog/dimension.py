"""Key export as a render dimension (testbed/dimensions.py, docs/contracts.md): `--keys` (default
$KEYS: 1/yes/true) asks every Open5GS SBI NF of a TLS profile to write its TLS key log
(`OGS_SBI_TLS_KEYLOG`, patches/open5gs/0003-sbi-tls-keylog.patch) into its tmpfs, where the driver
reads it at the end of the iteration (scripts/lib/keylog.sh). IPsec needs nothing rendered: charon
logs its CHILD_SA keys in every run alike (testbed/overlays/ipsec.py strongswan_conf), KEYS=1 only
makes the driver copy them. Render itself never names it."""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed.keylog import NF_KEYLOG

NAME = "keylog"
YES = ("1", "yes", "true")


@dataclass(frozen=True)
class KeylogDimension:
    """Key export in use (implements dimensions.Dimension)."""

    @property
    def name(self) -> str:
        return NAME

    def render(self, profile: Any, plane: str, values: dict[str, Any], out_dir: Path) -> dict[str, str]:
        return {"KEYS": "1"}

    def compose_services(self, profile: Any, plane: str, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {}

    def describe(self, env: dict[str, str]) -> str:
        return ("key export: TLS key logs of the SBI NFs (TLS profiles) and charon's ESP keys are kept for "
                "the per-operation breakdown (secrets: 0600 in the run dir, never in a report)")

    def nf_environment(self, node: str, profile: Any, values: dict[str, Any]) -> dict[str, str]:
        """The key log switch of patch 0003, for the Open5GS NFs on the SBI of a TLS profile."""
        if getattr(profile, "protocol", "") != "tls":
            return {}
        if "sbi" not in (values["nodes"].get(node, {}).get("networks") or {}):
            return {}
        return {"OGS_SBI_TLS_KEYLOG": NF_KEYLOG}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keys", action="store_true", default=os.environ.get("KEYS", "").lower() in YES,
                        help="export the key material of the run's own traffic for the per-operation "
                             "breakdown (default: $KEYS; docs/analysis.md)")


def select(args: argparse.Namespace, profile: Any, plane: str) -> KeylogDimension | None:
    return KeylogDimension() if getattr(args, "keys", False) else None
