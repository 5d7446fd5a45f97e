"""check-config's least-privilege rules (testbed/check/privilege_rules.py) on a copy of the real
compose files with one mistake each: the finding names the file that made the mistake (base
or fragment) and the key. The real files pass in test_rules.py::test_real_files_pass."""
from __future__ import annotations

from pathlib import Path

import pytest

from testbed.check import Finding
from tests.testbed.check.test_rules import Tree, assert_found, make_tree


def privilege_findings(t: Tree) -> list[Finding]:
    return [f for f in t.check() if f.kind == "privilege"]


def test_the_real_files_hold_no_more_than_their_roles(tmp_path: Path) -> None:
    for profile, plane in (("baseline", "sbi"), ("aes256gcm", "n3"), ("wireguard", "sbi"),
                           ("tls13-aes128gcm", "sbi")):
        t = make_tree(tmp_path / profile, profile, plane, use_scp=True)
        assert privilege_findings(t) == [], "\n".join(f.format() for f in privilege_findings(t))


def test_a_privileged_service_is_refused(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    base = t.compose / "base.yaml"
    t.edit_text(base, '    command: ["open5gs-amfd"', '    privileged: true\n    command: ["open5gs-amfd"')
    assert_found(t.check(), base, "services.amf.privileged", "privilege", "never")


def test_an_unneeded_capability_is_refused(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    base = t.compose / "base.yaml"
    t.edit_text(base, '    command: ["open5gs-smfd"', '    cap_add: [NET_ADMIN]\n    command: ["open5gs-smfd"')
    f = assert_found(t.check(), base, "services.smf.cap_add", "privilege", "capability NET_ADMIN is not needed by role nf")
    assert "allowed: none" in f.message


def test_a_capability_beyond_the_role_in_an_overlay_fragment_names_the_fragment(tmp_path: Path) -> None:
    t = make_tree(tmp_path, "wireguard", "n3")
    frag = t.compose / "overlay-wireguard-n3.yaml"
    t.edit_text(frag, "cap_add: [DAC_READ_SEARCH, NET_ADMIN]", "cap_add: [DAC_READ_SEARCH, NET_ADMIN, SYS_MODULE]")
    for holder in ("gnb-net", "upf-net"):
        assert_found(t.check(), frag, f"services.{holder}.cap_add", "privilege", "SYS_MODULE is not needed")


def test_missing_no_new_privileges_is_refused(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    base = t.compose / "base.yaml"
    t.edit_text(base, '  security_opt: ["no-new-privileges:true"]\n', "")
    findings = t.check()
    for svc in ("nrf", "nrf-net", "mongo", "provision", "upf", "gnb", "ue1"):
        assert_found(findings, base, f"services.{svc}.security_opt", "privilege", "no-new-privileges")


def test_missing_cap_drop_all_is_refused(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    base = t.compose / "base.yaml"
    t.edit_text(base, "  cap_drop: [ALL]\n", "")
    assert_found(t.check(), base, "services.udm.cap_drop", "privilege", "Docker's default capabilities")


def test_tun_where_no_tun_is_made_is_refused(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    base = t.compose / "base.yaml"
    t.edit_text(base, '    command: ["nr-gnb"', '    devices: ["/dev/net/tun:/dev/net/tun"]\n    command: ["nr-gnb"')
    assert_found(t.check(), base, "services.gnb.devices", "privilege", "device /dev/net/tun is not needed by role gnb")


def test_a_writable_root_where_the_role_is_read_only(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    base = t.compose / "base.yaml"
    t.edit_text(base, "  labels: {<<: *labels, testbed.role: nf}\n  read_only: true\n",
                "  labels: {<<: *labels, testbed.role: nf}\n")
    assert_found(t.check(), base, "services.ausf.read_only", "privilege", "read-only root filesystem")


def test_a_role_must_be_named_known_and_of_the_renders_protocol(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    base = t.compose / "base.yaml"
    t.edit_text(base, "labels: {<<: *labels, testbed.role: gnb}", "labels: *labels")
    t.edit_text(base, "labels: {<<: *labels, testbed.role: provision}", "labels: {<<: *labels, testbed.role: admin}")
    # a baseline render may not lend a holder the IPsec endpoint's role (and its NET_ADMIN)
    t.edit_text(base, "labels: {<<: *labels, testbed.role: holder}", "labels: {<<: *labels, testbed.role: holder-ipsec}")
    findings = t.check()
    assert_found(findings, base, "services.gnb.labels", "privilege", "no testbed.role label")
    assert_found(findings, base, "services.provision.labels.testbed.role", "privilege", "unknown role 'admin'")
    assert_found(findings, base, "services.nrf-net.labels.testbed.role", "privilege",
                 "belongs to the ipsec overlay, but this render's protocol is none")


@pytest.mark.parametrize("old,new,key,text", [
    ("  provision:\n", "  provision:\n    network_mode: host\n", "network_mode", "host's namespace"),
    ("  provision:\n", "  provision:\n    pid: host\n", "pid", "host's namespace"),
    ("      - ../testbed/provision.py", "      - /var/run/docker.sock:/var/run/docker.sock\n      - ../testbed/provision.py",
     "volumes[0]", "Docker socket"),
])
def test_host_namespaces_and_the_docker_socket_are_refused(tmp_path: Path, old: str, new: str, key: str,
                                                           text: str) -> None:
    t = make_tree(tmp_path)
    base = t.compose / "base.yaml"
    t.edit_text(base, old, new)
    assert_found(t.check(), base, f"services.provision.{key}", "privilege", text)
