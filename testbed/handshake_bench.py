"""The handshake micro-benchmark (`make bench-handshake`, docs/experiments.md "Handshakes"): what one
handshake of a profile costs between two network namespaces on this host, with the real daemons and
libraries, many handshakes per boot.

A boot: a namespace lab (testbed/netns.py) of the first link of the profile's plane (n3: gnb -> upf;
sbi: the first NF pair of the channel map), the bridge captured from before anything starts; the
overlay's entrypoint brings the tunnel up (IPsec, WireGuard) or, for an overlay that lives in the NFs
(TLS), the plug-in's bench responder serves on the responding node; then the plug-in's rehandshake
script makes HANDSHAKES fresh handshakes from the initiating node, one after another; a ping (tunnel
overlays) puts protected data on the wire; the capture stops and the lab goes down. Per boot, the
plug-in's capture check gives the verdict (a post-quantum profile proves its key exchange there) and
its handshake_records the rows (time first to last packet on the capture's clock, packets, bytes per
message). Replications are boots: analysis/pq.py takes the per-boot means and their 99 % intervals.

Output: <results>/<campaign>/handshakes/<profile>/<run>/boot-NN.pcap, handshakes.csv (one row per
handshake: boot, phase `boot` for the overlay's own start-up handshake or `bench`), manifest.json
(profile, plane, nodes, boots, versions, each boot's verdict) and the rehandshake scripts' output.
Needs root (namespaces); the profile's tools (e.g. IPSEC_ROOT, TLS_ROOT for newer strongSwan/OpenSSL).
"""
from __future__ import annotations

import csv
import datetime as dt
import json
import os
import secrets
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testbed import channels, keys, netns, planes, profiles, registry

SCHEMA = "handshake-bench/1"
DEFAULT_BOOTS = 5
DEFAULT_HANDSHAKES = 20
RESPONDER_WAIT_S = 15.0


class BenchError(RuntimeError):
    """The benchmark cannot run or a boot failed; the message says why and what to do."""


def pair(profile: profiles.Profile, plane: str, values: dict[str, Any]) -> tuple[str, str]:
    """(initiator, responder): the first link of the plane's channel map, the node whose name sorts
    first initiating (as the IPsec and WireGuard overlays do in start mode)."""
    links = channels.links(planes.split(plane), values)
    if not links:
        raise BenchError(f"no link on the {plane} plane in the channel map")
    a, b = sorted((links[0].a, links[0].b))
    return a, b


def _scripts(overlay: Any) -> tuple[Path, Path | None]:
    if not overlay.rehandshake:
        raise BenchError(f"the {overlay.name} overlay has no rehandshake script: its handshakes cannot be benchmarked")
    resp = overlay.folder / overlay.bench_responder if overlay.bench_responder else None
    if not overlay.entrypoint and resp is None:
        raise BenchError(f"the {overlay.name} overlay has neither an entrypoint nor a bench responder")
    return overlay.folder / overlay.rehandshake, resp


def _responder(lab: netns.Lab, node: str, script: Path, rendered: Path, log_path: Path,
               port_check: tuple[str, int] | None) -> subprocess.Popen[bytes]:
    """Start the bench responder in the node's namespace; returns once it accepts (TCP) or at once."""
    with open(log_path, "ab") as logf:
        proc = subprocess.Popen(["ip", "netns", "exec", lab.netns(node), "bash", str(script), str(rendered)],
                                stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    deadline = time.monotonic() + RESPONDER_WAIT_S
    while port_check and time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchError(f"the bench responder of {node} exited: {log_path.read_text()[-400:]}")
        res = lab.exec(node, ["ss", "-ltnH", f"sport = :{port_check[1]}"])
        if res.stdout.strip():
            return proc
        time.sleep(0.1)
    if port_check:
        raise BenchError(f"the bench responder of {node} did not listen on port {port_check[1]} within "
                         f"{RESPONDER_WAIT_S:.0f}s: {log_path.read_text()[-400:]}")
    return proc


def boot(profile: profiles.Profile, plane: str, count: int, run_dir: Path, index: int,
         state_dir: Path, keys_dir: Path, values: dict[str, Any]) -> dict[str, Any]:
    """One boot: lab up with a capture, `count` handshakes, down. Returns the boot's record."""
    overlay = registry.overlay(profile.protocol)
    rehandshake, responder = _scripts(overlay)
    a, b = pair(profile, plane, values)
    name = f"hs{index:02d}-{secrets.token_hex(2)}"
    lab = netns.Lab(name, plane, profile.id if overlay.entrypoint else "baseline", nodes=[a, b],
                    state_dir=state_dir, keys_dir=keys_dir, values=values)
    pcap = run_dir / f"boot-{index:02d}.pcap"
    log_path = run_dir / f"boot-{index:02d}.log"
    server = None
    try:
        lab.up(capture=pcap)
        rendered = (lab.dir / "render") if overlay.entrypoint else (lab.dir / "bench-render")
        if not overlay.entrypoint:
            if responder is None:
                raise BenchError(f"the {overlay.name} overlay has no bench responder")
            overlay.render(profile, plane, lab.values, keys_dir, rendered, nodes=[a, b])
            port = int(lab.values.get("sbi_port", 0)) or None
            server = _responder(lab, b, responder, rendered / b, log_path,
                                (lab.address(b), port) if port else None)
        began = time.time()
        with open(log_path, "a", encoding="utf-8") as logf:
            for _ in range(count):
                res = lab.exec(a, ["bash", str(rehandshake), str(rendered / a), lab.address(b)], timeout=120)
                logf.write(res.stdout + res.stderr)
                if res.returncode != 0:
                    raise BenchError(f"boot {index}: handshake from {a} to {b} failed: {res.stderr.strip()[-400:]}")
            if overlay.entrypoint:
                lab.exec(a, ["ping", "-c", "1", "-W", "2", lab.address(b)])
        if lab.boot_capture is not None:
            lab.boot_capture.stop()
        verdict = overlay.verify_capture(pcap, profile, plane, lab.values)
        rows = overlay.handshake_records(pcap, profile)
    finally:
        if server is not None:
            os.killpg(server.pid, 15)
            server.wait(timeout=10)
        lab.down()
    for r in rows:
        r["phase"] = "bench" if float(r.get("start", 0)) >= began - 0.001 else "boot"
    bench = [r for r in rows if r["phase"] == "bench"]
    problems = [] if len(bench) >= count else [f"{len(bench)} complete handshakes in the capture, {count} made"]
    return {"boot": index, "pcap": pcap.name, "valid": verdict.valid and not problems,
            "verdict": verdict.details + ("; INVALID: " + "; ".join(problems) if problems else ""),
            "initiator": a, "responder": b, "rows": rows}


def run(results: Path, campaign: str, profile_id: str, plane: str | None, boots: int, count: int,
        state_dir: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The whole benchmark; returns the run dir. BenchError when it cannot run. `env`: the
    environment as the command line read it (testbed/environment.py); the manifest records the
    profile's root variable from it (IPSEC_ROOT, TLS_ROOT: the Debian root its tools ran from)."""
    if os.geteuid() != 0:
        raise BenchError("needs root (network namespaces): sudo make bench-handshake ...")
    if boots < 2 or count < 1:
        raise BenchError(f"--boots must be >= 2 (intervals over boots) and --handshakes >= 1, got {boots}, {count}")
    prof = profiles.get(profile_id, plane)
    plane = plane or prof.planes[0]
    overlay = registry.overlay(prof.protocol)
    state = state_dir or keys.default_state_dir()
    # the values as the lab sees them (the RAN variant of the plane's nodes: testbed/ran)
    values = netns.Lab("hsprobe", plane, prof.id if overlay.entrypoint else "baseline", state_dir=state).values
    keys_dir = keys.ensure(state, values)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    run_dir = results / (campaign or "adhoc") / "handshakes" / prof.id / f"{stamp}-{secrets.token_hex(2)}"
    run_dir.mkdir(parents=True)
    manifest: dict[str, Any] = {
        "schema": SCHEMA, "profile": prof.id, "protocol": prof.protocol, "plane": plane,
        "params": prof.params, "boots": boots, "handshakes_per_boot": count, "host": socket.gethostname(),
        "started": stamp, "versions": overlay.versions(),
        "roots": {k: v for k, v in (env or {}).items() if k == f"{prof.protocol.upper()}_ROOT" and v},
        "boot_records": []}
    all_rows: list[dict[str, Any]] = []
    for i in range(1, boots + 1):
        rec = boot(prof, plane, count, run_dir, i, state, keys_dir, values)
        all_rows += [{"boot": i, **r} for r in rec.pop("rows")]
        manifest["boot_records"].append(rec)
    manifest["valid"] = all(r["valid"] for r in manifest["boot_records"])
    (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    fields = sorted({k for r in all_rows for k in r}, key=lambda k: (k not in ("boot", "phase", "handshake_ms"), k))
    with open(run_dir / "handshakes.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(all_rows)
    return run_dir
