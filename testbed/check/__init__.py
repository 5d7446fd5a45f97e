"""`make check-config`: the consistency checker for compose files and rendered configs.

It parses the compose files of a render (base + SCP + overlay fragment), interpolated with
the render's compose.env, every Open5GS/gNB/UE config mounted into a container, the
provisioning input and nf-configs/stack.yaml, and reports every mismatch with file and key:
addresses an NF config names that are not the right service's address on the right network,
duplicate or out-of-subnet addresses, mounted files that do not exist, PLMN/TAC/S-NSSAI/DNN
disagreements, UE credentials that differ from the provisioned subscribers, dependency cycles,
and services holding more privilege than their role (nf-configs/privileges.yaml).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from testbed import ROOT


@dataclasses.dataclass(frozen=True)
class Finding:
    file: Path
    key: str
    message: str
    kind: str            # address | duplicate | subnet | mount | plmn | credentials | cycle | reference | syntax | privilege | role

    def format(self, root: Path = ROOT) -> str:
        try:
            shown = str(Path(self.file).resolve().relative_to(Path(root).resolve()))
        except ValueError:
            shown = str(self.file)
        return f"{shown}: {self.key}: {self.message}"


def check_render(render_dir: Path, stack_file: Path | None = None,
                 keys_root: Path | None = None) -> list[Finding]:
    """All findings for one render dir (see testbed.check.rules)."""
    from testbed.check import rules
    return rules.run(Path(render_dir), stack_file, keys_root)


def summary(findings: list[Finding]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.kind] = counts.get(f.kind, 0) + 1
    return counts
