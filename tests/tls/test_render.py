"""tls/overlay.py: settings, NF config overrides, environment, rendered files,
the stack renderer's use of the hooks, and verify_capture on real captures."""
from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import render_support
from testbed import registry
from testbed import keys, profiles, stack
from tls import overlay as tls
from tls import verify as tls_verify
from testbed.render import layout, open5gs
from testbed.render.merge import deep_merge
from tests.conftest import require_tools
from tests.testbed.render.helpers import keys_root

TLS_PROFILES = [p for p in profiles.names("sbi") if profiles.get(p).protocol == "tls"]
SBI_NFS = [n for n in open5gs.SBI_NFS if n != "scp"]


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return [obj] if isinstance(obj, str) else []


def test_registry_finds_the_module_and_every_catalogue_suite_has_a_code_point() -> None:
    assert registry.overlay("tls").folder == Path(tls.__file__).resolve().parent
    assert len(TLS_PROFILES) == 24
    classical = [p for p in TLS_PROFILES if profiles.get(p).params.get("paper") != "pq"]
    seen = {(s.version, s.cipher, s.cert) for s in map(tls.settings, map(profiles.get, classical))}
    assert len(classical) == 18 and len(seen) == 14   # the 2025 paper's 4 settings are 4 of the 2024 paper's 14
    for pid in TLS_PROFILES:
        s = tls.settings(profiles.get(pid))
        assert s.wire_version == {"1.2": 0x0303, "1.3": 0x0304}[s.version]
        assert (s.suite_id >> 8) in ((0x13,) if s.version == "1.3" else (0xC0, 0xCC))
        assert ("-RSA-" in s.cipher) == (s.cert == "rsa") or s.version == "1.3"


def test_settings_reject_other_protocols_and_planes() -> None:
    with pytest.raises(tls.TlsError, match="not a TLS profile"):
        tls.settings(profiles.get("baseline"))
    with pytest.raises(tls.TlsError, match="sbi plane only"):
        tls.endpoints("n3", stack.load())


@pytest.mark.parametrize("profile_id", ["tls12-ecdsa-aes128ccm", "tls13-rsa-chacha20"])
def test_overrides_make_every_sbi_nf_https_on_its_fqdn(profile_id: str) -> None:
    v = stack.load()
    prof = profiles.get(profile_id)
    s = tls.settings(prof)
    ca = f"/etc/testbed/keys/ca/{keys.CA_PREFIX[s.cert]}.crt"
    for nf in SBI_NFS:
        merged = deep_merge(open5gs.nf_config(nf, v, use_scp=False), tls.nf_config_overrides(nf, prof, v))
        sec = merged[nf]
        assert sec["sbi"]["server"] == [{"address": stack.fqdn(nf, v), "port": int(v["sbi_port"])}]
        srv, cli = sec["default"]["tls"]["server"], sec["default"]["tls"]["client"]
        assert srv == {"scheme": "https", "private_key": f"/etc/testbed/keys/node/{s.cert}.key",
                       "cert": f"/etc/testbed/keys/node/{s.cert}.crt", "verify_client": True,
                       "verify_client_cacert": ca}
        assert cli["scheme"] == "https" and cli["cacert"] == ca
        assert cli["client_cert"] == srv["cert"] and cli["client_private_key"] == srv["private_key"]
        if nf == "nrf":
            assert "client" not in sec["sbi"]
        else:
            assert sec["sbi"]["client"]["nrf"] == [{"uri": f"https://nrf.{v['fqdn_domain']}:{v['sbi_port']}"}]
        # nothing of the baseline's plain-HTTP addressing survives the merge
        assert not [x for x in _strings(merged) if x.startswith("http://")], merged
    assert tls.nf_config_overrides("upf", prof, v) == {} and tls.nf_config_overrides("gnb", prof, v) == {}


def test_with_the_scp_every_client_uri_is_https() -> None:
    v = copy.deepcopy(stack.load())
    v["use_scp"] = True
    prof = profiles.get("tls13-aes128gcm")
    assert "scp" in tls.endpoints("sbi", v) and "scp" not in tls.endpoints("sbi", stack.load())
    for nf in open5gs.nf_nodes(v, use_scp=True):
        merged = deep_merge(open5gs.nf_config(nf, v, use_scp=True), tls.nf_config_overrides(nf, prof, v))
        assert not [x for x in _strings(merged) if x.startswith("http://")], merged
        if nf not in ("nrf", "scp", "upf"):
            assert merged[nf]["sbi"]["client"]["scp"] == [{"uri": f"https://scp.{v['fqdn_domain']}:{v['sbi_port']}"}]


@pytest.mark.parametrize("profile_id", TLS_PROFILES)
def test_environment_carries_version_and_suite_to_the_patch(profile_id: str) -> None:
    v = stack.load()
    prof = profiles.get(profile_id)
    s = tls.settings(prof)
    env = tls.nf_environment("amf", prof, v)
    assert env[tls.ENV_MIN_VERSION] == env[tls.ENV_MAX_VERSION] == prof.params["version"]
    assert env[tls.ENV_GROUPS] == s.groups == prof.params.get("groups", "P-256")
    assert env.get(tls.ENV_CLIENT_GROUPS) == (s.offered_groups if "groups" in prof.params else None)
    if s.version == "1.2":
        assert env[tls.ENV_CIPHERS] == prof.params["cipher"] and tls.ENV_CIPHERSUITES not in env
    else:
        assert env[tls.ENV_CIPHERSUITES] == prof.params["cipher"] and tls.ENV_CIPHERS not in env
    assert tls.nf_environment("upf", prof, v) == {} and tls.nf_environment("gnb", prof, v) == {}
    assert tls.compose_env(prof, "sbi", v) == {**env, "TLS_CERT_TYPE": s.cert}
    assert tls.host_needs(prof, "sbi") == []


@pytest.mark.parametrize("profile_id", TLS_PROFILES)
def test_rendered_openssl_conf_is_accepted_by_openssl_and_holds_one_suite(profile_id: str, tmp_path: Path) -> None:
    """`openssl ciphers -s` under the rendered OPENSSL_CONF lists exactly the profile's suite
    among those of its version."""
    require_tools("openssl")
    prof = profiles.get(profile_id)
    s = tls.settings(prof)
    if s.cert == "mldsa65" and not tls.openssl_has_mldsa():
        pytest.skip("this host's openssl (< 3.5) cannot issue the ML-DSA-65 certificates the profile renders "
                    "(tests/integration/test_tls_pq_netns.py runs it with Debian 13's OpenSSL)")
    dirs = tls.render(prof, "sbi", stack.load(), tmp_path / "keys", tmp_path / "overlay")
    assert sorted(dirs) == sorted(tls.endpoints("sbi", stack.load()))
    conf = dirs["amf"] / "openssl.cnf"
    res = subprocess.run(["openssl", "ciphers", "-s"], env={**os.environ, "OPENSSL_CONF": str(conf)},
                         capture_output=True, text=True, check=True)
    listed = res.stdout.strip().split(":")
    same_version = [c for c in listed if c.startswith("TLS_") == (s.version == "1.3")]
    assert same_version == [s.cipher], res.stdout
    env = yaml.safe_load((dirs["amf"] / "tls.env").read_text().replace("=", ": "))
    assert {k: str(x) for k, x in env.items()} == tls.tls_environment(s)


def test_the_stack_renderer_applies_the_hooks(tmp_path: Path) -> None:
    """testbed.render with a TLS profile: https NF YAMLs, env/<nf>.env with the patch variables."""
    root = keys_root()
    prof = profiles.get("tls12-rsa-chacha20", "sbi")
    r = render_support.render(prof, "sbi", tmp_path / "r", subscribers=keys.subscribers(root), keys_dir=root,
                      commit="test")
    for nf in r.nodes:
        cfg = yaml.safe_load((r.dir / layout.OPEN5GS_DIR / f"{nf}.yaml").read_text())
        env = (r.dir / layout.ENV_DIR / f"{nf}.env").read_text()
        if nf == "upf":
            assert "OGS_SBI_TLS" not in env
            continue
        assert cfg[nf]["sbi"]["server"][0]["address"] == stack.fqdn(nf)
        assert cfg[nf]["default"]["tls"]["server"]["cert"] == "/etc/testbed/keys/node/rsa.crt"
        assert "OGS_SBI_TLS_CIPHERS=ECDHE-RSA-CHACHA20-POLY1305\n" in env
        assert "OGS_SBI_TLS_MIN_VERSION=1.2\n" in env and "OGS_SBI_TLS_MAX_VERSION=1.2\n" in env
    assert (r.dir / layout.OVERLAY_DIR / "nrf" / "openssl.cnf").is_file()
    assert r.env["TLS_CERT_TYPE"] == "rsa"


def test_verify_capture_flags_cleartext_http2_on_the_sbi_port(shared_data: Path) -> None:
    """Open5GS's own sample capture: HTTP/2 in the clear on 7777 (no TLS there)."""
    require_tools("tshark")
    pcap = shared_data / "open5gs-docs-pcaps" / "5g-roaming-lbo.pcapng"
    verdict = tls_verify.verify_capture(pcap, profiles.get("tls13-aes128gcm"), "sbi", stack.load())
    assert not verdict.valid
    assert verdict.plaintext_packets > 100 and "cleartext HTTP/2" in verdict.details
    assert verdict.protected_packets == 0 and "no TLS records on the SBI port" in verdict.details
