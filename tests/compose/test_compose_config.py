"""The compose files: `docker compose config` on every combination (base, + SCP, + each
overlay fragment) where Compose v2 exists; static checks everywhere."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from testbed import profiles
from testbed.check.rules import image_defaults
from testbed.render import layout
from tests.conftest import ROOT
from tests.testbed.render.helpers import plane_sets, render_to

COMPOSE = ROOT / "compose"
# what each RAN variant (testbed/ran/, RAN=...) runs, written out here rather than read from the
# renderer: the nodes with a namespace holder `<node>-net`, and the UEs (the scaling UEs are
# UERANSIM's `nr-ue -n` only)
RAN_HOLDERS = {"ueransim": ("gnb",), "oai": ("gnb",), "split": ("cucp", "cuup", "du")}
RAN_UES = {"ueransim": ("ue1", "ue2", "ue-scale"), "oai": ("ue1", "ue2"), "split": ("ue1", "ue2")}


def expected_services(ran: str) -> set[str]:
    """The services `docker compose config --services` lists (profiles ue2 and scale on) for a
    RAN variant, without the SCP."""
    return ({"nrf", "amf", "smf", "upf", "mongo", "provision"} | set(RAN_UES[ran])
            | {n for node in RAN_HOLDERS[ran] for n in (node, f"{node}-net")})


def combinations() -> list[tuple[str, str, bool]]:
    """(profile, plane, scp): the baseline with and without SCP, and the first profile of every
    overlay protocol on each of its planes and on all of them (the rendered overlay fragment),
    with and without SCP."""
    out = [("baseline", "n3", False), ("baseline", "sbi", True)]
    seen: set[str] = set()
    for p in profiles.load().values():
        if p.protocol == "none" or p.protocol in seen:
            continue
        seen.add(p.protocol)
        for plane in plane_sets(p):
            out += [(p.id, plane, False), (p.id, plane, True)]
    return out


def _compose_v2() -> str | None:
    if shutil.which("docker") is None:
        return "docker CLI missing"
    res = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        return "`docker compose` (Compose v2 plugin) missing (make compose-plugin)"
    return None


def test_every_compose_file_is_yaml_and_names_only_known_networks(tmp_path: Path) -> None:
    base = yaml.safe_load((COMPOSE / "base.yaml").read_text())
    nets = set(base["networks"])
    rendered = [render_to("baseline", "n3", tmp_path / ran, ran=ran).dir / layout.RAN_COMPOSE_FILE
                for ran in ("ueransim", "oai", "split")]
    for f in sorted(COMPOSE.glob("*.yaml")) + rendered:
        nets |= set((yaml.safe_load(f.read_text()) or {}).get("networks") or {})
    for f in sorted(COMPOSE.glob("*.yaml")) + rendered:
        data = yaml.safe_load(f.read_text())
        assert isinstance(data, dict) and "services" in data, f
        for name, svc in data["services"].items():
            for net in (svc or {}).get("networks") or {}:
                assert net in nets, f"{f.name}: services.{name} uses network {net} not defined in base.yaml"


@pytest.mark.parametrize("ran", ["ueransim", "oai", "split"])
def test_stack_follows_the_holder_pattern_and_least_privilege(ran: str, tmp_path: Path) -> None:
    """base.yaml + the RAN variant's rendered services (testbed/ran/), merged as Compose does."""
    r = render_to("baseline", "n3", tmp_path / "r", ran=ran)
    files = [Path(f) for f in (r.dir / layout.COMPOSE_FILES).read_text().split() if f]
    services: dict = {}
    for f in files:
        for name, svc in (yaml.safe_load(f.read_text()).get("services") or {}).items():
            services[name] = {**services.get(name, {}), **svc}
    ues = {"ue1", "ue2", "ue-scale"}
    for name, svc in services.items():
        assert not svc.get("privileged"), f"{name}: privileged"
        # the namespace owners only sleep: running is all there is to know of them
        assert "healthcheck" in svc or name == "provision" or name.endswith("-ns"), f"{name} has no healthcheck"
        assert svc.get("cap_drop") == ["ALL"] and svc.get("security_opt") == ["no-new-privileges:true"], name
        caps = set(svc.get("cap_add") or [])
        if "NET_ADMIN" in caps or svc.get("devices"):
            assert name in {"upf"} | ues, f"{name} should not need NET_ADMIN or devices"
        if name.endswith("-net"):
            node = name[:-4]
            assert node in services, f"holder {name} without program {node}"
            prog = services[node]
            # program and holder in the namespace of the owner, which alone has the networks
            owner = services[f"{node}-ns"]
            assert prog["network_mode"] == svc["network_mode"] == f"service:{node}-ns"
            assert "networks" not in svc and "networks" not in prog and owner["networks"]
            assert owner["labels"]["testbed.role"] == "netns" and "cap_add" not in owner
            assert prog["depends_on"][name] == {"condition": "service_healthy"}
            assert svc["healthcheck"]["test"] == ["CMD", "test", "-f", "/run/testbed/overlay-ready"]
    for node in ("nrf", "ausf", "udm", "udr", "pcf", "bsf", "nssf", "amf", "smf", "upf") + RAN_HOLDERS[ran]:
        assert f"{node}-net" in services and f"{node}-ns" in services, node
    assert ("ue-scale" in services) == (ran == "ueransim")
    assert "sbi" not in services["mongo"]["networks"], "MongoDB stays off the sbi network"


def test_the_compose_wrapper_exports_the_image_defaults() -> None:
    """scripts/lib/compose.sh takes the image names from images/defaults.env; the caller's wins."""
    ours = image_defaults()
    if not ours:
        pytest.skip("images/defaults.env (images) not in this checkout")
    assert {"OPEN5GS_IMAGE", "UERANSIM_IMAGE", "TOOLS_IMAGE", "MONGO_IMAGE"} <= set(ours)
    script = 'source scripts/lib/compose.sh; echo "$OPEN5GS_IMAGE|$UERANSIM_IMAGE|$TOOLS_IMAGE|$MONGO_IMAGE"'
    env = {k: v for k, v in os.environ.items() if not k.endswith("_IMAGE")}
    out = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, env=env, timeout=30)
    assert out.stdout.strip() == "|".join(ours[k] for k in ("OPEN5GS_IMAGE", "UERANSIM_IMAGE", "TOOLS_IMAGE",
                                                             "MONGO_IMAGE")), out.stderr
    assert ours["OPEN5GS_IMAGE"].startswith("g5tb/open5gs:2.7.7-"), "built images carry their inputs' hash"
    env["MONGO_IMAGE"] = "mongo:4.4"
    out = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, env=env, timeout=30)
    assert out.stdout.strip().endswith("|mongo:4.4"), "an explicit name is used as it is"
    env["MONGO_IMAGE"] = "ferretdb"
    out = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, env=env, timeout=30)
    assert out.stdout.strip().endswith("|" + image_defaults()["FERRETDB_IMAGE"]), out.stderr


@pytest.mark.docker
@pytest.mark.parametrize("profile,plane,scp", combinations())
def test_docker_compose_config(profile: str, plane: str, scp: bool, tmp_path: Path) -> None:
    missing = _compose_v2()
    if missing:
        pytest.skip(f"{missing}: cannot run `docker compose config` here")
    r = render_to(profile, plane, tmp_path / "r", use_scp=scp)
    files = [f for f in (r.dir / layout.COMPOSE_FILES).read_text().split() if f]
    # like scripts/lib/compose.sh: the render's own keys must not be overridden by the caller's
    render_keys = {"PROFILE", "PLANE", "PROTOCOL", "TESTBED_COMMIT", "RENDER_DIR", "OVERLAY_DIR", "KEYS_DIR", "REPO_DIR"}
    env = {k: v for k, v in os.environ.items() if k not in render_keys}
    env.update(image_defaults())
    cmd = ["docker", "compose", "-p", "g5tb-test", "--env-file", str(r.dir / layout.COMPOSE_ENV)]
    for f in files:
        cmd += ["-f", f]
    for prof in ("ue2", "scale"):
        cmd += ["--profile", prof]
    res = subprocess.run(cmd + ["config", "--quiet"], capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 0, res.stderr
    res = subprocess.run(cmd + ["config", "--services"], capture_output=True, text=True, timeout=60, env=env)
    services = set(res.stdout.split())
    # the split RAN's planes (f1c, f1u, e1) render RAN=split (render_to): its CU-CP, CU-UP and DU
    # stand where the other variants run one gNB, and it has no scaling UEs
    assert r.ran == ("split" if set(plane.split(",")) & {"f1c", "f1u", "e1"} else "ueransim"), r.ran
    want = expected_services(r.ran)
    assert want <= services, f"RAN={r.ran}: missing {sorted(want - services)}"
    others = {s for v in RAN_HOLDERS if v != r.ran for n in RAN_HOLDERS[v] + RAN_UES[v] for s in (n, f"{n}-net")}
    assert not (services & others) - want, f"RAN={r.ran}: another variant's services {sorted((services & others) - want)}"
    assert ("scp" in services) == scp
