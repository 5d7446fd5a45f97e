import subprocess
import sys

import pytest

from testbed import profiles
from tests.conftest import ROOT


def test_catalogue_counts() -> None:
    all_ = profiles.load()
    by_proto: dict[str, int] = {}
    for p in all_.values():
        by_proto[p.protocol] = by_proto.get(p.protocol, 0) + 1
    # IPsec: 48 classical + 4 key exchanges x 8 authentication/mode combinations + 1 refused (ML-DSA)
    assert by_proto == {"none": 1, "ipsec": 81, "wireguard": 2, "tls": 24, "dtls": 4, "macsec": 4}
    assert [p.id for p in all_.values() if p.refused] == ["aes128gcm-x25519-mlkem768-mldsa", "dtls13-aes128gcm"]
    n3 = profiles.names("n3")
    assert n3 == ["baseline", "aes128gcm", "aes256gcm", "aes128cbc", "aes256cbc",
                  "nullsha256", "nullgmac", "aes128gcm-x25519", "aes128gcm-x25519-mlkem768",
                  "aes128gcm-x25519-mlkem1024", "aes128gcm-mlkem768", "wireguard", "wireguard-rosenpass",
                  "macsec-gcm-aes-128", "macsec-gcm-aes-256", "macsec-gcm-aes-xpn-128", "macsec-gcm-aes-xpn-256"]
    sbi_ipsec = [p for p in all_.values() if p.protocol == "ipsec" and "sbi" in p.planes and not p.refused]
    assert len(sbi_ipsec) == 80
    assert {p.params["mode"] for p in sbi_ipsec} == {"start", "trap", "trap-drop", "trap-queue"}
    # N2 and N4: every start and unpatched trap profile (cert and PSK), WireGuard, the baseline;
    # the patched wait (`trap`) exists in Open5GS's SBI client only
    for plane in ("n2", "n4"):
        ipsec = [p for p in all_.values() if p.protocol == "ipsec" and plane in p.planes and not p.refused]
        assert len(ipsec) == 36 + 4 * 6          # + the 4 post-quantum key exchanges, cert/PSK x 3 modes
        assert {p.params["mode"] for p in ipsec} == {"start", "trap-drop", "trap-queue"}
        assert "wireguard" in profiles.names(plane) and "baseline" in profiles.names(plane)
        assert not [p for p in profiles.names(plane) if p.startswith("tls")]


def test_plane_sets() -> None:
    """PLANE may name several planes, or all of a profile's; canonical order is the catalogue's."""
    assert profiles.planes_for(profiles.get("aes128gcm"), "n4,n2,sbi") == ("sbi", "n2", "n4")
    assert profiles.planes_for(profiles.get("aes128gcm"), "all") == ("n3", "sbi", "n2", "n4", "f1c", "f1u", "e1")
    assert profiles.planes_for(profiles.get("aes128gcm-psk"), "all") == ("sbi", "n2", "n4", "f1c", "f1u", "e1")
    assert profiles.planes_for(profiles.get("aes128gcm"), None) == ("n3",)
    assert profiles.planes_for(profiles.get("baseline"), "all") == profiles.PLANES
    assert "aes128gcm-psk" in profiles.names("n2,n4") and "aes128gcm-psk" not in profiles.names("n2,n3")
    with pytest.raises(profiles.ProfileError, match="cannot run on the n3 plane"):
        profiles.planes_for(profiles.get("aes128gcm-psk"), "n2,n3")
    with pytest.raises(profiles.ProfileError, match="unknown plane"):
        profiles.get("aes128gcm", "n2,n9")


def test_profile_params() -> None:
    p = profiles.get("aes256gcm", "n3")
    assert p.params["esp_proposal"] == "aes256gcm16"
    assert p.params["ike_proposal"] == "aes128gcm16-prfsha256-ecp256"
    q = profiles.get("nullgmac-psk-trap-queue", "sbi")
    assert q.params["auth"] == "psk" and q.params["xfrm_larval_drop"] == 0
    assert q.params["start_action"] == "trap" and not q.params["patched_wait"]
    assert profiles.get("aes128cbc-trap").params["patched_wait"]


@pytest.mark.parametrize("pid,plane,needle", [
    ("nosuch", None, "unknown PROFILE 'nosuch'"),
    ("tls13-aes256gcm", "n3", "cannot run on the n3 plane"),
    ("aes256gcm-psk", "n3", "cannot run on the n3 plane"),
    ("aes128gcm-trap", "n2", "cannot run on the n2 plane"),
    ("tls13-aes256gcm", "sbi,n4", "cannot run on the n4 plane"),
])
def test_rejects(pid: str, plane: str | None, needle: str) -> None:
    with pytest.raises(profiles.ProfileError) as exc:
        profiles.get(pid, plane)
    assert needle in str(exc.value)
    assert "baseline" in str(exc.value)   # the list of valid names is given


def test_cli_check_profile_exit_code() -> None:
    r = subprocess.run([sys.executable, "-m", "testbed", "check-profile", "--plane", "n3",
                        "tls12-aes128gcm"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2
    assert "aes256gcm" in r.stderr
