"""WireGuard's run-level check (testbed/contract.py check_run) for run-sbi's cold and warm UEs:
cold = every session forgotten right before UE 1 and new handshakes in that iteration's SBI
capture after that instant; warm = every session younger than 120 s when UE 2 starts. The
records are written by the drivers from wireguard/reset-sessions.sh and `wg show` in the holders."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testbed import planes, tshark
from testbed.contract import RunCheck
from testbed.verdict import Verdict

WG_REKEY_AFTER_S = 120      # WireGuard's REKEY_AFTER_TIME: a session older than this is not warm


def _files(m: Mapping[str, Any], marker: str) -> dict[str, list[str]]:
    """{iteration tag: [file, ...]} of the run-sbi WireGuard holder records with `marker`."""
    out: dict[str, list[str]] = {}
    for f in m["files"]:
        if f["kind"] == "log" and f"-{marker}-" in f["path"]:
            out.setdefault(f["path"].split("-", 1)[0], []).append(f["path"])
    return out


def _stamped(path: Path) -> tuple[int, int, list[int]]:
    """(unix time of the record, time its reset began, every peer's latest handshake) of a holder
    record; the first line is `<time> [<reset began>]` (wireguard/reset-sessions.sh)."""
    lines = [ln.split() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    at = int(lines[0][0])
    return at, int(lines[0][1]) if len(lines[0]) > 1 else at, [int(ln[-1]) for ln in lines[1:]]


def _rosenpass(m: Mapping[str, Any]) -> bool:
    from testbed import profiles
    try:
        return bool(profiles.get(str(m.get("profile"))).params.get("rosenpass"))
    except profiles.ProfileError:
        return False


def _iteration(run_dir: Path, m: Mapping[str, Any], tag: str, files: list[str], warms: list[str],
               port: int) -> tuple[dict[str, Any], list[str]]:
    problems: list[str] = []
    stamps = [_stamped(run_dir / f) for f in files]
    reset_at = max(t for t, _, _ in stamps)
    if any(h != 0 and h < began for _, began, hs in stamps for h in hs) or not any(hs for _, _, hs in stamps):
        problems.append(f"{tag}: sessions left after the reset")
    remade = sum(1 for _, began, hs in stamps for h in hs if h != 0 and h >= began)
    # the iteration's capture of every plane the run covers (itNN-<plane>.pcap)
    pcaps = [run_dir / f"{tag}-{pl}.pcap" for pl in planes.split(str(m["plane"]))]
    times = [float(r[0]) for pcap in pcaps if pcap.is_file()
             for r in tshark.fields(pcap, "wg.type == 1", ["frame.time_epoch"],
                                    extra=["-d", f"udp.port=={port},wg"])]
    new = [t for t in times if t >= reset_at]
    if not new:
        problems.append(f"{tag}: no WireGuard handshake after the reset in "
                        f"{', '.join(p.name for p in pcaps)}: the cold UE's attach did not include them")
    exchanges = None
    if _rosenpass(m):
        # the cold attach uses keys made after the reset: reset-sessions.sh makes each pair's key anew
        # at the initiating end and waits for it, so the exchange lies within the resets (after the
        # first one began), and every pair that exchanged at all must have one there
        from wireguard import rosenpass
        first_began = min(began for _, began, _ in stamps)
        done = [e for pcap in pcaps if pcap.is_file() for e in rosenpass.exchanges(pcap) if e.complete]
        fresh = [e for e in done if e.start >= first_began]
        after = {e.pair for e in fresh}
        stale = {e.pair for e in done} - after
        exchanges = len(fresh)
        if not after or stale:
            problems.append(f"{tag}: no complete Rosenpass exchange after the reset began"
                            + (f" for {', '.join(' and '.join(sorted(p)) for p in sorted(stale, key=sorted))}" if stale else "")
                            + ": the cold UE's attach did not use a new key")
    ages: list[int | None] = []
    for f in warms:
        at, _, hs = _stamped(run_dir / f)
        ages += [at - h if h else None for h in hs]
    if any(a is None or a >= WG_REKEY_AFTER_S for a in ages):
        problems.append(f"{tag}: a session was missing or older than {WG_REKEY_AFTER_S} s when the warm UE started")
    record = {"reset_at": reset_at, "handshakes_after_reset": len(new), "remade_during_reset": remade,
              "warm_max_age_s": max((a for a in ages if a is not None), default=None),
              "rosenpass_exchanges_after_reset": exchanges}
    return record, problems


def sessions(run_dir: Path, m: Mapping[str, Any], port: int) -> tuple[dict[str, Any], Verdict] | None:
    """The cold/warm record and verdict of a run-sbi run; None for other experiments. A session in
    a reset record whose handshake is not older than that reset's start was made after it (the
    live core's NRF heartbeats keep talking; seen in the emulated guest, docs/vm-check.md section
    10): counted, not a leftover."""
    if m.get("experiment") != "sbi":
        return None
    resets, warms = _files(m, "wg-reset"), _files(m, "wg-before-warm")
    problems: list[str] = []
    iters: dict[str, Any] = {}
    for tag, files in sorted(resets.items()):
        iters[tag], found = _iteration(run_dir, m, tag, files, warms.get(tag, []), port)
        problems += found
    if not resets:
        problems.append("no session reset recorded before the cold UE (wg-reset records missing)")
    summary = {"iterations": iters, "problems": problems}
    if problems:
        return summary, Verdict(False, 0, 0, "wireguard cold/warm: " + "; ".join(problems) + " -> INVALID")
    return summary, Verdict(True, 0, 0, f"wireguard cold/warm: {len(iters)} iteration(s), handshakes after "
                            "each reset, warm sessions younger than 120 s")


def check_run(run_dir: Path, m: Mapping[str, Any], port: int) -> list[RunCheck]:
    found = sessions(run_dir, m, port)
    return [] if found is None else [RunCheck(found[1], "wireguard_sessions", found[0])]
