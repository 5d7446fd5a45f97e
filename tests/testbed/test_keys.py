"""testbed/keys.py + tls-certs/: real openssl and wg, generated into a temporary state dir."""
from __future__ import annotations

import copy
import sys
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ipsec import keys as ipsec_keys
from testbed import ROOT, keys, stack
from wireguard import keys as wg_keys
from tests.conftest import require_tools

EXPECTED_ENDPOINTS = {"nrf", "scp", "ausf", "udm", "udr", "pcf", "bsf", "nssf", "amf", "smf", "upf", "gnb",
                      "cucp", "cuup", "du"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tools("openssl", "wg")
    return keys.ensure(tmp_path_factory.mktemp("keys-state"))


def _openssl(*args: str) -> str:
    return subprocess.run(["openssl", *args], check=True, capture_output=True, text=True).stdout


def test_endpoint_nodes_are_the_nfs_gnb_and_upf() -> None:
    assert set(keys.endpoint_nodes()) == EXPECTED_ENDPOINTS


def test_every_certificate_verifies_against_its_own_ca_only(root: Path) -> None:
    for node in EXPECTED_ENDPOINTS:
        for keytype, other in (("ecdsa", "rsa"), ("rsa", "ecdsa")):
            crt = keys.node_dir(root, node) / f"{keytype}.crt"
            ok = subprocess.run(["openssl", "verify", "-CAfile", f"{keys.ca_prefix(root, keytype)}.crt", str(crt)],
                                capture_output=True, text=True)
            assert ok.returncode == 0, ok.stderr
            bad = subprocess.run(["openssl", "verify", "-CAfile", f"{keys.ca_prefix(root, other)}.crt", str(crt)],
                                 capture_output=True, text=True)
            assert bad.returncode != 0, f"{crt} verified against the {other} CA"


def test_certificate_names_key_types_and_usage(root: Path) -> None:
    values = stack.load()
    for node in EXPECTED_ENDPOINTS:
        for keytype in keys.KEY_TYPES:
            text = _openssl("x509", "-in", str(keys.node_dir(root, node) / f"{keytype}.crt"), "-noout", "-text")
            assert f"Subject: CN = {node}.{values['fqdn_domain']}" in text
            san = re.search(r"Subject Alternative Name: *\n\s*(.+)", text).group(1)
            want = [f"DNS:{node}.{values['fqdn_domain']}"] + [
                f"IP Address:{ip}" for ip in values["nodes"][node]["networks"].values()]
            assert san.split(", ") == want
            assert "TLS Web Server Authentication, TLS Web Client Authentication" in text
            assert "CA:FALSE" in text
            if keytype == "ecdsa":
                assert "ASN1 OID: prime256v1" in text
            else:
                assert "Public-Key: (2048 bit)" in text
    for keytype, marker in (("ecdsa", "prime256v1"), ("rsa", "(2048 bit)")):
        ca = _openssl("x509", "-in", f"{keys.ca_prefix(root, keytype)}.crt", "-noout", "-text")
        assert "CA:TRUE" in ca and marker in ca


def test_node_key_matches_its_certificate(root: Path) -> None:
    d = keys.node_dir(root, "amf")
    for keytype in keys.KEY_TYPES:
        from_key = _openssl("pkey", "-in", str(d / f"{keytype}.key"), "-pubout")
        from_crt = _openssl("x509", "-in", str(d / f"{keytype}.crt"), "-noout", "-pubkey")
        assert from_key == from_crt


def test_no_node_keys_for_non_endpoints(root: Path) -> None:
    assert {p.name for p in (root / "nodes").iterdir()} == EXPECTED_ENDPOINTS
    assert {p.stem for p in (root / "wg").glob("*.key")} == EXPECTED_ENDPOINTS


def test_modes_private_files_0600_dirs_0700(root: Path) -> None:
    privates = [p for p in root.rglob("*") if p.is_file() and p.suffix in (".key", ".psk")]
    privates.append(root / "subscribers.yaml")
    assert len(privates) == 2 + 2 * 15 + 15 + 105 + 1
    for p in privates:
        assert p.stat().st_mode & 0o777 == 0o600, p
    for d in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
        assert d.stat().st_mode & 0o777 == 0o700, d


def test_psk_per_sorted_pair(root: Path) -> None:
    assert len(list((root / "psk").glob("*.psk"))) == 105
    value = ipsec_keys.psk(root, "upf", "gnb")
    assert re.fullmatch(r"[0-9a-f]{64}", value)
    assert ipsec_keys.psk(root, "gnb", "upf") == value
    assert (root / "psk" / "gnb--upf.psk").read_text().strip() == value
    assert ipsec_keys.psk(root, "amf", "smf") != value
    with pytest.raises(ValueError, match="two different nodes"):
        ipsec_keys.psk(root, "amf", "amf")


def test_psk_created_on_demand(tmp_path: Path) -> None:
    value = ipsec_keys.psk(tmp_path, "x-node", "a-node")
    assert (tmp_path / "psk" / "a-node--x-node.psk").stat().st_mode & 0o777 == 0o600
    assert ipsec_keys.psk(tmp_path, "a-node", "x-node") == value


def test_wireguard_public_key_derives_from_private(root: Path) -> None:
    seen = set()
    for node in EXPECTED_ENDPOINTS:
        private, public = wg_keys.wg_keys(root, node)
        derived = subprocess.run(["wg", "pubkey"], input=private + "\n", capture_output=True,
                                 text=True, check=True).stdout.strip()
        assert derived == public and len(public) == 44
        seen.add(public)
    assert len(seen) == len(EXPECTED_ENDPOINTS)


def test_subscribers_have_random_k_and_opc(root: Path) -> None:
    subs = keys.subscribers(root)
    want = stack.load()["subscribers"]
    assert set(subs) == set(want)
    assert subs["ue1"]["imsi"] == want["ue1"]["imsi"]
    assert subs["scale"]["imsi_first"] == want["scale"]["imsi_first"]
    assert subs["scale"]["count"] == want["scale"]["count"]
    secrets_ = [subs[u][f] for u in subs for f in ("k", "opc")]
    assert all(re.fullmatch(r"[0-9a-f]{32}", s) for s in secrets_)
    assert len(set(secrets_)) == len(secrets_)


def test_second_run_changes_nothing(root: Path) -> None:
    before = keys.files(root)
    assert keys.ensure(root.parent) == root
    assert keys.files(root) == before


def test_rerun_keeps_keys_and_reissues_certs_whose_names_changed(root: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    shutil.copytree(root.parent, state)
    r = keys.keys_root(state)
    values = copy.deepcopy(stack.load())
    values["nodes"]["upf"]["networks"]["n3"] = "10.100.3.77"
    values["subscribers"]["ue3"] = {"imsi": "001010000000003"}
    old_k = keys.subscribers(r)["ue1"]["k"]
    before = keys.files(r)
    (r / "nodes" / "amf" / "rsa.crt").unlink()           # a lost certificate is re-issued
    keys.ensure(state, values)
    after = keys.files(r)
    changed = {p for p in after if before.get(p) != after[p]}
    assert changed == {"nodes/upf/ecdsa.crt", "nodes/upf/rsa.crt", "nodes/amf/rsa.crt", "subscribers.yaml"}
    assert "IP Address:10.100.3.77" in _openssl("x509", "-in", str(r / "nodes/upf/ecdsa.crt"), "-noout", "-text")
    subs = keys.subscribers(r)
    assert subs["ue1"]["k"] == old_k and re.fullmatch(r"[0-9a-f]{32}", subs["ue3"]["k"])


def test_generation_writes_nothing_into_the_repository(root: Path) -> None:
    # tls-certs/ holds scripts only; no serial, request or key file may land there or at the top
    assert sorted(p.name for p in (ROOT / "tls-certs").iterdir()) == ["make-ca.sh", "make-cert.sh"]
    assert not list(ROOT.glob("*.srl")) and not list(ROOT.glob("*.csr"))


def test_cli_reports_nothing_created_on_rerun(root: Path) -> None:
    # the fixture made the keys with stack.yaml's own addresses (slot 0); a STATE of its own would
    # move them to its block (testbed/instance.py) and re-issue the certificates naming them
    out = subprocess.run([sys.executable, "-m", "testbed", "keys", "--state", str(root.parent)], cwd=ROOT,
                         capture_output=True, text=True, env={**os.environ, "STACK_SLOT": "0"})
    assert out.returncode == 0, out.stderr
    assert re.search(r"keys: .*: 215 files, 0 created or updated", out.stdout)   # 200 + 15 MACsec node secrets


def test_scripts_usage_errors() -> None:
    res = subprocess.run([str(ROOT / "tls-certs" / "make-ca.sh"), "dsa", "/nonexistent/x", "cn"],
                         capture_output=True, text=True)
    assert res.returncode == 2 and "valid: ecdsa, rsa" in res.stderr
    res = subprocess.run([str(ROOT / "tls-certs" / "make-cert.sh"), "ecdsa", "/nonexistent/ca", "/tmp/x", "cn", "DNS:x"],
                         capture_output=True, text=True)
    assert res.returncode == 1 and "make keys" in res.stderr


def test_a_damaged_key_is_reported_with_the_command_that_replaces_it(tmp_path: Path) -> None:
    """A key written half (a full disk once left a 0-byte ca-rsa.key) is never kept silently nor
    replaced on its own: `make keys` stops naming the file and the command that makes a new one."""
    require_tools("openssl", "wg")
    values = copy.deepcopy(stack.load())
    values["nodes"] = {n: spec for n, spec in values["nodes"].items() if n in ("amf", "smf", "gnb")}
    root = keys.ensure(tmp_path, values)
    for broken in (root / "ca" / "ca-rsa.key", keys.node_dir(root, "amf") / "ecdsa.key",
                   wg_keys.wg_paths(root, "gnb")[0], ipsec_keys.psk_path(root, "amf", "smf")):
        good = broken.read_bytes()
        broken.write_bytes(b"")
        with pytest.raises(keys.KeysError, match=rf"{re.escape(str(broken))} is damaged .*rm {re.escape(str(broken))} && make keys"):
            keys.ensure(tmp_path, values)
        broken.write_bytes(good)
    keys.ensure(tmp_path, values)


def test_the_ca_script_never_moves_in_a_key_openssl_did_not_write(tmp_path: Path) -> None:
    """tls-certs/make-ca.sh checks its temporary key parses before it becomes the CA key: an
    openssl that exits 0 with nothing written (a full disk) leaves no key behind."""
    require_tools("openssl")
    fake = tmp_path / "bin"
    fake.mkdir()
    real = shutil.which("openssl")
    (fake / "openssl").write_text(f'#!/bin/sh\nif [ "$1" = genpkey ]; then exit 0; fi\nexec {real} "$@"\n')
    (fake / "openssl").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    res = subprocess.run([str(ROOT / "tls-certs" / "make-ca.sh"), "rsa", str(tmp_path / "ca" / "ca-rsa"), "CA"],
                         capture_output=True, text=True, env=env, check=False)
    assert res.returncode == 1 and "wrote no usable rsa key" in res.stderr, res.stderr
    assert not (tmp_path / "ca" / "ca-rsa.key").exists()
