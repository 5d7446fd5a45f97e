"""The engine directory and each engine's configuration, loaded by the real engines where they
are installed (suricata -T, snort -T; testbed/secfn/engines)."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from testbed import host_tools, secfn
from testbed.secfn import engines, rules
from testbed.secfn.engines.passthrough import engine as passthrough
from testbed.secfn.engines.snort import engine as snort
from testbed.secfn.engines.suricata import engine as suricata
from tests.conftest import ROOT, require_snort

ENTRYPOINT = ROOT / "testbed" / "secfn" / "entrypoint.sh"


def _env(d: Path) -> dict[str, str]:
    out = {}
    for line in (d / engines.ENV_FILE).read_text().splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.partition("=")
            out[k] = shlex.split(v)[0] if v else ""
    return out


def test_engine_dir_for_the_entrypoint(tmp_path: Path) -> None:
    sf = secfn.resolve("ips-nat", "snort", queue_maxlen=2048, fail_open=True)
    d = engines.render_dir(sf, tmp_path / "cfg", log_at=Path("/var/log/testbed/secfn"), iface="ogstun",
                           ue_subnet="10.45.0.0/16", home_net="10.100.6.0/24", config_at=Path("/etc/testbed/secfn"))
    env = _env(d)
    assert env["ENGINE"] == "snort" and env["MODE"] == "inline" and env["FAIL_OPEN"] == "1"
    assert env["READY_FILE"] == "/var/log/testbed/secfn/snort.out"
    argv = (d / engines.ARGV_FILE).read_text().splitlines()
    assert argv[:3] == ["snort", "-c", "/etc/testbed/secfn/snort.lua"]
    assert argv[-11:] == ["--daq", "nfq", "-i", "4", "-z", "1", "--daq-var", "queue_maxlen=2048", "--daq-var",
                          "fail_open", "-Q"]
    assert "include = '/etc/testbed/secfn/testbed-secfn.rules'" in (d / "snort.lua").read_text()
    assert json.loads((d / "secfn.json").read_text())["queue_maxlen"] == 2048
    with pytest.raises(secfn.SecfnError, match="runs no engine"):
        engines.render_dir(secfn.resolve("nat"), tmp_path / "x", log_at=tmp_path, iface="ogstun",
                           ue_subnet="10.45.0.0/16", home_net="10.100.6.0/24")


def test_snort_passive_reads_the_interface_through_pcap(tmp_path: Path) -> None:
    sf = secfn.resolve("ids-nat", "snort")
    launch = snort.render(sf, tmp_path, config_at=tmp_path, log_at=tmp_path, iface="ogstun",
                          home_net="10.100.6.0/24")
    assert launch.argv[-4:] == ["--daq", "pcap", "-i", "ogstun"] and "-Q" not in launch.argv
    assert "drop " not in (tmp_path / snort.RULE_FILE).read_text()


def test_suricata_config_inline(tmp_path: Path) -> None:
    sf = secfn.resolve("ips-nat", "suricata")
    launch = suricata.render(sf, tmp_path, config_at=tmp_path, log_at=tmp_path / "out", iface="ogstun",
                             home_net="10.100.6.0/24")
    data = yaml.safe_load((tmp_path / "suricata.yaml").read_text().split("---", 1)[1])
    assert data["default-log-dir"] == str(tmp_path / "out")
    assert data["vars"]["address-groups"]["HOME_NET"] == "[10.100.6.0/24]"
    assert launch.argv[-2:] == ["-q", "4"] and launch.ready_line == "Engine started"
    assert f"sid:{rules.DROP_SID};" in (tmp_path / suricata.RULE_FILE).read_text()


def test_suricata_accepts_the_rendered_config_and_rules(tmp_path: Path) -> None:
    """suricata -T: the engine itself parses the yaml and loads every rule (the seed's included)."""
    if shutil.which("suricata") is None:
        pytest.skip(f"suricata not found: {host_tools.install_hint('suricata')}")
    sf = secfn.resolve("ips-nat", "suricata")
    suricata.render(sf, tmp_path, config_at=tmp_path, log_at=tmp_path, iface="lo", home_net="10.100.6.0/24")
    res = subprocess.run(["suricata", "-T", "-c", str(tmp_path / "suricata.yaml"), "-l", str(tmp_path)],
                         capture_output=True, text=True, timeout=120, check=False)
    log = (tmp_path / "suricata.log").read_text(errors="replace") if (tmp_path / "suricata.log").is_file() else ""
    assert res.returncode == 0, res.stdout[-800:] + res.stderr[-800:] + log[-800:]
    assert "rules successfully loaded" in log and "0 rules failed" in log, log[-800:]


@pytest.mark.parametrize("function", ["ids-nat", "ips-nat"])
def test_snort_accepts_the_rendered_config_and_rules(tmp_path: Path, function: str) -> None:
    """snort -T: Snort 3 loads the config, the seed's rules (and inline the drop rule)."""
    root = require_snort()
    sf = secfn.resolve(function, "snort")
    launch = snort.render(sf, tmp_path, config_at=tmp_path, log_at=tmp_path, iface="lo", home_net="10.100.6.0/24")
    argv = [str(root / "bin" / "snort"), *launch.argv[1:launch.argv.index("--daq")], "-T"]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False,
                         env={**os.environ, "LD_LIBRARY_PATH": str(root / "lib")})
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-1500:]
    assert "Snort successfully validated the configuration" in out, out[-1500:]
    loaded = 5 if function == "ips-nat" else 4
    assert f"text rules: {loaded}" in out or f"total rules loaded: {loaded}" in out, out[-1500:]


def test_snort_counters_from_its_exit_statistics(tmp_path: Path) -> None:
    text = (ROOT / "tests" / "data" / "snort" / "snort-inline.out").read_text()
    st = snort.stats(text)
    assert st["daq.analyzed"] > 0 and st["daq.block"] >= 1
    (tmp_path / snort.OUT).write_text(text)
    (tmp_path / snort.ALERT_FILE).write_text((ROOT / "tests" / "data" / "snort" / "alert_json.txt").read_text())
    c = snort.counters(tmp_path)
    assert c.inspected == st["daq.analyzed"] and c.blocked == st["daq.block"]
    assert all(c.alerts_per_sid.get(s) for s in rules.SEED_SIDS) and c.alerts_per_sid[rules.DROP_SID] >= 1


def test_passthrough_builds(tmp_path: Path) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("gcc not found")
    binary = passthrough.build(tmp_path)
    res = subprocess.run([str(binary)], capture_output=True, text=True, timeout=10, check=False)
    assert res.returncode == 2 and "usage: nfq-accept" in res.stderr
    assert passthrough.build(tmp_path).stat().st_mtime == binary.stat().st_mtime     # not rebuilt


def test_entrypoint_refuses_bad_input(tmp_path: Path) -> None:
    res = subprocess.run(["bash", str(ENTRYPOINT)], capture_output=True, text=True, timeout=10, check=False)
    assert res.returncode == 2 and "usage: entrypoint.sh ENGINE_DIR" in res.stderr
    res = subprocess.run(["bash", str(ENTRYPOINT), str(tmp_path)], capture_output=True, text=True, timeout=10,
                         check=False, env={**os.environ, "SECFN_READY": str(tmp_path / "ready")})
    assert res.returncode == 1 and "has no engine.env/engine.argv" in res.stderr


def test_several_queues_one_engine_thread_each(tmp_path: Path) -> None:
    sf = secfn.resolve("ips-nat", "snort", queues=3)
    assert sf.queue_nums == [4, 5, 6] and sf.to_dict()["queues"] == 3
    argv = snort.render(sf, tmp_path, config_at=tmp_path, log_at=tmp_path, iface="ogstun", home_net="10.0.0.0/8").argv
    assert argv[argv.index("nfq") + 1:argv.index("--daq-var")] == ["-i", "4", "-i", "5", "-i", "6", "-z", "3"]
    argv = suricata.render(secfn.resolve("ips-nat", "suricata", queues=2), tmp_path, config_at=tmp_path,
                           log_at=tmp_path, iface="ogstun", home_net="10.0.0.0/8").argv
    assert argv[-4:] == ["-q", "4", "-q", "5"]
    with pytest.raises(secfn.SecfnError, match="the pass-through serves one queue"):
        secfn.resolve("ips-nat", "passthrough", queues=2)
    with pytest.raises(secfn.SecfnError, match="QUEUES must be 1..16"):
        secfn.resolve("ips-nat", "snort", queues=0)
    (tmp_path / engines.QUEUE_FILE).write_text("    4  11     0     2 65531     1     2      100  1\n"
                                               "    5  12     3     2 65531     0     0       50  1\n"
                                               "    7  13     9     2 65531     9     9        9  1\n")
    got = engines.queue_stats(tmp_path, [4, 5])
    assert got is not None and got["id_sequence"] == 150 and got["queue_dropped"] == 1 and got["queue_total"] == 3
    assert set(got["per_queue"]) == {"4", "5"}
    assert engines.queue_stats(tmp_path, [4])["id_sequence"] == 100
