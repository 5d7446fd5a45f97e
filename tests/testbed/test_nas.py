"""NAS security algorithms as a run dimension (testbed/nas.py)."""
from __future__ import annotations

import argparse
from typing import Any

import shutil
from pathlib import Path

import pytest
import yaml

from testbed import nas, stack
from testbed.cli import render as render_cli

DATA = Path(__file__).resolve().parents[1] / "data"


def test_choices_are_every_ciphering_with_every_integrity() -> None:
    assert sorted(nas.choices()) == sorted(f"nea{e}-nia{i}" for e in range(3) for i in (1, 2))
    assert nas.get("nea2-nia1").codes == (2, 1)


def test_unknown_choice_lists_the_valid() -> None:
    with pytest.raises(nas.NasError, match="valid: nea0-nia1, nea0-nia2"):
        nas.get("nea3-nia3")


def test_apply_reduces_the_amf_orders_to_the_choice_and_copies() -> None:
    values = stack.load()
    before = list(values["open5gs"]["integrity_order"])
    out = nas.apply(values, "nea2-nia2")
    assert out["open5gs"]["ciphering_order"] == ["NEA2"] and out["open5gs"]["integrity_order"] == ["NIA2"]
    assert values["open5gs"]["integrity_order"] == before           # the loaded values are untouched
    assert nas.apply(values, "") is values


def test_render_writes_the_choice_into_the_amf_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NAS", raising=False)

    def render(argv: list[str]) -> Any:
        parser = argparse.ArgumentParser()              # built anew: the environment gives the defaults
        render_cli.add_render_arguments(parser, "-")
        return render_cli.render_args(parser.parse_args(["--profile", "baseline", "--plane", "n3",
                                                         "--state", str(tmp_path), *argv]))

    r = render(["--nas", "nea1-nia2"])
    amf = yaml.safe_load(next(r.dir.rglob("amf.yaml")).read_text())["amf"]["security"]
    assert amf == {"integrity_order": ["NIA2"], "ciphering_order": ["NEA1"]}
    monkeypatch.setenv("NAS", "nea0-nia1")                            # make up NAS=... reaches render
    r = render([])
    amf = yaml.safe_load(next(r.dir.rglob("amf.yaml")).read_text())["amf"]["security"]
    assert amf == {"integrity_order": ["NIA1"], "ciphering_order": ["NEA0"]}


@pytest.fixture
def n2_capture() -> Path:
    if shutil.which("tshark") is None:
        pytest.skip("tshark not found: run `make setup`")
    return DATA / "roastedbeans-open5gs-roaming" / "n1_n2_interfaces.pcap"


def test_verdict_from_a_real_security_mode_command(n2_capture: Path) -> None:
    assert nas.security_mode_commands(n2_capture) == [(13, 0, 2)]
    ok = nas.verify_capture(n2_capture, "nea0-nia2")
    assert ok.valid and ok.smc_seen == 1, ok
    bad = nas.verify_capture(n2_capture, "nea2-nia2")
    assert not bad.valid and "NEA0/NIA2, not NEA2/NIA2 (first: frame 13)" in bad.details, bad


def test_a_capture_without_security_mode_command_is_invalid(tmp_path: Path, n2_capture: Path) -> None:
    import subprocess
    head = tmp_path / "head.pcapng"
    subprocess.run(["editcap", "-r", str(n2_capture), str(head), "1-5"], check=True, capture_output=True)
    v = nas.verify_capture(head, "nea0-nia2")
    assert not v.valid and v.smc_seen == 0 and "no NAS Security Mode Command" in v.details
