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
    assert by_proto == {"none": 1, "ipsec": 48, "wireguard": 1, "tls": 18, "dtls": 4}
    assert [p.id for p in all_.values() if p.refused] == ["dtls13-aes128gcm"]
    n3 = profiles.names("n3")
    assert n3 == ["baseline", "aes128gcm", "aes256gcm", "aes128cbc", "aes256cbc",
                  "nullsha256", "nullgmac", "wireguard"]
    sbi_ipsec = [p for p in all_.values() if p.protocol == "ipsec" and "sbi" in p.planes]
    assert len(sbi_ipsec) == 48
    assert {p.params["mode"] for p in sbi_ipsec} == {"start", "trap", "trap-drop", "trap-queue"}


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
