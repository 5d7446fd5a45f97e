"""The security-function catalogue and the engine configuration (testbed/secfn)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from testbed import secfn
from testbed.secfn import ditg, rules, suricata


def test_every_function_resolves_with_its_engines() -> None:
    assert secfn.resolve("none").engine is None and not secfn.resolve("none").nat
    assert secfn.resolve("nat").nat and secfn.resolve("nat").mode is None
    assert secfn.resolve("ids-nat").engine == "suricata" and secfn.resolve("ids-nat").mode == "passive"
    assert secfn.resolve("ips-nat", "passthrough").mode == "inline"


@pytest.mark.parametrize("args,words", [
    (("bogus",), "valid: none, nat, ids-nat, ips-nat"),
    (("ids-nat", "zeek"), "valid: suricata, snort, passthrough"),
    (("ids-nat", "passthrough"), "valid for it: suricata, snort"),
])
def test_bad_combinations_name_the_valid(args: tuple[str, ...], words: str) -> None:
    with pytest.raises(secfn.SecfnError, match=words):
        secfn.resolve(*args)


def test_suricata_config_inline_has_the_drop_rule_and_writes_into_the_run(tmp_path: Path) -> None:
    sf = secfn.resolve("ips-nat", "suricata")
    cfg = suricata.render(sf, tmp_path / "engine", tmp_path, "ogstun", "10.100.6.0/24")
    data = yaml.safe_load(cfg.read_text().split("---", 1)[1])
    assert data["default-log-dir"] == str(tmp_path)
    assert data["vars"]["address-groups"]["HOME_NET"] == "[10.100.6.0/24]"
    text = (tmp_path / "engine" / suricata.RULE_FILE).read_text()
    assert all(f"sid:{s};" in text or f"sid: {s};" in text for s in rules.SEED_SIDS)
    assert f"sid:{rules.DROP_SID};" in text
    assert suricata.command(sf, cfg, "ogstun")[-2:] == ["-q", str(sf.queue_num)]
    passive = secfn.resolve("ids-nat", "suricata")
    assert "drop " not in rules.rules_text(passive.mode == "inline")


def test_suricata_accepts_the_rendered_config_and_rules(tmp_path: Path) -> None:
    """suricata -T: the engine itself parses the yaml and loads every rule (the seed's included)."""
    if shutil.which("suricata") is None:
        pytest.skip("suricata not found: make setup installs it (bookworm-backports)")
    sf = secfn.resolve("ips-nat", "suricata")
    cfg = suricata.render(sf, tmp_path / "engine", tmp_path, "lo", "10.100.6.0/24")
    res = subprocess.run(["suricata", "-T", "-c", str(cfg), "-l", str(tmp_path)], capture_output=True,
                         text=True, timeout=120, check=False)
    log = (tmp_path / "suricata.log").read_text(errors="replace") if (tmp_path / "suricata.log").is_file() else ""
    assert res.returncode == 0, res.stdout[-800:] + res.stderr[-800:] + log[-800:]
    assert "rules successfully loaded" in log and "0 rules failed" in log, log[-800:]


def test_itgdec_totals_are_parsed(tmp_path: Path) -> None:
    if shutil.which("ITGDec") is None:
        pytest.skip("ITGDec not found: apt-get install d-itg (make setup)")
    with pytest.raises(ditg.DitgError):
        ditg.decode(tmp_path / "missing.log")
    assert ditg.send_command("10.100.6.20", "udp", 1000, 5, tmp_path / "s", tmp_path / "r")[:9] == [
        "ITGSend", "-T", "UDP", "-a", "10.100.6.20", "-c", "512", "-O", "1000"]
