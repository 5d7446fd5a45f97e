"""The Compose overlay fragment rendered by code (testbed/render/compose_overlay.py) for every
overlay protocol on each of its planes and on all of them: exactly the endpoints' holders
(tunnels) or NF containers (TLS), the entrypoint and mounts of docs/contracts.md, least
privilege (the role's fields of nf-configs/privileges.yaml, /dev/net/tun only for a userspace datapath),
the sysctls the hooks fill (on the namespace's owner); check-config passes on the merged model."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from testbed import channels, planes, privileges, profiles, ran, registry, stack
from testbed.check import check_render
from testbed.render import compose_overlay, layout
from tests.conftest import ROOT
from tests.testbed.render.helpers import compose_services, keys_root, plane_sets, render_to

VALUES = stack.load()
CASES = [(pid, ps) for pid in ("aes128gcm", "aes128gcm-psk-trap-queue", "wireguard", "tls13-aes128gcm")
         for ps in plane_sets(profiles.get(pid))]


def _fragment(r) -> dict:
    files = (r.dir / layout.COMPOSE_FILES).read_text().split()
    assert files[-1] == str(r.dir / compose_overlay.FRAGMENT), files
    return yaml.safe_load(Path(files[-1]).read_text())["services"]


@pytest.mark.parametrize("profile_id,plane", CASES)
def test_fragment_is_exactly_what_the_planes_need(profile_id: str, plane: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IPSEC_DATAPATH", "libipsec")
    monkeypatch.setenv("WIREGUARD_DATAPATH", "wireguard-go")
    r = render_to(profile_id, plane, tmp_path / "r")
    prof = r.profile
    covered = planes.split(r.plane)              # `all`: the planes of the render's RAN variant
    frag = _fragment(r)
    base = compose_services(r.ran)
    if prof.protocol == "tls":
        assert sorted(frag) == sorted(n for n in channels.nodes("sbi") if n in base)
        for nf, svc in frag.items():
            assert set(svc) == {"volumes", "labels", "cap_add"} and svc["cap_add"] == ["DAC_READ_SEARCH"]
            assert svc["labels"] == {privileges.ROLE_LABEL: "nf-tls"}
            assert all(m.endswith(":ro") and ".key:" not in m for m in svc["volumes"])
            assert f"${{KEYS_DIR:?run through scripts/lib/compose.sh (make up)}}/nodes/{nf}:/etc/testbed/keys/node:ro" \
                in svc["volumes"]
        return
    nodes = channels.endpoints(covered, ran.restrict(VALUES, r.ran))
    holders = {k: v for k, v in frag.items() if k.endswith("-net")}
    assert sorted(holders) == sorted(stack.holder_service(n) for n in nodes)
    # the sysctls the hooks fill are set by each namespace's owner, which the holder joins
    want = ({"net.core.xfrm_larval_drop": "${IPSEC_XFRM_LARVAL_DROP:-1}"} if prof.protocol == "ipsec"
            else {"net.ipv4.conf.all.rp_filter": "2"})
    assert {k: v for k, v in frag.items() if k not in holders} == {
        stack.netns_service(n): {"sysctls": want} for n in nodes}
    assert all(base[stack.holder_service(n)]["network_mode"] == f"service:{stack.netns_service(n)}" for n in nodes)
    for name, svc in holders.items():
        node = name.removesuffix("-net")
        assert base[name]["command"] == ["/opt/testbed/entrypoints/holder.sh"]
        assert svc["command"] == [f"/opt/testbed/{prof.protocol}/entrypoint.sh", "/etc/testbed/overlay"]
        role = privileges.role(f"holder-{prof.protocol}")
        assert svc["labels"] == {privileges.ROLE_LABEL: role.name} and svc["cap_add"] == sorted(role.capabilities)
        assert "cap_drop" not in svc and "security_opt" not in svc, "base.yaml's holder gives them (Compose: unique)"
        assert svc["read_only"] is True and svc["tmpfs"] == ["/run", "/tmp"]
        # userspace datapath forced above; trap modes never run on it (kernel xfrm only)
        userspace = prof.protocol == "wireguard" or prof.params["mode"] == "start"
        assert svc.get("devices") == (["/dev/net/tun:/dev/net/tun"] if userspace else None)
        mounts = {v.rsplit(":", 2)[1]: v.rsplit(":", 2)[0] for v in svc["volumes"]}
        assert mounts["/etc/testbed/overlay"].endswith(f"}}/{node}")
        assert (r.dir / "overlay" / node).is_dir()
        entry = ROOT / prof.protocol / "entrypoint.sh"
        # the entrypoint comes with the tools image (images/tools/Dockerfile copies <plug-in>/*.sh),
        # not from a mount of the repository: only the node's rendered dir is mounted
        assert set(mounts) == {"/etc/testbed/overlay"} and os.access(entry, os.X_OK)
        assert "sysctls" not in svc
    env = (r.dir / layout.COMPOSE_ENV).read_text()
    assert f"PLANE={planes.expr(covered)}\n" in env
    assert check_render(r.dir, keys_root=keys_root()) == []


@pytest.mark.parametrize("protocol,profile_id,var,kernel", [
    ("ipsec", "aes128gcm", "IPSEC_DATAPATH", "kernel"),
    ("wireguard", "wireguard", "WIREGUARD_DATAPATH", "kernel"),
])
def test_tun_only_for_a_userspace_datapath(protocol: str, profile_id: str, var: str, kernel: str,
                                           tmp_path: Path) -> None:
    # the command line reads the datapath variables (testbed/cli/render.py) and hands them down
    frag = _fragment(render_to(profile_id, "n2", tmp_path / "k", datapath_choices={var: kernel}))
    assert all("devices" not in svc for svc in frag.values())
    assert registry.overlay(protocol).userspace_possible({"datapath_choices": {var: kernel}}) is False
    # NULL-GMAC has no userspace ESP: its holders never get the TUN device, whatever the host
    frag = _fragment(render_to("nullgmac", "n4", tmp_path / "g", datapath_choices={"IPSEC_DATAPATH": "auto"}))
    assert all("devices" not in svc for svc in frag.values())


def test_baseline_has_no_fragment(tmp_path: Path) -> None:
    r = render_to("baseline", "all", tmp_path / "b")
    assert not (r.dir / compose_overlay.FRAGMENT).exists()
    # base.yaml and the RAN's rendered services only
    assert (r.dir / layout.COMPOSE_FILES).read_text().split() == [str(ROOT / "compose" / "base.yaml"),
                                                                  str(r.dir / layout.RAN_COMPOSE_FILE)]
