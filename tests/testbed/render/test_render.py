"""The render dir of a profile: every profile class renders, files and modes, hooks, env."""
from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest
import yaml

from tests import render_support
from testbed import planes, profiles, ran, render, stack
from testbed.render import layout
from tests.testbed.render.helpers import keys_root, plane_sets, render_to
from wireguard import rosenpass

COMPOSE_DIR = Path(render.__file__).resolve().parents[2] / "compose"


def _profile_sample() -> list[tuple[str, str]]:
    """Every protocol x plane set (each plane and `all`), every IPsec auth x mode, every TLS suite."""
    out: list[tuple[str, str]] = []
    seen_ipsec: set[tuple[str, str, str]] = set()
    for p in profiles.load().values():
        if p.refused:               # listed, never rendered (tests/dtls/test_overlay.py)
            continue
        for plane in plane_sets(p):
            if p.protocol == "ipsec":
                key = (plane, p.params["auth"], p.params["mode"])
                if key in seen_ipsec:
                    continue
                seen_ipsec.add(key)
            out.append((p.id, plane))
    return out


SAMPLE = _profile_sample()


def test_sample_covers_every_protocol_and_plane() -> None:
    combos = {(profiles.get(pid).protocol, plane) for pid, plane in SAMPLE}
    for proto in ("none", "ipsec", "wireguard"):
        assert {(proto, pl) for pl in ("n3", "sbi", "n2", "n4", "all")} <= combos, proto
    assert ("tls", "sbi") in combos
    assert ("dtls", "n2") in combos
    # the 18 suites of the papers and the 6 post-quantum TLS profiles (docs/post-quantum.md)
    assert len({pid for pid, _ in SAMPLE if pid.startswith("tls")}) == 18 + 6


@pytest.mark.parametrize("profile_id,plane", SAMPLE)
def test_profile_renders(profile_id: str, plane: str, tmp_path: Path) -> None:
    prof = profiles.get(profile_id)
    # key material only newer tools make (the render stops naming it; tests/testbed/check/test_every_profile.py)
    if prof.params.get("cert") == "mldsa65" and not (keys_root() / "ca" / "ca-mldsa65.crt").is_file():
        pytest.skip("no ML-DSA-65 certificates: `make keys` with OpenSSL >= 3.5 (Debian 13)")
    if prof.params.get("rosenpass") and rosenpass.generator(keys_root() / "rosenpass") is None:
        # the render makes the Rosenpass key pairs (wireguard/overlay.py), with a program for it
        pytest.skip("no rosenpass to make the Rosenpass keys: `make rosenpass` (on PATH) or `make build`")
    r = render_to(profile_id, plane, tmp_path / "r")
    for nf in ("nrf", "ausf", "udm", "udr", "pcf", "bsf", "nssf", "amf", "smf", "upf"):
        cfg = yaml.safe_load((r.dir / layout.OPEN5GS_DIR / f"{nf}.yaml").read_text())
        assert nf in cfg
    if r.ran == "ueransim":
        for name in ("gnb", "ue1", "ue2", "ue-scale"):
            assert (r.dir / layout.UERANSIM_DIR / f"{name}.yaml").is_file()
    else:                          # the split RAN's planes (render_to picks RAN=split for them)
        for name in ("cucp", "cuup", "du", "ue1", "ue2"):
            assert (r.dir / layout.OAI_DIR / f"{name}.conf").is_file()
    env = (r.dir / layout.COMPOSE_ENV).read_text()
    covered = tuple(p for p in profiles.planes_for(r.profile, plane) if ran.has_plane(r.ran, p))
    assert f"PROFILE={profile_id}\n" in env and f"PLANE={planes.expr(covered)}\n" in env
    assert r.dir == tmp_path / "r" and r.plane == planes.expr(covered)
    files = (r.dir / layout.COMPOSE_FILES).read_text().split()
    assert files[0] == str(COMPOSE_DIR / "base.yaml")
    assert (str(r.dir / "overlay.compose.yaml") in files) == (r.profile.protocol != "none")
    assert "&id" not in (r.dir / layout.OPEN5GS_DIR / "amf.yaml").read_text(), \
        "Open5GS does not resolve YAML aliases: write values out"


def test_secrets_are_private_and_stale_files_go(tmp_path: Path) -> None:
    out = tmp_path / "r"
    out.mkdir()
    (out / "stale.yaml").write_text("old")
    r = render_to("baseline", "n3", out)
    assert not (out / "stale.yaml").exists()
    for rel in ("ueransim/ue1.yaml", "ueransim/ue2.yaml", "ueransim/ue-scale.yaml", layout.PROVISION_FILE):
        assert stat.S_IMODE((r.dir / rel).stat().st_mode) == 0o600, rel
    assert stat.S_IMODE(r.dir.stat().st_mode) == 0o700


def test_ue_configs_carry_the_sim_secrets(tmp_path: Path) -> None:
    r = render_to("baseline", "n3", tmp_path / "r")
    from testbed import keys
    subs = keys.subscribers(keys_root())
    ue1 = yaml.safe_load((r.dir / "ueransim/ue1.yaml").read_text())
    assert ue1["supi"] == f"imsi-{subs['ue1']['imsi']}"
    assert ue1["key"] == subs["ue1"]["k"].upper() and ue1["op"] == subs["ue1"]["opc"].upper()
    prov = json.loads((r.dir / layout.PROVISION_FILE).read_text())
    imsis = [s["imsi"] for s in prov["subscribers"]]
    count = stack.load()["subscribers"]["scale"]["count"]
    assert imsis[:2] == [subs["ue1"]["imsi"], subs["ue2"]["imsi"]]
    assert len(imsis) == 2 + count and len(set(imsis)) == len(imsis)
    assert imsis[2] == subs["scale"]["imsi_first"] and imsis[-1] == str(int(imsis[2]) + count - 1).zfill(15)


def test_compose_env_defines_every_variable_the_compose_files_need(tmp_path: Path) -> None:
    r = render_to("baseline", "n3", tmp_path / "r", use_scp=True)
    env = dict(line.split("=", 1) for line in (r.dir / layout.COMPOSE_ENV).read_text().splitlines()
               if line and not line.startswith("#"))
    needed: set[str] = set()
    for f in (COMPOSE_DIR / "base.yaml", COMPOSE_DIR / "scp.yaml"):
        # ${VAR} and ${VAR:?msg} must come from compose.env; ${VAR:-default} may not
        needed |= set(re.findall(r"\$\{([A-Z0-9_]+)(?:\}|:\?)", f.read_text()))
    images = {"OPEN5GS_IMAGE", "UERANSIM_IMAGE", "TOOLS_IMAGE", "MONGO_IMAGE"}   # scripts/lib/compose.sh
    assert needed - images - set(env) == set()
    assert env["UE1_RAN_IP"] == stack.address("ue1", "ran") and env["NET_SBI_SUBNET"] == "10.100.1.0/24"
    assert env["AMF_FQDN"] == "amf.localdomain"
    assert str(COMPOSE_DIR / "scp.yaml") in (r.dir / layout.COMPOSE_FILES).read_text()


def test_tls_hooks_reach_the_nf_configs_and_env(tmp_path: Path) -> None:
    r = render_to("tls13-aes256gcm", "sbi", tmp_path / "r")
    amf = yaml.safe_load((r.dir / "open5gs/amf.yaml").read_text())["amf"]
    assert amf["default"]["tls"]["server"]["scheme"] == "https"
    assert amf["ngap"]["server"], "the hook merges into, not replaces, the rendered config"
    assert "TLS" in (r.dir / "env/amf.env").read_text().upper()


def test_plane_the_profile_does_not_support_is_refused(tmp_path: Path) -> None:
    root = keys_root()
    from testbed import keys
    # refused when the profile is resolved (once, in testbed/orchestrate.py select), before any file
    with pytest.raises(profiles.ProfileError, match="cannot run on the n3 plane"):
        render_support.render(profiles.get("tls13-aes128gcm"), "n3", tmp_path / "r",
                      subscribers=keys.subscribers(root), keys_dir=root, commit="t")


def test_plan_names_profile_files_and_ping_target(tmp_path: Path) -> None:
    r = render_to("baseline", "sbi", tmp_path / "r")
    text = (r.dir / layout.PLAN_FILE).read_text()
    assert "baseline" in text and "base.yaml" in text and stack.load()["networks"]["n6"]["gateway"] in text


def test_tls_with_scp_points_every_client_at_https_fqdns(tmp_path) -> None:
    """The overlay hooks must know the SCP is on, or its URIs stay plain http."""
    from testbed import keys, profiles
    keys_root = keys.ensure(tmp_path / "state")
    r = render_support.render(profiles.get("tls13-aes256gcm", "sbi"), "sbi", tmp_path / "out",
                      subscribers=keys.subscribers(keys_root), keys_dir=keys_root, use_scp=True)
    amf = (r.dir / "open5gs" / "amf.yaml").read_text()
    assert "https://scp.localdomain:7777" in amf and "http://10.100.1.200" not in amf
