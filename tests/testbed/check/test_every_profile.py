"""Every profile renders for every plane set it supports (each of its planes on its own, and all
of them together) and `make check-config` finds nothing in the render: addresses, mounts, the
rendered overlay fragment over base.yaml, PLMN and credentials (testbed/check/rules.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from testbed import profiles
from testbed.check import check_render
from tests.testbed.render.helpers import keys_root, plane_sets, render_to

CASES = [(p.id, ps) for p in profiles.load().values() if not p.refused for ps in plane_sets(p)]


def test_cases_cover_n2_n4_and_all() -> None:
    assert ("aes128gcm-psk-trap-drop", "n2") in CASES and ("wireguard", "all") in CASES
    assert ("aes128gcm-trap", "sbi") in CASES and ("aes128gcm-trap", "n2") not in CASES
    assert ("aes128gcm-psk", "f1c,f1u,e1") in CASES and ("wireguard", "f1c,f1u,e1") in CASES
    assert ("dtls12-aes128gcm", "n2") in CASES and ("dtls-relay-plain", "n2") in CASES
    assert ("dtls12-aes128gcm", "f1c,e1") in CASES
    assert len(CASES) == 382          # 193 + every profile of the split RAN's planes (f1c,f1u,e1 or,
    #                                   for the DTLS relay, f1c,e1) as one set + the 4 MACsec on n3 + the
    #                                   post-quantum profiles (IPsec key exchanges, TLS groups, WireGuard +
    #                                   Rosenpass) on their planes and plane sets


@pytest.mark.parametrize("profile_id,plane", CASES)
def test_renders_and_passes_check_config(profile_id: str, plane: str, tmp_path: Path) -> None:
    prof = profiles.get(profile_id)
    # key material that only newer tools make (the profile stops at render naming it elsewhere)
    if prof.params.get("cert") == "mldsa65" and not (keys_root() / "ca" / "ca-mldsa65.crt").is_file():
        pytest.skip("no ML-DSA-65 certificates: `make keys` with OpenSSL >= 3.5 (Debian 13)")
    if prof.params.get("rosenpass") and shutil.which("rosenpass") is None:
        pytest.skip("no rosenpass program for the Rosenpass keys: `make rosenpass`, then on PATH")
    r = render_to(profile_id, plane, tmp_path / "r")
    assert check_render(r.dir, keys_root=keys_root()) == []
