"""Published values to set beside our measurements, loaded from their data file.

The values, their papers, sections, words and what each is matched with are data:
``analysis/references.yaml`` (transcribed from ``tests/data/reference/published-values.md``, the
project's digest of the papers' printed values; docs/methodology.md cites each paper). This module
turns them into ``Reference`` objects: ``REFERENCES`` (the 5G core papers and the throughput
source), ``RAN_REFERENCES`` (the RAN paper, matched by analysis/ran_report.py), ``PAPERS`` and
``AUTHORS_SETUPS`` (what the RAN study's published files call their setups, in our terms).

``match`` names which of our summary-table rows measure the same thing (columns of
``analysis.tables``; a tuple value matches any of its items; ``cipher_contains`` matches a
substring of the cipher); ``aggregate`` says whether the paper's number is a mean over its
configurations or its slowest (max) or fastest (min) one. Hosts differ from the papers'
(i7-13700, kernel 6.5, AES-NI), so compare overheads and orderings, not absolute times.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).resolve().with_name("references.yaml")


@dataclass(frozen=True)
class Paper:
    key: str
    cite: str                           # "Michaelides et al., WiSec 2025"
    protocol: str | None = None         # the protocol the paper studies alone (its figure's rows)
    modes: tuple[str, ...] = ()         # the values of the profile parameter `mode` it ran


@dataclass(frozen=True)
class Reference:
    key: str
    source: str                 # paper
    section: str                # where in the paper / REFERENCE.md
    table: str                  # analysis.tables name the measured value comes from
    quantity: str               # column of that table: overhead, overhead_pct, mean, cpu_s_per_ue
    value: float | None         # None: the paper states it only qualitatively
    unit: str
    text: str                   # the paper's statement
    match: dict[str, Any] = field(default_factory=dict)
    scale: float = 1.0          # measured * scale is in ``unit`` (ms -> us: 1000)
    range: tuple[float, float] | None = None   # when the paper gives a range instead of one value
    aggregate: str = "mean"     # the paper's number over its configurations: mean | max (slowest) | min (fastest)
    paper_ci: str = "not printed"   # the paper's own interval, where it prints one

    def paper_value(self) -> str:
        if self.range is not None:
            return f"{self.range[0]:g} to {self.range[1]:g} {self.unit}"
        if self.value is None:
            return "(qualitative)"
        return f"{self.value:g} {self.unit}"


def _tuples(value: Any) -> Any:
    """YAML lists as tuples (a match value that is a sequence matches any of its items)."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def _reference(entry: dict[str, Any], papers: dict[str, Paper]) -> Reference:
    e = dict(entry)
    return Reference(key=str(e.pop("key")), source=papers[e.pop("paper")].cite, section=str(e.pop("section")),
                     table=str(e.pop("table")), quantity=str(e.pop("quantity")),
                     value=None if e.get("value") is None else float(e.pop("value")), unit=str(e.pop("unit")),
                     text=str(e.pop("text")), match=_tuples(e.pop("match", {})),
                     scale=float(e.pop("scale", 1.0)),
                     range=tuple(float(v) for v in e.pop("range")) if e.get("range") else None,
                     aggregate=str(e.pop("aggregate", "mean")), paper_ci=str(e.pop("paper_ci", "not printed")))


def _tls2024_groups(spec: dict[str, Any], papers: dict[str, Paper]) -> list[Reference]:
    source = papers[spec["paper"]].cite
    return [Reference(f"{g['key']}-{role}", source, spec["section"], "attach", "overhead_pct", float(g[role]), "%",
                      f"{g['words']}: {float(g[role]):.2f} % {role}",
                      {"experiment": "sbi", "profile": _tuples(spec["profiles"]), **_tuples(g["match"]), "role": role})
            for g in spec["groups"] for role in ("cold", "warm")]


def _throughputs(spec: dict[str, Any], papers: dict[str, Paper]) -> list[Reference]:
    source = papers[spec["paper"]].cite
    return [Reference(f"tp-{g['key']}-{transport}", source, f"IPv4 {transport.upper()}", "throughput", "mean",
                      float(g[transport]), "Mbit/s", f"{g['words']} {g[transport]:g} Mbit/s ({transport.upper()})",
                      {**_tuples(g["match"]), "transport": transport})
            for g in spec["groups"] for transport in ("tcp", "udp")]


@dataclass(frozen=True)
class Published:
    """Everything the data file holds."""
    papers: dict[str, Paper]
    references: tuple[Reference, ...]
    ran_references: tuple[Reference, ...]
    sets: dict[str, tuple[str, ...]]
    authors_setups: dict[str, dict[str, Any]]


def load(path: Path = DATA) -> Published:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    papers = {k: Paper(k, str(v["cite"]), v.get("protocol"), tuple(v.get("modes") or ()))
              for k, v in data["papers"].items()}
    refs = (*(_reference(e, papers) for e in data["references"]),
            *_tls2024_groups(data["tls2024_groups"], papers), *_throughputs(data["throughputs"], papers))
    return Published(papers, refs, tuple(_reference(e, papers) for e in data["ran_references"]),
                     {k: tuple(v) for k, v in data["sets"].items()}, data["authors_setups"])


_DATA = load()
PAPERS, REFERENCES, RAN_REFERENCES = _DATA.papers, _DATA.references, _DATA.ran_references
SETS, AUTHORS_SETUPS = _DATA.sets, _DATA.authors_setups
WISEC2025, WISEC2024, WISEC2026 = (PAPERS[k].cite for k in ("wisec2025", "wisec2024", "wisec2026"))


def by_key(key: str) -> Reference:
    """A published value by key, from REFERENCES or RAN_REFERENCES."""
    every = REFERENCES + RAN_REFERENCES
    for r in every:
        if r.key == key:
            return r
    raise KeyError(f"no reference {key!r}; valid: {', '.join(r.key for r in every)}")


def paper_modes() -> tuple[str, ...]:
    """Every value of the profile parameter `mode` some paper ran."""
    return tuple(dict.fromkeys(m for p in PAPERS.values() for m in p.modes))
