"""A security-function run between namespaces (docs/secfn.md; make run-secfn-lab, make run-overlay
PROFILE=... SECFN=...): build the lab (PROFILE's N3 overlay, the UPF's function), captures from
before the first UE packet, test traffic that each seed rule matches, then D-ITG over
PROTOCOLS x RATES x RUNS in a seeded random order; everything into a run directory
results/<campaign>/secfn-lab/<profile>.<secfn>-<engine>/<run>/ whose manifest is valid only when
the captures and the engine prove the function (testbed/secfn/verdict.py via testbed/validity.py).
"""
from __future__ import annotations

import logging
import secrets
from pathlib import Path
from typing import Any

from testbed import manifest as mf
from testbed import registry, validity
from testbed.secfn import collect, ditg, lab, resolve, rules

log = logging.getLogger(__name__)
EXPERIMENT = "secfn-lab"
HERE = Path(__file__).resolve().parent


def _overlay_state(lb: lab.SecfnLab, run_dir: Path, tag: str) -> None:
    """What the overlay negotiated, per endpoint (as run-overlay keeps it; the plug-in's state
    command): <tag>-<node>.txt."""
    cmd = list(registry.overlay(lb.n3.profile.protocol).state_command)
    if not cmd:
        return
    for node in ("gnb", "upf"):
        res = lb.n3.exec(node, cmd)
        rel = f"{tag}-{node}.txt"
        (run_dir / rel).write_text(res.stdout + res.stderr, encoding="utf-8")
        mf.add_file(run_dir, rel, "log", {})


def _flows(lb: lab.SecfnLab, run_dir: Path, order: list[list[Any]], duration: float) -> list[str]:
    problems = []
    (run_dir / collect.DITG_DIR).mkdir(exist_ok=True)
    for proto, rate, i in order:
        tag = ditg.tag(proto, rate, i)
        send_rel, recv_rel = collect.log_names(tag)
        cmd = ditg.send_command(lb.server_address, proto, rate, duration, run_dir / send_rel, run_dir / recv_rel)
        res = lb.exec("ue", cmd, timeout=duration + 60)
        if res.returncode != 0:
            problems.append(f"ITGSend {tag} exited {res.returncode}: {res.stderr.strip()[-200:]}")
            continue
        for rel, side in ((send_rel, "send"), (recv_rel, "recv")):
            try:
                ditg.decode(run_dir / rel)
            except ditg.DitgError as exc:
                problems.append(str(exc))
            if (run_dir / rel).is_file():
                mf.add_file(run_dir, rel, "ditg", {"protocol": proto, "rate": int(rate), "run": int(i), "side": side})
    return problems


def run(results: Path, raw_params: dict[str, str], profile: str, bin_dir: Path,
        state_dir: Path | None = None, rerun_of: str | None = None) -> Path:
    """One run; returns its directory (valid or not: the manifest says). Raises on failure
    after recording it in the manifest. `rerun_of`: the run it repeats (make rerun)."""
    run_dir = mf.create(results, EXPERIMENT, profile, raw_params, rerun_of=rerun_of)
    m = mf.load(run_dir)
    p, sfd = m["parameters"], m["secfn"]
    sf = resolve(sfd["function"], sfd["engine"], queue_maxlen=sfd["queue_maxlen"], fail_open=sfd["fail_open"],
                 queues=sfd["queues"])
    seed = int(p["order_seed"]) or secrets.randbits(32)
    order = [list(f) for f in ditg.plan(p["protocols"], p["rates"], p["runs"], seed)]
    mf.set_field(run_dir, "flows", {"seed": seed, "planned": len(order), "order": order})
    name = f"sf{secrets.token_hex(3)}"
    captures = {"n6": run_dir / "n6.pcap", "ue": run_dir / "ue.pcap"}
    state, reason, died = "complete", None, None
    try:
        lb = lab.SecfnLab(name, sf, run_dir, bin_dir, profile, state_dir=state_dir)
        try:
            lb.up(n3_capture=run_dir / "n3.pcap", captures=captures, capture_packets=p["validation_packets"])
            reported = {k: v for line in lb.datapath.values() for k, v in mf.DATAPATH_LINE.findall(line or "")}
            if reported:
                mf.set_datapath(run_dir, reported)
            _overlay_state(lb, run_dir, "sa-before")
            probe = lb.exec("ue", ["bash", str(HERE / "probe.sh"), lb.server_address, str(rules.DROP_PORT)],
                            timeout=60)
            (run_dir / "probe.log").write_text(probe.stdout + probe.stderr, encoding="utf-8")
            mf.set_field(run_dir, "proof", {"ue_address": lb.ue_address, "probe_exit": probe.returncode})
            problems = _flows(lb, run_dir, order, float(p["duration"]))
            for msg in problems:
                mf.add_event(run_dir, "error", msg)
            if sf.engine and not lb.engine_alive():
                died = "the engine's entrypoint exited during the measurement (engine.log)"
            _overlay_state(lb, run_dir, "sa-after")
            lb.stop("engine")
            lb.stop("server")
        finally:
            lb.down()
        for where in ("n3", *captures):
            if (run_dir / f"{where}.pcap").is_file():
                mf.add_file(run_dir, f"{where}.pcap", "pcap", {"iface": where, "purpose": "validation"})
        collect.finish(run_dir, died)
    except KeyboardInterrupt:
        state, reason = "interrupted", "interrupted (Ctrl-C)"
        raise
    except Exception as exc:        # whatever stopped it: recorded, then passed on
        state, reason = "failed", str(exc)
        raise
    finally:
        try:
            mf.add_unlisted_logs(run_dir)
            if state == "complete":
                validity.check_run(run_dir)
            mf.finish(run_dir, state, reason)
        except mf.ManifestError as exc:
            log.error("could not finish %s: %s", run_dir, exc)
    return run_dir
