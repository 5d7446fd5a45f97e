"""MACsec's run-level check (testbed/contract.py check_run), beside the capture's verdict: what
the capture cannot show, the cipher suite and the SecY settings, from each endpoint's own
`ip -s macsec show` (the plug-in's state command, kept by the drivers as *sa-before*/*sa-after*
logs): the profile's suite, protect/encrypt on, strict validation, the SCI in the SecTAG, the
transmit SA in use and a receive channel with an SA in use for every partner, all keys of one
render."""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from macsec import overlay
from testbed import stack
from testbed.profiles import Profile
from testbed.verdict import Verdict

_RECORD = re.compile(r"^(.*?)-?sa-(before|after)-(.+)\.txt$")     # [itNN-]sa-after-<node>.txt
_SECY = re.compile(rf"^\d+: {overlay.IFNAME}: (.*)$", re.M)
_SUITE = re.compile(r"cipher suite: (\S+), using ICV length (\d+)")
_TXSC = re.compile(r"TXSC: ([0-9a-f]{16}) on SA (\d)")
_RXSC = re.compile(r"RXSC: ([0-9a-f]{16}), state (on|off)")
# an SA line: "0: PN 213, state on, key <id>"; the XPN suites: "0: PN 1,SSCI 0a640332 state on, key <id>"
_SA = re.compile(r"^\s+(\d): PN (\d+),(?:\s?SSCI [0-9a-f]+)? state (on|off), key ([0-9a-f]+)\s*$")
_SECTION = re.compile(r"^\s*(TXSC|RXSC):|^\d+: ")


def sections(text: str) -> list[tuple[str, dict[str, tuple[str, str]]]]:
    """[(TXSC/RXSC line, {an: (state, key id)} of its SA lines)], in order; the SA lines are the
    ones up to the next channel or link (`-s` puts statistics lines between them)."""
    out: list[tuple[str, dict[str, tuple[str, str]]]] = []
    for line in text.splitlines():
        if _SECTION.match(line):
            out.append((line.strip(), {}))
        elif out and (m := _SA.match(line)):
            out[-1][1][m.group(1)] = (m.group(3), m.group(4))
    return [s for s in out if s[0].startswith(("TXSC:", "RXSC:"))]


def record_problems(text: str, prof: Profile, node: str, values: dict[str, Any], plane: str) -> list[str]:
    """What is wrong in one node's `ip macsec show` against the profile and the channel map."""
    secy = _SECY.search(text)
    if secy is None:
        return [f"no {overlay.IFNAME} in the record"]
    flags, p = secy.group(1), prof.params
    problems = [f"{want!r} missing from its settings" for want in
                ("protect on", "validate strict", "encrypt on", "send_sci on",
                 f"replay on window {p['replay_window']}") if want not in flags]
    suite = _SUITE.search(text)
    if suite is None or suite.groups() != (p["cipher_label"], str(p["icv_len"])):
        problems.append(f"cipher suite {suite.groups() if suite else None}, profile wants "
                        f"{p['cipher_label']} with a {p['icv_len']}-octet ICV")
    net = overlay.network_of(plane)
    chans = sections(text)
    key_ids = {k for _, sas in chans for _, k in sas.values()}
    want_sci = overlay.sci_of(stack.address(node, net, values))
    tx = [(m, sas) for line, sas in chans if (m := _TXSC.match(line))]
    if not any(m.group(1) == want_sci and sas.get(m.group(2), ("off",))[0] == "on" for m, sas in tx):
        problems.append(f"no transmit channel {want_sci} with its SA in use")
    rx = {m.group(1): (m.group(2), sas) for line, sas in chans if (m := _RXSC.match(line))}
    for peer in overlay.partners(node, plane, values):
        sci = overlay.sci_of(stack.address(peer, net, values))
        state, sas = rx.get(sci, ("missing", {}))
        if state != "on" or not any(st == "on" for st, _ in sas.values()):
            problems.append(f"receive channel {sci} ({peer}) {state}, without an SA in use")
    if len({k[:24] for k in key_ids}) > 1:
        problems.append(f"keys of different renders: {sorted(key_ids)}")
    return problems


def records(run_dir: Path, m: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """{[itNN-]sa-before|after: {node: text}} of the run's state records."""
    out: dict[str, dict[str, str]] = {}
    for f in m["files"]:
        hit = _RECORD.match(Path(f["path"]).name) if f["kind"] == "log" else None
        if hit and (run_dir / f["path"]).is_file():
            key = f"{hit.group(1) + '-' if hit.group(1) else ''}sa-{hit.group(2)}"
            out.setdefault(key, {})[hit.group(3)] = (run_dir / f["path"]).read_text(encoding="utf-8", errors="replace")
    return out


def check_run(run_dir: Path, m: Mapping[str, Any], prof: Profile, values: dict[str, Any]) -> Verdict:
    plane = str(m["plane"])
    recs = records(run_dir, m)
    problems = [] if recs else ["no `ip macsec show` record of the endpoints"]
    for tag, by_node in sorted(recs.items()):
        for node in overlay.endpoints(plane, values):
            text = by_node.get(node)
            problems += ([f"{tag}-{node}: no record"] if text is None else
                         [f"{tag}-{node}: {x}" for x in record_problems(text, prof, node, values, plane)])
    if problems:
        return Verdict(False, 0, 0, "MACsec SecY: " + "; ".join(problems[:4]) + " -> INVALID")
    return Verdict(True, 0, 0, f"MACsec SecY: {sum(len(v) for v in recs.values())} record(s), exactly "
                   f"{prof.params['cipher_label']}, encrypted, strict validation, every partner's channel in use")
