"""The security function in the Docker stack (testbed/secfn/compose.py through the dimension
hooks of testbed/dimensions.py that testbed/render calls): every SECFN x IDS unit under the baseline and both N3 overlays renders, passes the stack's own
configuration check, and asks for no more privilege than it needs; `docker compose config`
where Compose v2 exists."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests import render_support
from testbed import check, keys, privileges, profiles, render, secfn
from testbed.check.rules import image_defaults
from testbed.render import layout
from testbed.secfn import compose as secfn_compose
from testbed.secfn import engines
from testbed.secfn.plugin import SecfnDimension
from tests.testbed.render.helpers import keys_root

UNITS = secfn.all_units()


def _render(profile: str, unit: str, out: Path) -> render.Rendered:
    root = keys_root()
    sf = secfn.resolve(*secfn.parse_unit(unit))
    return render_support.render(profiles.get(profile, "n3"), "n3", out, subscribers=keys.subscribers(root), keys_dir=root,
                         commit="test", dimensions=(SecfnDimension(sf),))


def _fragment(r: render.Rendered) -> Path:
    return r.dir / "secfn.compose.yaml"


def _services(r: render.Rendered) -> dict:
    return yaml.safe_load(_fragment(r).read_text())["services"]


@pytest.mark.parametrize("profile", ["baseline", "aes128gcm", "wireguard"])
@pytest.mark.parametrize("unit", UNITS)
def test_every_unit_renders_and_passes_the_stack_check(profile: str, unit: str, tmp_path: Path) -> None:
    r = _render(profile, unit, tmp_path / "r")
    files = (r.dir / layout.COMPOSE_FILES).read_text().split()
    assert files[-1] == str(_fragment(r))                  # after base.yaml and the overlay's
    findings = check.check_render(r.dir, keys_root=keys_root())
    assert not findings, "\n".join(f.format() for f in findings)
    svc = _services(r)
    sf = secfn.resolve(*secfn.parse_unit(unit))
    assert ("secfn" in svc) == bool(sf.engine)
    assert svc["dn"]["networks"]["n6"]["ipv4_address"] == "${DN_SERVER_IP}"
    assert r.env["DN_SERVER_IP"] == "10.100.6.20" and r.env["SECFN"] == sf.function
    assert set(svc["ue1"]["depends_on"]) == ({"dn", "secfn"} if sf.engine else {"dn"})
    assert svc["ue-ditg"]["network_mode"] == "service:ue1"
    assert ("upf" in svc) == (not sf.nat) and (sf.nat or svc["upf"]["environment"]["UPF_NAT"] == "0")
    assert "secfn" in (r.dir / layout.PLAN_FILE).read_text()


def test_least_privilege_from_the_role_table(tmp_path: Path) -> None:
    """Each service of its own holds exactly its role of nf-configs/privileges.yaml (check-config
    judges the merged model above; here the roles each service names)."""
    want = {"secfn": "secfn-engine", "dn": "secfn-server", "ue-ditg": "secfn-sender"}
    for unit in ("ips-nat-snort", "none-none"):
        svc = _services(_render("baseline", unit, tmp_path / unit))
        for name, s in svc.items():
            if name in ("ue1", "upf"):                 # merged into base.yaml's services
                assert "cap_add" not in s and "labels" not in s, name
                continue
            role = want[name] if (name, unit) != ("dn", "none-none") else "secfn-server-routed"
            assert s["labels"][privileges.ROLE_LABEL] == role, name
            assert {k: v for k, v in s.items() if k in ("cap_drop", "cap_add", "security_opt", "read_only",
                                                         "tmpfs", "devices")} == \
                {k: v for k, v in privileges.role(role).compose_fields().items() if k != "labels"}, name
            assert s["labels"]["testbed.run"] == "${RUN_ID}"          # the stack's own labels stay
            assert not s.get("privileged") and not s.get("devices"), name
        caps = {n: set(s.get("cap_add") or []) for n, s in svc.items()}
        if unit == "ips-nat-snort":
            assert caps["secfn"] == {"NET_ADMIN", "NET_RAW"}
            assert svc["secfn"]["network_mode"] == "service:upf-ns"
            assert svc["secfn"]["image"].startswith("${SNORT_IMAGE")
            assert caps["dn"] == {"NET_BIND_SERVICE"}            # NAT: no route to set
        else:
            assert caps["dn"] == {"NET_BIND_SERVICE", "NET_ADMIN"}   # routes the UEs back itself
        assert caps["ue-ditg"] == {"NET_RAW"}


def test_engine_directory_for_the_container(tmp_path: Path) -> None:
    r = _render("baseline", "ips-nat-suricata", tmp_path / "r")
    d = r.dir / "secfn" / "engine"
    env = dict(line.split("=", 1) for line in (d / engines.ENV_FILE).read_text().splitlines() if "=" in line)
    assert env["LOG_DIR"] == str(secfn_compose.LOG_AT) and env["UE_IFACE"] == "ogstun"
    assert env["IPTABLES"] == "iptables" and shlex.split(env["READY_LINE"]) == ["Engine started"]
    argv = (d / engines.ARGV_FILE).read_text().split()
    assert argv[:3] == ["suricata", "-c", f"{secfn_compose.ENGINE_AT}/suricata.yaml"]
    cfg = yaml.safe_load((d / "suricata.yaml").read_text().split("---", 1)[1])
    assert cfg["rule-files"][0] == f"{secfn_compose.ENGINE_AT}/testbed-secfn.rules"


def test_render_cli_refuses_a_secfn_without_n3(tmp_path: Path) -> None:
    env = {**os.environ, "SECFN": "ips-nat", "IDS": "snort", "STATE": str(tmp_path)}
    res = subprocess.run([os.environ.get("PYTHON", "python3"), "-m", "testbed", "render", "--profile", "aes128gcm-trap",
                          "--state", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120,
                         cwd=Path(__file__).resolve().parents[3], check=False)
    assert res.returncode == 2 and "needs an N3 profile" in res.stderr
    env["IDS"] = "zeek"
    res = subprocess.run([os.environ.get("PYTHON", "python3"), "-m", "testbed", "render", "--profile", "baseline",
                          "--state", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120,
                         cwd=Path(__file__).resolve().parents[3], check=False)
    assert res.returncode == 2 and "valid: suricata, snort, passthrough" in res.stderr


@pytest.mark.docker
@pytest.mark.parametrize("unit", ["ips-nat-snort", "ids-nat-suricata", "none-none"])
def test_docker_compose_config(unit: str, tmp_path: Path) -> None:
    if shutil.which("docker") is None or subprocess.run(["docker", "compose", "version"], capture_output=True,
                                                        timeout=30).returncode != 0:
        pytest.skip("`docker compose` (Compose v2) missing (make compose-plugin): cannot run `docker compose config` here")
    r = _render("aes128gcm", unit, tmp_path / "r")
    env = {k: v for k, v in os.environ.items() if k not in ("PROFILE", "PLANE", "RENDER_DIR", "REPO_DIR")}
    env.update(image_defaults())
    cmd = ["docker", "compose", "-p", "g5tb-test", "--env-file", str(r.dir / layout.COMPOSE_ENV)]
    for f in (r.dir / layout.COMPOSE_FILES).read_text().split():
        cmd += ["-f", f]
    res = subprocess.run(cmd + ["config", "--services"], capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 0, res.stderr
    assert {"dn", "ue-ditg", "upf", "ue1"} <= set(res.stdout.split())
