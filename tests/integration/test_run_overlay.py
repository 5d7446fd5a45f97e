"""scripts/run-overlay.sh and scripts/campaign.sh for real: namespaces, overlays, ping, capture,
manifest, validity. Small counts; real strongSwan (kernel-libipsec where the kernel has no ESP),
real WireGuard (wireguard-go where there is no module), real tshark/dumpcap.
"""
from __future__ import annotations

import json
import sys
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from testbed import manifest
from tests.conftest import ROOT, require_root, require_tools
from tests.integration.labs import pids_in

pytestmark = pytest.mark.netns

DRIVER = ROOT / "scripts" / "run-overlay.sh"
CAMPAIGN = ROOT / "scripts" / "campaign.sh"
SMALL = {"SETS": "2", "PINGS": "10", "INTERVAL": "0.01", "WARMUP": "3", "SIZES": "64 1024", "BOOTS": "1"}


def _lab_name() -> str:
    return f"drivers-{secrets.token_hex(3)}"


def _env(results: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("SIZES", "SETS", "PINGS", "INTERVAL", "WARMUP", "CAMPAIGN", "SLOT", "DRY_RUN", "BOOTS", "BOOT")}
    env.update(SMALL)
    env.update({"RESULTS": str(results), "LAB_NAME": _lab_name()})
    env.update(extra)
    return env


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _run(profile: str, results: Path, timeout: float = 240, via_make: bool = False,
         **extra: str) -> subprocess.CompletedProcess[str]:
    env = _env(results, PROFILE=profile, **extra)
    argv = (["make", "--no-print-directory", "run-overlay"] if via_make else ["bash", str(DRIVER)])
    before = _namespaces()
    try:
        return subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=timeout, check=False)
    finally:
        leaked = {n for n in _namespaces() - before if n.startswith(env["LAB_NAME"])}
        for ns in leaked:      # never leave namespaces behind, even when the test fails
            subprocess.run(["ip", "netns", "delete", ns], check=False)
        assert not leaked, f"driver left namespaces behind: {leaked}"


def _only_run(results: Path, profile: str, campaign: str = "adhoc") -> Path:
    runs = manifest.runs(results, campaign, "overlay", profile)
    assert len(runs) == 1, runs
    return runs[0]


@pytest.fixture
def overlay_env() -> None:
    require_root()
    require_tools("ip", "ping", "tshark", "dumpcap", "unshare", "nsenter")


def _check_complete_valid(run_dir: Path, profile: str, protocol: str) -> dict:
    m = manifest.load(run_dir)
    assert manifest.validate(m) == []
    assert (m["state"], m["valid"], m["profile"], m["protocol"], m["experiment"]) == \
        ("complete", True, profile, protocol, "overlay")
    assert m["validity"]["plaintext_packets"] >= (1 if protocol == "none" else 0)
    if protocol != "none":
        assert m["validity"]["protected_packets"] > 0
    assert m["parameters"]["sizes"] == [64, 1024] and m["parameters"]["sets"] == 2
    pings = [f for f in m["files"] if f["kind"] == "ping"]
    measured = sorted((f["size"], f["set"]) for f in pings if not f["warmup"])
    assert measured == [(64, 1), (64, 2), (1024, 1), (1024, 2)]
    assert [f for f in pings if f["warmup"]], "warm-up kept"
    for f in pings:
        text = (run_dir / f["path"]).read_text()
        replies = re.findall(r"^\[\d+\.\d+\] \d+ bytes from .*icmp_seq=(\d+) .*time=[\d.]+ ms$", text, re.M)
        assert replies, f"{f['path']}: no timestamped replies (LC_ALL=C ping -D -n)"
        if not f["warmup"]:
            assert f"{10} packets transmitted" in text
    pcaps = sorted((f for f in m["files"] if f["kind"] == "pcap"), key=lambda f: f["path"])
    want = [{"path": "n3.pcap", "kind": "pcap", "iface": "n3", "purpose": "validation",
             "bytes": (run_dir / "n3.pcap").stat().st_size}]
    if protocol != "none":      # every interface out of each endpoint's namespace, judged for leaks
        want = [{"path": f"{node}-ifaces.pcap", "kind": "pcap", "iface": "n3", "purpose": "leak", "node": node,
                 "bytes": (run_dir / f"{node}-ifaces.pcap").stat().st_size} for node in ("gnb",)] + want \
            + [{"path": "upf-ifaces.pcap", "kind": "pcap", "iface": "n3", "purpose": "leak", "node": "upf",
                "bytes": (run_dir / "upf-ifaces.pcap").stat().st_size}]
        assert m["validity"]["details"].count("every interface of the namespace: 0 packets of n3 in the clear") == 2
    assert pcaps == want
    assert any("ping -D -n" in c for c in m["commands"])
    listed = {f["path"] for f in m["files"]} | {"manifest.json"}
    assert {p.name for p in run_dir.iterdir()} <= listed, "every file of the run is in the manifest"
    return m


@pytest.fixture(scope="module")
def baseline_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real baseline run, shared by the tests that only read it (or copy it)."""
    require_root()
    require_tools("ip", "ping", "tshark", "dumpcap", "unshare", "nsenter")
    results = tmp_path_factory.mktemp("baseline-results")
    res = _run("baseline", results, via_make=True)      # through `make run-overlay`, as users do
    assert res.returncode == 0, res.stderr[-3000:]
    return results


def test_baseline_run_is_complete_and_valid(baseline_results: Path) -> None:
    m = _check_complete_valid(_only_run(baseline_results, "baseline"), "baseline", "none")
    assert m["datapath"] == {"userspace": False}


def test_analysis_reads_the_run(baseline_results: Path) -> None:
    """The measurement -> manifest -> analysis path: the analysis CLI computes RTT statistics."""
    res = subprocess.run([sys.executable, "-m", "analysis", "stats", str(baseline_results)], cwd=ROOT,
                         capture_output=True, text=True, check=False, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    table = res.stdout.split("## rtt", 1)[1].split("##", 1)[0]
    lines = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table.splitlines()
             if line.startswith("|") and not line.startswith("|---")]
    header, body = lines[0], lines[1:]
    rows = [dict(zip(header, r)) for r in body]
    rows = [r for r in rows if r["experiment"] == "overlay" and r["profile"] == "baseline"]
    assert [r["size"] for r in rows] == ["64", "1024"], res.stdout[:2000]
    assert all(r["n_samples"] == "20" and r["n_boots"] == "1" for r in rows), "2 sets x 10 pings, warm-up out"


def test_ipsec_run_is_complete_and_valid(overlay_env: None, tmp_path: Path) -> None:
    require_tools("swanctl", "/usr/lib/ipsec/charon")
    res = _run("aes256gcm", tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    m = _check_complete_valid(_only_run(tmp_path, "aes256gcm"), "aes256gcm", "ipsec")
    assert m["datapath"]["ipsec"] in ("kernel", "libipsec")
    if m["datapath"]["ipsec"] == "libipsec":
        assert m["datapath"]["userspace"] is True
        assert "USERSPACE DATAPATH" in res.stderr, "a userspace datapath is announced loudly"


def test_wireguard_run_is_complete_and_valid(overlay_env: None, tmp_path: Path) -> None:
    require_tools("wg")
    res = _run("wireguard", tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    m = _check_complete_valid(_only_run(tmp_path, "wireguard"), "wireguard", "wireguard")
    assert m["datapath"]["wireguard"] in ("kernel", "wireguard-go")
    assert m["datapath"]["userspace"] is (m["datapath"]["wireguard"] == "wireguard-go")


def test_runs_never_overwrite(baseline_results: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(baseline_results, results)
    assert _run("baseline", results, SETS="1", SIZES="64").returncode == 0
    runs = manifest.runs(results, "adhoc", "overlay", "baseline")
    assert len(runs) == 2 and runs[0].name != runs[1].name
    before = (runs[0] / "manifest.json").read_bytes()
    # a finished run refuses any change through the manifest CLI
    res = subprocess.run([sys.executable, "-m", "testbed", "manifest", "add-command", str(runs[0]),
                          "--command=echo changed"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.returncode == 1 and "never modified" in res.stderr
    assert (runs[0] / "manifest.json").read_bytes() == before


def test_make_rerun_repeats_the_run_from_its_spec(baseline_results: Path, tmp_path: Path) -> None:
    """`make rerun RUN=<run>` (issue 19 item 4): a new, valid run with the original's spec verbatim and
    rerun_of naming it; the shell's own experiment variables (SETS=5 here) do not leak in."""
    original = _only_run(baseline_results, "baseline")
    before = (original / "manifest.json").read_bytes()
    results = tmp_path / "results"
    env = _env(results, SETS="5", PROFILE="aes256gcm")
    ns_before = _namespaces()
    try:
        res = subprocess.run(["make", "--no-print-directory", "rerun", f"RUN={original}"], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=240, check=False)
    finally:
        for ns in {n for n in _namespaces() - ns_before if n.startswith(env["LAB_NAME"])}:
            subprocess.run(["ip", "netns", "delete", ns], check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    again = _only_run(results, "baseline")
    m, first = _check_complete_valid(again, "baseline", "none"), json.loads(before)
    assert m["spec"] == first["spec"] and m["parameters"] == first["parameters"]
    assert m["rerun_of"] == str(original.resolve()) and first["rerun_of"] is None
    assert m["run"] != first["run"]
    assert (original / "manifest.json").read_bytes() == before


def test_sigint_mid_run_marks_interrupted_and_keeps_data(overlay_env: None, tmp_path: Path) -> None:
    env = _env(tmp_path, PROFILE="baseline", SETS="3", PINGS="400", INTERVAL="0.01", SIZES="64")
    before = _namespaces()
    # SIGINT back to its default for the driver, as at a terminal: a test run started in the
    # background of a non-interactive shell inherits SIGINT ignored, which bash can then never trap
    proc = subprocess.Popen(["bash", str(DRIVER)], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        first_set = None
        while time.monotonic() < deadline:       # wait until the first measured set is running
            found = list(tmp_path.glob("adhoc/overlay/baseline/*/ping-s64-set01.txt"))
            if found and found[0].stat().st_size > 200:
                first_set = found[0]
                break
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            time.sleep(0.1)
        assert first_set is not None, "the driver never reached the first ping set"
        os.killpg(proc.pid, signal.SIGINT)       # what Ctrl-C on the terminal does
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for ns in {n for n in _namespaces() - before if n.startswith(env["LAB_NAME"])}:
            subprocess.run(["ip", "netns", "delete", ns], check=False)
    assert proc.returncode == 130, err[-3000:]
    assert "interrupted: stopping" in err and "run interrupted:" in err, "the terminal says what happened"
    assert not {n for n in _namespaces() if n.startswith(env["LAB_NAME"])}, "lab torn down"
    run_dir = first_set.parent
    m = manifest.load(run_dir)
    assert manifest.validate(m) == []
    assert m["state"] == "interrupted" and m["finished"] and "interrupted" in m["reason"]
    partial = [f for f in m["files"] if f["path"] == "ping-s64-set01.txt"]
    assert partial and partial[0].get("partial") is True, "what was measured is kept, marked partial"
    text = first_set.read_text()
    assert "bytes from" in text and "run-overlay" not in text, "raw file holds ping output only"
    assert any(f["kind"] == "pcap" for f in m["files"]), "the capture is kept"
    assert not list(tmp_path.glob("adhoc/overlay/baseline/*/ping-s64-set03.txt"))


def test_invalid_run_is_marked_loudly(baseline_results: Path, tmp_path: Path) -> None:
    """A real plaintext capture claimed as IPsec must be rejected."""
    src = _only_run(baseline_results, "baseline")
    forged = tmp_path / "forged" / "overlay" / "aes256gcm" / src.name
    shutil.copytree(src, forged)
    m = json.loads((forged / "manifest.json").read_text())
    m.update(profile="aes256gcm", protocol="ipsec", valid=None, validity=None)
    (forged / "manifest.json").write_text(json.dumps(m))
    res = subprocess.run([sys.executable, "-m", "testbed", "validity", str(forged)], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    assert res.returncode == 1
    assert "INVALID RUN" in res.stderr and "must not be used" in res.stderr
    after = manifest.load(forged)
    assert after["valid"] is False and after["validity"]["plaintext_packets"] > 0
    assert after["validity"]["protected_packets"] == 0


def test_campaign_resumes(overlay_env: None, tmp_path: Path) -> None:
    env = _env(tmp_path, SETS="1", SIZES="64", PINGS="5", PROFILES="baseline", BOOTS="2",
               CAMPAIGN="ci", SEED="7")
    dry = subprocess.run(["bash", str(CAMPAIGN), "overlay"], env={**env, "DRY_RUN": "1"}, cwd=ROOT,
                         capture_output=True, text=True, check=False, timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert "overlay.baseline.r01\tbaseline\t1\ttodo" in dry.stdout and "2 slots, 2 to run" in dry.stdout
    assert not (tmp_path / "ci").exists(), "a dry run starts nothing"

    first = subprocess.run(["bash", str(CAMPAIGN), "overlay"], env=env, cwd=ROOT, capture_output=True,
                           text=True, check=False, timeout=300)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "ETA" in first.stderr
    runs = manifest.runs(tmp_path, "ci", "overlay", "baseline")
    assert sorted(manifest.load(r)["slot"] for r in runs) == ["overlay.baseline.r01", "overlay.baseline.r02"]
    assert len(list((tmp_path / "ci" / "plans").glob("*-overlay.json"))) == 1

    # an incomplete run of slot r02 (as a crash would leave it): resume redoes it in a NEW directory
    r02 = next(r for r in runs if manifest.load(r)["slot"] == "overlay.baseline.r02")
    m = manifest.load(r02)
    m["state"] = "incomplete"
    manifest.write(r02, m)
    again = subprocess.run(["bash", str(CAMPAIGN), "overlay"], env=env, cwd=ROOT, capture_output=True,
                           text=True, check=False, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "1 already done, 1 to run" in again.stderr
    runs_after = manifest.runs(tmp_path, "ci", "overlay", "baseline")
    assert len(runs_after) == 3 and r02 in runs_after, "the incomplete run is kept"
    assert manifest.load(r02)["state"] == "incomplete"
    states = sorted((manifest.load(r)["slot"], manifest.load(r)["state"]) for r in runs_after)
    assert states == [("overlay.baseline.r01", "complete"), ("overlay.baseline.r02", "complete"),
                      ("overlay.baseline.r02", "incomplete")]

    # everything done: a third invocation runs nothing
    third = subprocess.run(["bash", str(CAMPAIGN), "overlay"], env=env, cwd=ROOT, capture_output=True,
                           text=True, check=False, timeout=120)
    assert third.returncode == 0 and "2 already done, 0 to run" in third.stderr
    assert len(manifest.runs(tmp_path, "ci", "overlay", "baseline")) == 3


def test_profile_the_host_cannot_run_is_refused_before_anything_starts(overlay_env: None, tmp_path: Path) -> None:
    from testbed import datapath
    if datapath.detect()["ipsec"] != "libipsec":
        pytest.skip("this host has kernel ESP: every IPsec profile can run (the refusal is for userspace ESP)")
    res = _run("nullgmac", tmp_path)
    assert res.returncode == 1
    assert "cannot run on this host" in res.stderr and "kernel xfrm ESP" in res.stderr
    assert not (tmp_path / "adhoc").exists(), "refused before a run directory exists"


def test_make_run_overlay_runs_one_run_per_boot(overlay_env: None, tmp_path: Path) -> None:
    """BOOTS=2: two independent labs, two run directories, boot 1 and boot 2 in their manifests."""
    res = _run("baseline", tmp_path, via_make=True, BOOTS="2", SETS="1", SIZES="64", PINGS="3")
    assert res.returncode == 0, res.stderr[-3000:]
    runs = sorted((tmp_path / "adhoc" / "overlay" / "baseline").iterdir())
    params = [json.loads((r / "manifest.json").read_text())["parameters"] for r in runs]
    assert sorted((p["boot"], p["boots"]) for p in params) == [(1, 2), (2, 2)]


def test_ping_sends_exactly_count_requests_under_loss(overlay_env: None) -> None:
    """Every third echo request is dropped: the driver's ping form (scripts/lib/common.sh ping_argv)
    still transmits exactly -c requests, where the old `-c N -w D` form sends more (iputils keeps
    sending until N replies), so loss was counted over N + k."""
    require_tools("nft", "timeout")
    ns = f"pingcount-{secrets.token_hex(3)}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        run = lambda *a: subprocess.run(["ip", "netns", "exec", ns, *a], capture_output=True, text=True,  # noqa: E731
                                        check=False, timeout=60)
        run("ip", "link", "set", "lo", "up")
        nft = ("add table ip t; add chain ip t o { type filter hook output priority 0; }; "
               "add rule ip t o icmp type echo-request numgen inc mod 3 == 0 drop")
        assert run("nft", nft).returncode == 0
        lib = ROOT / "scripts" / "lib" / "common.sh"
        script = (f'source "{lib}"; INTERVAL=0.01; PING_DEADLINE=0; '
                  'mapfile -d "" -t a < <(ping_argv 21 64); ip netns exec ' + ns + ' "${a[@]}" 127.0.0.1')
        ours = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False, timeout=60)
        assert "21 packets transmitted, 14 received" in ours.stdout, ours.stdout[-500:] + ours.stderr[-500:]
        old = run("ping", "-n", "-c", "21", "-i", "0.01", "-w", "20", "127.0.0.1")
        sent = int(old.stdout.split(" packets transmitted")[0].rsplit("\n", 1)[-1])
        assert sent > 21, old.stdout[-300:]
    finally:
        subprocess.run(["ip", "netns", "delete", ns], check=False)


def test_a_set_cut_short_by_a_signal_to_ping_is_partial(overlay_env: None, tmp_path: Path) -> None:
    """SIGINT to ping alone (not the driver) ends a set early: the run is not complete and says
    which set is partial (before: complete and valid with 206 of 600 requests)."""
    env = _env(tmp_path, PROFILE="baseline", SETS="1", PINGS="600", INTERVAL="0.01", SIZES="64")
    proc = subprocess.Popen(["bash", str(DRIVER)], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = pids_in(f"{env['LAB_NAME']}-gnb", "ping", "-D", "-c", "600")
            if found:
                time.sleep(1.5)
                for pid in found:
                    os.kill(pid, signal.SIGINT)
                break
            time.sleep(0.1)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, err[-2000:]
    assert "partial" in err and "of 600 requests transmitted" in err, err[-2000:]
    m = json.loads(next((tmp_path / "adhoc" / "overlay" / "baseline").iterdir()).joinpath("manifest.json").read_text())
    assert m["state"] != "complete", (m["state"], m["valid"])
    # judged anyway (issue 22.14): the capture of the run that ended early says what crossed the wire
    assert "not checked" not in m["validity"]["details"] and m["validity"]["plaintext_packets"] > 0, m["validity"]


def test_an_overlay_that_dies_mid_set_stops_the_run_within_seconds(overlay_env: None, tmp_path: Path) -> None:
    """Kill the gNB's wireguard-go in the middle of a 600-ping set: the watcher sees the daemon
    gone, the set ends at once, and the run is invalid with the time and the reason (before:
    the set ran to its deadline and the run stopped minutes later)."""
    require_tools("wg", "wireguard-go")
    env = _env(tmp_path, PROFILE="wireguard", SETS="1", PINGS="600", INTERVAL="0.02", SIZES="64",
               WIREGUARD_DATAPATH="wireguard-go")
    proc = subprocess.Popen(["bash", str(DRIVER)], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    killed_at = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and killed_at is None:
            ns = f"{env['LAB_NAME']}-gnb"
            if pids_in(ns, "ping", "-D", "-c", "600"):
                time.sleep(1.5)
                for pid in pids_in(ns, "wireguard-go"):
                    os.kill(pid, signal.SIGKILL)
                    killed_at = time.time()
            time.sleep(0.1)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    if killed_at is None:
        pytest.skip("no wireguard-go process in the lab (kernel WireGuard here): nothing to kill")
    # when the driver said so (its log's UTC second), not when it ended: the exit trap judges the
    # capture afterwards (issue 22.14), which takes its own seconds
    import datetime as dt
    said = next(line for line in err.splitlines() if "the overlay died during set" in line)
    day = dt.datetime.fromtimestamp(killed_at, dt.timezone.utc)
    hh, mm, ss = (int(x) for x in said.split()[0].split(":"))
    stopped = day.replace(hour=hh, minute=mm, second=ss, microsecond=0).timestamp()
    stopped += 86400 if stopped < killed_at - 3600 else 0
    # within 5 s of the loss (issue 30 item 6; the log's time has whole seconds: + 1 s). It took
    # 4.0-4.3 s here before the settle counted from the watcher's last line, 1.9-2.7 s after
    assert proc.returncode != 0 and stopped - killed_at < 6, (proc.returncode, stopped - killed_at, err[-1500:])
    assert "the overlay died during set 1" in err and "wireguard-go" in err, err[-1500:]
    run = next((tmp_path / "adhoc" / "overlay" / "wireguard").iterdir())
    m = json.loads((run / "manifest.json").read_text())
    assert m["state"] != "complete" and m["valid"] is False
    assert "overlay daemon gone" in (run / "overlay-died.txt").read_text()
    # every interface out of both namespaces was captured from before the kill: nothing in the clear
    assert m["validity"]["details"].count("every interface of the namespace: 0 packets of n3 in the clear") == 2, \
        m["validity"]["details"]
    # the set the loss cut short is kept and marked partial (recorded after the report)
    cut = [f for f in m["files"] if f["path"] == "ping-s64-set01.txt"]
    assert cut and cut[0].get("partial") is True, m["files"]
