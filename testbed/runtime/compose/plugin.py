"""The default runtime: the Compose files the core renders, started by scripts/up.sh on one host."""
from __future__ import annotations

from collections.abc import Mapping

from testbed.contract import RuntimeOptionError, RuntimePlugin
from testbed.placement import Placement


class Compose(RuntimePlugin):
    def check_options(self, placement: Placement, options: Mapping[str, str]) -> None:
        if placement:
            raise RuntimeOptionError("PLACEMENT: Compose runs every NF on this one host; placing NFs "
                                     "on nodes needs ENGINE=k8s (docs/kubernetes.md)")
