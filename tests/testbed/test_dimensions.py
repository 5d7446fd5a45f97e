"""The dimension plug-ins (testbed/contract.py DimensionPlugin, testbed/dimensions.py): render
calls every hook of a dimension it has never heard of (its dir and variables, its Compose
fragment after the overlay's, the NF hooks after the overlay's own, its plan line), and neither
render, the orchestration nor the render CLI names a dimension, so the next one plugs in without
editing them."""
from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import render_support
from testbed import dimensions, keys, privileges, profiles, registry, render
from testbed.cli import render as render_cli
from testbed.contract import DimensionChoice, DimensionPlugin
from testbed.render import compose_overlay, layout
from testbed.secfn.plugin import SecfnDimension
from tests.conftest import ROOT
from tests.testbed.render.helpers import keys_root


@dataclass(frozen=True)
class Toy(DimensionChoice):
    """A dimension render has never heard of, with every hook."""

    variant: str
    name: str = "toy"

    def render(self, profile: Any, plane: str, values: dict[str, Any], out_dir: Path) -> dict[str, str]:
        (out_dir / "cfg").mkdir()
        (out_dir / "cfg" / "toy.conf").write_text(f"variant {self.variant} on {plane}\n")
        return {"TOY": self.variant}

    def compose_services(self, profile: Any, plane: str, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {"gnb": {"environment": {"TOY": "${TOY}"}},
                "toy": {"image": "${TOOLS_IMAGE:?}", **privileges.role("secfn-sender").compose_fields()}}

    def describe(self, env: dict[str, str]) -> str:
        return f"variant {env['TOY']}"

    def nf_config_overrides(self, node: str, profile: Any, values: dict[str, Any]) -> dict[str, Any]:
        return {"logger": {"level": "debug"}} if node == "amf" else {"toy": node} if node == "gnb" else {}

    def nf_environment(self, node: str, profile: Any, values: dict[str, Any]) -> dict[str, str]:
        return {"TOY_NODE": node} if node == "upf" else {}


class ToyPlugin(DimensionPlugin):
    name = "toy"
    summary = "a dimension nothing in the core knows"
    variables = {"TOY": "the toy's variant"}

    def select(self, options: Any, profile: Any, plane: str, ran: str) -> Toy | None:
        return Toy(options["TOY"]) if options.get("TOY") else None


@pytest.fixture
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    real = registry.dimensions
    monkeypatch.setattr(registry, "dimensions", lambda: [*real(), ToyPlugin()])


def _render(out: Path, dims: tuple, profile: str = "aes128gcm") -> render.Rendered:
    root = keys_root()
    return render_support.render(profiles.get(profile, "n3"), "n3", out, subscribers=keys.subscribers(root),
                         keys_dir=root, commit="test", dimensions=dims)


def test_render_calls_every_hook_of_an_unknown_dimension(tmp_path: Path, toy_registered: None) -> None:
    r = _render(tmp_path / "r", (Toy("split"),))
    assert (r.dir / "toy" / "cfg" / "toy.conf").read_text() == "variant split on n3\n"
    assert r.dir / "toy" / "cfg" / "toy.conf" in r.files
    assert "TOY=split\n" in (r.dir / layout.COMPOSE_ENV).read_text()
    files = (r.dir / layout.COMPOSE_FILES).read_text().split()
    # base.yaml, the overlay's fragment, then the dimension's
    assert files[-2:] == [str(r.dir / compose_overlay.FRAGMENT), str(r.dir / "toy.compose.yaml")]
    frag = yaml.safe_load((r.dir / "toy.compose.yaml").read_text())["services"]
    assert frag["gnb"] == {"environment": {"TOY": "${TOY}"}} and frag["toy"]["cap_drop"] == ["ALL"]
    assert yaml.safe_load((r.dir / layout.OPEN5GS_DIR / "amf.yaml").read_text())["logger"]["level"] == "debug"
    assert yaml.safe_load((r.dir / layout.UERANSIM_DIR / "gnb.yaml").read_text())["toy"] == "gnb"
    assert "TOY_NODE=upf" in (r.dir / layout.ENV_DIR / "upf.env").read_text()
    assert re.search(r"^toy +variant split$", (r.dir / layout.PLAN_FILE).read_text(), re.M)


def test_a_dimension_once_and_known(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="at most once"):
        _render(tmp_path / "a", (Toy("oai"),))                     # not registered
    real = registry.dimensions
    monkeypatch.setattr(registry, "dimensions", lambda: [*real(), ToyPlugin()])
    with pytest.raises(ValueError, match="at most once"):
        _render(tmp_path / "b", (Toy("oai"), Toy("split")))
    # its variables reach the command line and the selection with nothing else edited
    parser = argparse.ArgumentParser()
    render_cli.add_render_arguments(parser, "-")
    args = parser.parse_args(["--toy", "split"])
    assert dimensions.select(render_cli.options(args), profiles.get("baseline"), "n3", "ueransim") == (Toy("split"),)


def test_without_a_dimension_nothing_of_it_is_rendered(tmp_path: Path) -> None:
    r = _render(tmp_path / "r", ())
    assert sorted(p.name for p in r.dir.glob("*.compose.yaml")) == [compose_overlay.FRAGMENT]
    assert not (r.dir / "secfn").exists() and "SECFN" not in (r.dir / layout.COMPOSE_ENV).read_text()


def test_the_secfn_selection_through_the_cli_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SECFN", "IDS", "QUEUE_MAXLEN", "QUEUES", "FAIL_OPEN", "NAS"):
        monkeypatch.delenv(var, raising=False)

    def select(argv: list[str], profile: Any, plane: str) -> tuple:
        parser = argparse.ArgumentParser()          # built anew: the environment gives the defaults
        render_cli.add_render_arguments(parser, "-")
        return dimensions.select(render_cli.options(parser.parse_args(argv)), profile, plane, "ueransim")

    base = profiles.get("baseline", "n3")
    assert select([], base, "n3") == ()
    dims = select(["--secfn", "ips-nat", "--ids", "passthrough"], base, "n3")
    assert len(dims) == 1 and isinstance(dims[0], SecfnDimension) and dims[0].sf.engine == "passthrough"
    monkeypatch.setenv("QUEUES", "two")
    with pytest.raises(dimensions.SelectionError, match="QUEUES='two'"):
        select(["--secfn", "nat"], base, "n3")
    monkeypatch.delenv("QUEUES")
    with pytest.raises(dimensions.SelectionError, match="needs an N3 profile"):
        select(["--secfn", "nat"], profiles.get("tls13-aes128gcm"), "sbi")


def test_render_and_its_cli_name_no_dimension() -> None:
    sources = [*sorted((ROOT / "testbed" / "render").glob("*.py")), ROOT / "testbed" / "cli" / "render.py",
               ROOT / "testbed" / "orchestrate.py", ROOT / "testbed" / "dimensions.py"]
    for path in sources:
        text = path.read_text(encoding="utf-8").lower()
        for name in (d.name for d in registry.dimensions()):
            assert not re.search(rf"\b{re.escape(name)}\b", text), f"{path.relative_to(ROOT)} names {name}"
