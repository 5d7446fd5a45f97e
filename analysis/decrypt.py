"""How tshark decrypts a run's own traffic for the per-operation breakdown (docs/analysis.md
"Decryption"): the key files a run exported (kind `keylog`, testbed/keylog/) handed to the run's
overlay plug-in, whose `decryption` gives tshark's arguments or says why it cannot (TLS: the NFs'
key log; IPsec: the ESP SAs from charon's key log; WireGuard, DTLS: nothing the tools export).

Validity is never judged on decrypted traffic (testbed/validity.py reads the encrypted capture):
decryption only feeds the breakdown. Key files are opened by tshark, never copied into an output.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.parse.sbi_ops import CLEAR, Decode
from analysis.results import RawFile, Run
from testbed import registry
from testbed.contract import Decryption
from testbed.keylog import KIND


@dataclass(frozen=True)
class Plan:
    decode: Decode | None        # None: the traffic cannot be read
    status: str                  # cleartext | decrypted (...) | not decrypted: <why>


def key_files(run: Run, iteration: object) -> list[RawFile]:
    return [f for f in run.files(KIND) if f.attrs.get("iteration") == iteration]


def _decode(d: Decryption, inputs: list[Path]) -> Plan:
    note = f"; {d.note}" if d.note else ""
    return Plan(Decode(prefs=d.prefs, extra=d.extra, inputs=tuple(inputs), label=d.label, carrier=d.carrier),
                f"decrypted ({d.description or d.label}{note})")


def plan(run: Run, capture: RawFile) -> Plan:
    """How to read one SBI capture of a run."""
    overlay = registry.overlay(run.protocol)
    if not overlay.protects:
        return Plan(CLEAR, "cleartext")
    plane = str(run.get("plane") or "sbi")
    if "sbi" not in plane.split(",") and plane != "all":
        return Plan(CLEAR, f"cleartext (the overlay covers {plane}, not the SBI)")
    files = key_files(run, capture.attrs.get("iteration"))
    if not overlay.key_sources():
        got = overlay.decryption([])
        return _decode(got, []) if isinstance(got, Decryption) else Plan(None, f"not decrypted: {got}")
    if not files:
        asked = (run.get("parameters") or {}).get("keys")
        return Plan(None, "not decrypted: the run exported no keys" + (
            " (KEYS=1 was set: see the run's log)" if str(asked) == "1" else " (run it with KEYS=1)"))
    missing = [f.path.name for f in files if not f.path.is_file()]
    if missing:
        return Plan(None, f"not decrypted: key file(s) missing: {', '.join(missing)}")
    labels = {k.label for k in overlay.key_sources()}
    paths = [f.path for f in files if f.attrs.get("protocol") in labels]
    got = overlay.decryption(paths)
    return _decode(got, paths) if isinstance(got, Decryption) else Plan(None, f"not decrypted: {got}")


def for_files(protocol_files: dict[str, list[Path]]) -> Decode:
    """The Decode of explicit key files per overlay (the sbi-ops command's --keylog / --esp-keys):
    each overlay plug-in's decryption, merged; ValueError naming what a plug-in could not use."""
    prefs: dict[str, str] = {}
    extra: list[str] = []
    labels: list[str] = []
    inputs: list[Path] = []
    carrier = ""
    for protocol, files in protocol_files.items():
        for f in files:
            if not f.is_file():
                raise FileNotFoundError(f"key file {f} does not exist")
        got = registry.overlay(protocol).decryption(files)
        if not isinstance(got, Decryption):
            raise ValueError(f"{', '.join(map(str, files))}: {got}")
        prefs.update(got.prefs)
        extra += got.extra
        labels.append(got.label)
        inputs += files
        carrier = got.carrier or carrier
    if not labels:
        return CLEAR
    return Decode(prefs=prefs, extra=tuple(extra), inputs=tuple(inputs), label="+".join(labels), carrier=carrier)
