"""NAS security algorithms as a dimension of a run (`NAS=nea2-nia2`; docs/nas.md).

A choice is one ciphering and one integrity algorithm from profiles.yaml's `nas` section, id
`nea<i>-nia<j>`. `apply` returns the stack values with the AMF's orders reduced to exactly
that pair, so the AMF can select nothing else; the UE (UERANSIM) supports every algorithm.
`verify_capture` proves the choice from the run's NGAP capture: every Security Mode Command
(integrity protected, never ciphered, so readable) carries the chosen pair.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from testbed import ROOT, tshark

CATALOGUE = ROOT / "profiles.yaml"
ID = re.compile(r"^nea(\d)-nia(\d)$")
SMC = "nas_5gs.mm.message_type == 0x5d"        # Security Mode Command (TS 24.501 8.2.25)


class NasError(ValueError):
    """An unknown NAS choice; the message lists the valid ones."""


@dataclass(frozen=True)
class NasChoice:
    id: str
    ciphering: str             # NEA0 | NEA1 | NEA2
    integrity: str             # NIA1 | NIA2

    @property
    def codes(self) -> tuple[int, int]:
        """(ciphering, integrity) as the type-of-algorithm codes of the NAS security algorithms IE."""
        return int(self.ciphering[-1]), int(self.integrity[-1])


@lru_cache(maxsize=1)
def choices() -> dict[str, NasChoice]:
    cat = yaml.safe_load(CATALOGUE.read_text(encoding="utf-8"))["nas"]
    out = {}
    for enc in cat["ciphering"]:
        for integ in cat["integrity"]:
            cid = f"{enc.lower()}-{integ.lower()}"
            out[cid] = NasChoice(cid, enc, integ)
    return out


def get(choice_id: str) -> NasChoice:
    try:
        return choices()[choice_id]
    except KeyError:
        raise NasError(f"unknown NAS choice {choice_id!r}; valid: {', '.join(choices())} "
                       "(empty: the stack's default orders)") from None


def apply(values: dict[str, Any], choice_id: str | None) -> dict[str, Any]:
    """The stack values with the AMF offering exactly this pair (unchanged for None/'')."""
    if not choice_id:
        return values
    c = get(choice_id)
    out = copy.deepcopy(values)
    out["open5gs"]["ciphering_order"] = [c.ciphering]
    out["open5gs"]["integrity_order"] = [c.integrity]
    out["nas_choice"] = c.id
    return out


@dataclass(frozen=True)
class NasVerdict:
    valid: bool
    smc_seen: int
    details: str


def security_mode_commands(pcap: Path) -> list[tuple[int, int, int]]:
    """[(frame, ciphering code, integrity code)] of every Security Mode Command in the capture."""
    rows = tshark.fields(pcap, SMC, ["frame.number", "nas_5gs.mm.nas_sec_algo_enc",
                                     "nas_5gs.mm.nas_sec_algo_ip"])
    out = []
    for r in rows:
        for enc, integ in zip(r[1].split(","), r[2].split(",")):
            out.append((int(r[0]), int(enc), int(integ)))
    return out


def verify_capture(pcap: Path, choice_id: str) -> NasVerdict:
    """Valid when at least one Security Mode Command is seen and every one carries the choice."""
    c = get(choice_id)
    smcs = security_mode_commands(pcap)
    if not smcs:
        return NasVerdict(False, 0, f"no NAS Security Mode Command in {pcap.name}: the choice "
                          f"{c.id} cannot be proven (was the capture on N2 from before the attach?)")
    wrong = [(f, e, i) for f, e, i in smcs if (e, i) != c.codes]
    if wrong:
        f, e, i = wrong[0]
        return NasVerdict(False, len(smcs), f"{len(wrong)} of {len(smcs)} Security Mode Commands "
                          f"select NEA{e}/NIA{i}, not {c.ciphering}/{c.integrity} (first: frame {f})")
    return NasVerdict(True, len(smcs), f"{len(smcs)} Security Mode Command(s), all "
                      f"{c.ciphering}/{c.integrity}")
