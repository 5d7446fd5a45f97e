"""Manifest-driven discovery of run directories under a results tree.

Layout (docs/contracts.md, "Results"): ``$RESULTS/<campaign>/<experiment>/<profile>/<run>/``
with ``manifest.json`` and the raw files it lists. ``RESULTS`` may be the results root, one
campaign, or a single run directory: every ``manifest.json`` below it is a run. A run is
*usable* for statistics when its state is ``complete``, its ``valid`` flag is ``true`` (false or null: left out) and
every raw file it lists exists; otherwise it is kept (for the report's provenance table) with
the problems that exclude it.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed import runparams

log = logging.getLogger(__name__)
# The runs already warned about in this process: the report reads the results once per table, and
# one warning per left-out run is what a reader can act on.
_WARNED: set[tuple[str, str]] = set()

MANIFEST = "manifest.json"
# the drivers' experiments (testbed/runparams.py), and crypto: make bench-crypto's runs (no network;
# analysis/crypto.py reads them), in the same tree
EXPERIMENTS = (*runparams.EXPERIMENTS, "crypto")


@dataclass(frozen=True)
class RawFile:
    path: Path
    kind: str
    attrs: dict[str, Any]


@dataclass
class Run:
    directory: Path
    manifest: dict[str, Any]
    problems: list[str] = field(default_factory=list)   # why the run is left out
    notes: list[str] = field(default_factory=list)      # caveats that do not exclude it

    def get(self, key: str, default: Any = None) -> Any:
        return self.manifest.get(key, default)

    @property
    def run_id(self) -> str:
        return str(self.manifest.get("run") or self.directory.name)

    @property
    def experiment(self) -> str:
        return str(self.manifest.get("experiment") or self.directory.parent.parent.name)

    @property
    def profile(self) -> str:
        return str(self.manifest.get("profile") or self.directory.parent.name)

    @property
    def campaign(self) -> str:
        return str(self.manifest.get("campaign") or self.directory.parent.parent.parent.name)

    @property
    def protocol(self) -> str:
        return str(self.manifest.get("protocol") or ("none" if self.profile == "baseline" else "unknown"))

    @property
    def is_baseline(self) -> bool:
        return self.protocol == "none"

    @property
    def datapath(self) -> str:
        """``kernel``, ``userspace`` or ``none`` (no overlay, or one without a datapath: TLS); the
        label runs are grouped by."""
        dp = self.manifest.get("datapath") or {}
        if not isinstance(dp, dict):        # make bench-crypto's runs say "cpu": no overlay datapath
            return str(dp)
        if self.is_baseline:
            return "none"
        if dp.get("userspace") is True:
            return "userspace"
        if dp and self.protocol not in dp:
            # an overlay without a kernel/userspace choice (TLS) records `userspace` alone
            # (testbed/manifest.py datapath_for): it has no datapath, as the baseline has none
            return "none"
        if dp.get("userspace") is False:
            return "kernel"
        return "unknown"

    @property
    def usable(self) -> bool:
        return not self.problems

    def files(self, kind: str | None = None) -> list[RawFile]:
        out = []
        for entry in self.manifest.get("files") or []:
            if not isinstance(entry, dict) or "path" not in entry:
                continue
            if kind is not None and entry.get("kind") != kind:
                continue
            attrs = {k: v for k, v in entry.items() if k not in ("path", "kind", "attrs")}
            if isinstance(entry.get("attrs"), dict):
                attrs.update(entry["attrs"])
            out.append(RawFile(self.directory / str(entry["path"]), str(entry.get("kind")), attrs))
        return out

    def provenance(self) -> dict[str, Any]:
        versions = self.manifest.get("versions") or {}
        host = self.manifest.get("host") or {}
        return {
            "campaign": self.campaign, "experiment": self.experiment, "profile": self.profile,
            "run": self.run_id, "protocol": self.protocol, "plane": self.manifest.get("plane"),
            "state": self.manifest.get("state"), "valid": self.manifest.get("valid"),
            "datapath": self.datapath, "started": self.manifest.get("started"),
            "finished": self.manifest.get("finished"),
            "commit": versions.get("testbed_commit"), "dirty": versions.get("testbed_dirty"),
            "host": host.get("hostname"), "kernel": host.get("kernel"), "cpu": host.get("cpu_model"),
            "files": len(self.manifest.get("files") or []),
            "used": self.usable, "problems": "; ".join(self.problems), "notes": "; ".join(self.notes),
        }


def load_run(directory: Path) -> Run:
    path = directory / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(manifest, dict):
            raise ValueError("top level is not an object")
    except (OSError, ValueError) as exc:
        return Run(directory, {}, problems=[f"unreadable manifest {path}: {exc}"])
    run = Run(directory, manifest)
    state = manifest.get("state")
    if state != "complete":
        run.problems.append(f"state is {state!r}, not 'complete'")
    valid = manifest.get("valid")
    if valid is False:
        details = (manifest.get("validity") or {}).get("details", "")
        run.problems.append(f"invalid (validity check failed{': ' + details if details else ''})")
    elif valid is not True:
        # a number whose overlay was never proven is worse than no number: left out
        run.problems.append("validity not checked (valid is null): left out")
    if manifest.get("experiment") not in EXPERIMENTS:
        run.notes.append(f"unknown experiment {manifest.get('experiment')!r}")
    elif manifest.get("secfn") and not str(manifest.get("experiment")).startswith("secfn"):
        run.notes.append(f"the UPF ran security function {manifest['secfn'].get('unit')} (docs/secfn.md)")
    missing = [str(f.path.relative_to(directory)) for f in run.files() if not f.path.is_file()]
    if missing:
        run.problems.append(f"missing raw file(s): {', '.join(missing[:5])}"
                            + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    if run.datapath == "unknown":
        run.notes.append("datapath not recorded")
    return run


def discover(results: Path | str) -> list[Run]:
    """Every run below ``results`` (sorted by path); raises if the directory does not exist."""
    root = Path(results)
    if not root.is_dir():
        raise FileNotFoundError(f"results directory {root} does not exist; run an experiment "
                                "first (make run-...) or pass RESULTS=<dir>")
    runs = [load_run(p.parent) for p in sorted(root.rglob(MANIFEST))]
    if not runs:
        log.warning("no %s below %s: nothing to analyse (is RESULTS right?)", MANIFEST, root)
    for r in runs:
        key = (str(r.directory), "; ".join(r.problems))
        if r.problems and key not in _WARNED:
            _WARNED.add(key)
            log.warning("run %s left out of the statistics: %s", r.directory, key[1])
    log.info("%s: %d runs (%d usable)", root, len(runs), sum(r.usable for r in runs))
    return runs
