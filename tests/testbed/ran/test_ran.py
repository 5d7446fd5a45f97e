"""testbed/ran/: the RAN variants as plug-ins of the renderer (RAN=ueransim|oai|split)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testbed import ran, registry, stack
from testbed.contract import RanPlugin
from testbed.ran import compose as rc
from testbed.render import compose_env as cenv
from testbed.render import layout
from tests.conftest import ROOT
from tests.testbed.render.helpers import render_to

VARIANTS = ("ueransim", "oai", "split")


def test_variants_are_data_and_checked() -> None:
    v = stack.load()
    assert ran.default(v) == "ueransim" and set(ran.variants(v)) == set(VARIANTS) == {r.name for r in registry.rans()}
    assert ran.check(None, v) == "ueransim" and ran.check("split", v) == "split"
    with pytest.raises(ran.RanError, match="valid: ueransim, oai, split"):
        ran.check("srsran", v)
    assert not ran.experimental("ueransim", v) and ran.experimental("oai", v) and ran.experimental("split", v)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_implements_the_interface(variant: str) -> None:
    v = stack.load()
    mod = ran.get(variant)
    assert isinstance(mod, RanPlugin) and mod.name == variant
    env = mod.compose_env(v)
    assert set(env) == set(ran.RAN_ENV_KEYS) and env["RAN"] == variant
    services = mod.compose(v)["services"]
    assert env["RAN_READY"] in services and "ue1" in services
    for node in mod.nodes(v):
        assert node in v["nodes"] and ran.runs_node(node, variant, v), node
        assert node in services
    for node in mod.env_nodes():
        assert f"${{RENDER_DIR}}/env/{node}.env" in services[node]["env_file"]


def test_split_services_and_start_order() -> None:
    v = stack.load()
    doc = ran.get("split").compose(v)
    s = doc["services"]
    assert set(doc["networks"]) == {"f1c", "f1u", "e1"}
    assert set(s["cucp-ns"]["networks"]) == {"n2", "f1c", "e1"}
    assert set(s["cuup-ns"]["networks"]) == {"n3", "f1u", "e1"}
    assert set(s["du-ns"]["networks"]) == {"f1c", "f1u", "ran"}
    for node in ("cucp", "cuup", "du"):
        for net, spec in s[f"{node}-ns"]["networks"].items():
            var = spec["ipv4_address"].strip("${}")
            assert var == cenv.var_name(node, net, "ip")
            assert cenv.address_vars(v)[var] == stack.address(node, net, v)
    assert "amf" in s["cucp"]["depends_on"] and "cucp" in s["cuup"]["depends_on"]
    assert {"cucp", "cuup"} <= set(s["du"]["depends_on"]) and set(s["ue1"]["depends_on"]) == {"du"}
    assert s["cuup"]["command"][1] == "nr-cuup" and s["du"]["command"][1] == "nr-softmodem"
    # the radio node runs the RF simulator (without --rfsim nr-softmodem wants a real radio's
    # library and exits: seen in the guest); the CU-CP and CU-UP have no radio
    assert s["du"]["command"][-1] == "--rfsim" and "--rfsim" not in s["cucp"]["command"] + s["cuup"]["command"]
    assert s["ue2"]["profiles"] == ["ue2"]
    for name, svc in s.items():
        # each service holds its role of nf-configs/privileges.yaml and nothing more
        role = {"ue1": "oai-ue", "ue2": "oai-ue"}.get(
            name, "holder" if name.endswith("-net") else "netns" if name.endswith("-ns") else "oai-ran")
        assert svc["labels"]["testbed.role"] == role, name
        assert not svc.get("privileged") and svc["cap_drop"] == ["ALL"] and svc["read_only"] is True, name
        if role == "oai-ue":
            assert svc["cap_add"] == ["DAC_READ_SEARCH", "NET_ADMIN", "NET_RAW"]
            assert svc["devices"] == ["/dev/net/tun:/dev/net/tun"]
        else:
            assert "cap_add" not in svc and "devices" not in svc, name


def test_ueransim_services_match_what_base_yaml_had() -> None:
    """The default RAN moved from compose/base.yaml into testbed/ran/ueransim/services.py unchanged."""
    s = ran.get("ueransim").compose(stack.load())["services"]
    assert list(s) == ["gnb-ns", "gnb-net", "gnb", "ue1", "ue2", "ue-scale"]
    # the namespace's owner has the networks, the holder and the gNB join it
    assert s["gnb-net"]["network_mode"] == s["gnb"]["network_mode"] == "service:gnb-ns"
    assert s["gnb"]["command"] == ["nr-gnb", "-c", "/etc/ueransim/gnb.yaml"]
    assert s["gnb-ns"]["networks"]["n2"] == {"ipv4_address": "${GNB_N2_IP}", "aliases": ["gnb"]}
    assert s["ue-scale"]["command"][-2:] == ["-n", "${UES:-1}"] and s["ue-scale"]["profiles"] == ["scale"]
    assert s["ue1"]["healthcheck"]["start_interval"] == "${UE_HEALTH_START_INTERVAL:-1s}"
    assert s["gnb-net"]["healthcheck"] == {**rc.templates()["x-health"],
                                           "test": ["CMD", "test", "-f", "/run/testbed/overlay-ready"]}


@pytest.mark.parametrize("variant", VARIANTS)
def test_render_writes_the_variant(variant: str, tmp_path: Path) -> None:
    r = render_to("baseline", "n3", tmp_path / "r", ran=variant)
    assert r.ran == variant
    files = (r.dir / layout.COMPOSE_FILES).read_text().split()
    assert files[:2] == [str(ROOT / "compose" / "base.yaml"), str(r.dir / layout.RAN_COMPOSE_FILE)]
    doc = yaml.safe_load((r.dir / layout.RAN_COMPOSE_FILE).read_text())
    assert set(doc["services"]) >= {"ue1", "ue2"}
    env = cenv.parse_env((r.dir / layout.COMPOSE_ENV).read_text())
    assert env["RAN"] == variant
    plan = (r.dir / layout.PLAN_FILE).read_text()
    assert ("EXPERIMENTAL" in plan) == (variant != "ueransim")
    if variant == "ueransim":
        assert (r.dir / layout.UERANSIM_DIR / "gnb.yaml").is_file() and not (r.dir / layout.OAI_DIR).exists()
    else:
        ue = r.dir / layout.OAI_DIR / "ue1.conf"
        assert ue.stat().st_mode & 0o777 == 0o600, "SIM secrets"
        assert not (r.dir / layout.UERANSIM_DIR).exists()


def test_render_dir_keeps_the_default_path() -> None:
    assert layout.render_dir(Path("/s"), "n3", "baseline") == Path("/s/render/n3/baseline")
    assert layout.render_dir(Path("/s"), "n3", "baseline", "ueransim") == Path("/s/render/n3/baseline")
    assert layout.render_dir(Path("/s"), "n3", "baseline", "split") == Path("/s/render/n3/baseline+split")


def test_render_cli_refuses_bad_ran_and_uu_before_writing(tmp_path: Path) -> None:
    env = {**os.environ, "STATE": str(tmp_path / "state"), "PYTHONPATH": str(ROOT)}
    for args, text in ((["--ran", "srsran"], "unknown RAN 'srsran'"),
                       (["--uu", "nea2-nia2"], "needs an OpenAirInterface RAN"),
                       (["--ran", "split", "--uu", "nea3-nia3"], "must be one of")):
        res = subprocess.run([sys.executable, "-m", "testbed", "render", "--profile", "baseline", *args],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert res.returncode == 2 and text in res.stderr, res.stderr
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize("variant,absent,present", [
    ("ueransim", ("CUCP_N2_IP", "DU_RAN_IP"), ("GNB_N2_IP", "UE_SCALE_RAN_IP")),
    ("oai", ("CUCP_N2_IP", "UE_SCALE_RAN_IP"), ("GNB_N2_IP", "UE1_RAN_IP")),
    ("split", ("GNB_N2_IP", "UE_SCALE_RAN_IP"), ("CUCP_N2_IP", "CUUP_N3_IP", "DU_F1U_IP", "UE1_RAN_IP")),
])
def test_a_variant_sees_only_its_own_nodes(variant: str, absent: tuple, present: tuple, tmp_path: Path) -> None:
    """Overlays derive their endpoints from the nodes on a plane's network (n3: gnb or cuup):
    the renderer hands them the values restricted to the nodes the RAN runs."""
    v = ran.restrict(stack.load(), variant)
    assert all(ran.runs_node(n, variant, stack.load()) for n in v["nodes"])
    env = cenv.parse_env((render_to("baseline", "n3", tmp_path / "r", ran=variant).dir / layout.COMPOSE_ENV).read_text())
    assert not set(absent) & set(env) and set(present) <= set(env)


def test_oai_nodes_take_the_variants_kind_and_overrides_merge_per_element(tmp_path: Path) -> None:
    from testbed.ran.oai import services as ran_oai
    v = stack.load()
    assert ran.restrict(v, "oai")["nodes"]["gnb"]["kind"] == "oai"
    assert ran.restrict(v, "ueransim")["nodes"]["gnb"]["kind"] == v["nodes"]["gnb"]["kind"]
    assert ran.restrict(v, "split")["nodes"]["du"]["kind"] == "oai"
    base = {"MACRLCs": [{"a": 1, "remote_n_address": "x"}], "gNBs": [{"E1_INTERFACE": [{"ipv4_cucp": "y", "t": 2}]}],
            "l": ["nea0"]}
    got = ran_oai.merge(base, {"MACRLCs": [{"remote_n_address": "127.0.0.1"}],
                               "gNBs": [{"E1_INTERFACE": [{"ipv4_cucp": "127.0.0.1"}]}], "l": ["nea2"]})
    assert got == {"MACRLCs": [{"a": 1, "remote_n_address": "127.0.0.1"}],
                   "gNBs": [{"E1_INTERFACE": [{"ipv4_cucp": "127.0.0.1", "t": 2}]}], "l": ["nea2"]}
    assert base["MACRLCs"][0]["remote_n_address"] == "x"
