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


# one mistake each: (profile, plane, file, text replaced, replacement, finding key, its message)
MISTAKES = {
    "privileged": ("baseline", "n3", "base.yaml", '    command: ["open5gs-amfd"',
                   '    privileged: true\n    command: ["open5gs-amfd"', "services.amf.privileged", "never"),
    "unneeded-capability": ("baseline", "n3", "base.yaml", '    command: ["open5gs-smfd"',
                            '    cap_add: [NET_ADMIN]\n    command: ["open5gs-smfd"', "services.smf.cap_add",
                            "capability NET_ADMIN is not needed by role nf (allowed: none"),
    "no-new-privileges": ("baseline", "n3", "base.yaml", '  security_opt: ["no-new-privileges:true"]\n', "",
                          "services.amf.security_opt", "no-new-privileges"),
    "cap-drop-all": ("baseline", "n3", "base.yaml", "  cap_drop: [ALL]\n", "", "services.udm.cap_drop",
                     "Docker's default capabilities"),
    # the RAN's services are rendered from the stack data (testbed/ran): <render>/compose/ran.yaml
    "tun-where-none-is-made": ("baseline", "n3", "render/compose/ran.yaml", "    command:\n    - nr-gnb\n",
                               "    devices: [/dev/net/tun:/dev/net/tun]\n    command:\n    - nr-gnb\n",
                               "services.gnb.devices", "device /dev/net/tun is not needed by role gnb"),
    "writable-root": ("baseline", "n3", "base.yaml", "  labels: {<<: *labels, testbed.role: nf}\n  read_only: true\n",
                      "  labels: {<<: *labels, testbed.role: nf}\n", "services.ausf.read_only",
                      "read-only root filesystem"),
    "host-network": ("baseline", "n3", "base.yaml", "  provision:\n", "  provision:\n    network_mode: host\n",
                     "services.provision.network_mode", "host's namespace"),
    "host-pid": ("baseline", "n3", "base.yaml", "  provision:\n", "  provision:\n    pid: host\n",
                 "services.provision.pid", "host's namespace"),
    "docker-socket": ("baseline", "n3", "base.yaml", "      - ../testbed/provision.py",
                      "      - /var/run/docker.sock:/var/run/docker.sock\n      - ../testbed/provision.py",
                      "services.provision.volumes[0]", "Docker socket"),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_a_service_holding_more_than_its_role_is_refused_naming_file_and_key(tmp_path: Path, mistake: str) -> None:
    profile, plane, name, old, new, key, says = MISTAKES[mistake]
    t = make_tree(tmp_path, profile, plane)
    path = t.render_dir / name.removeprefix("render/") if name.startswith("render/") else t.compose / name
    t.edit_text(path, old, new)
    assert_found(t.check(), path, key, "privilege", says)


def test_a_capability_beyond_the_role_in_the_rendered_fragment_names_that_file(tmp_path: Path) -> None:
    t = make_tree(tmp_path, "wireguard", "n3")
    frag = t.render_dir / "overlay.compose.yaml"
    text = frag.read_text()
    assert text.count("    - NET_ADMIN\n") == 2, "the gnb-net and upf-net holders"
    frag.write_text(text.replace("    - NET_ADMIN\n", "    - NET_ADMIN\n    - SYS_MODULE\n", 1))
    found = [f for f in t.check() if f.kind == "privilege"]
    assert len(found) == 1 and Path(found[0].file) == frag and "SYS_MODULE is not needed" in found[0].message
    assert found[0].key.endswith("-net.cap_add"), found[0].key


def test_a_role_must_be_named_known_and_of_the_renders_protocol(tmp_path: Path) -> None:
    t = make_tree(tmp_path)
    base, ran_file = t.compose / "base.yaml", t.render_dir / "compose" / "ran.yaml"
    t.edit_text(ran_file, "      testbed.role: gnb\n", "")
    t.edit_text(base, "labels: {<<: *labels, testbed.role: provision}", "labels: {<<: *labels, testbed.role: admin}")
    # a baseline render may not lend a holder the IPsec endpoint's role (and its NET_ADMIN)
    t.edit_text(base, "labels: {<<: *labels, testbed.role: holder}", "labels: {<<: *labels, testbed.role: holder-ipsec}")
    findings = t.check()
    assert_found(findings, ran_file, "services.gnb.labels", "privilege", "no testbed.role label")
    assert_found(findings, base, "services.provision.labels.testbed.role", "privilege", "unknown role 'admin'")
    assert_found(findings, base, "services.nrf-net.labels.testbed.role", "privilege",
                 "belongs to the ipsec overlay, but this render's protocol is none")
