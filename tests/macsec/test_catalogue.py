"""macsec/catalogue.py: profiles.yaml's macsec section as the catalogue expands it."""
from __future__ import annotations

import pytest

from macsec import catalogue
from testbed import profiles, registry


def test_one_profile_per_cipher_suite_on_n3() -> None:
    mine = [p for p in profiles.load().values() if p.protocol == "macsec"]
    assert [p.id for p in mine] == ["macsec-gcm-aes-128", "macsec-gcm-aes-256",
                                    "macsec-gcm-aes-xpn-128", "macsec-gcm-aes-xpn-256"]
    for p in mine:
        assert p.planes == ("n3",) and not p.refused
        assert p.params["cipher"] == p.id.removeprefix("macsec-")
        assert p.params["cipher_label"] == p.params["cipher"].upper()
        assert p.params["key_bits"] == (256 if p.id.endswith("256") else 128)
        assert p.params["xpn"] == ("xpn" in p.id)
        assert (p.params["icv_len"], p.params["send_sci"], p.params["encrypt"], p.params["validate"]) == \
            (16, True, True, "strict")
        assert p.params["replay_window"] == 0
    assert profiles.names("n3")[-4:] == [p.id for p in mine]
    assert all(p.id not in profiles.names("sbi") for p in mine)


def test_make_profiles_lists_them_with_the_protocol() -> None:
    table = profiles.format_table("n3")
    assert "macsec-gcm-aes-xpn-256" in table and "4 macsec" in table.splitlines()[-1]
    assert registry.overlay("macsec").label == "MACsec"


def test_bad_sections_are_named() -> None:
    assert catalogue.expand({}) == []
    with pytest.raises(catalogue.CatalogueError, match="macsec.planes"):
        catalogue.expand({"ciphers": {"gcm-aes-128": {"label": "GCM-AES-128", "key_bits": 128}}})
    with pytest.raises(catalogue.CatalogueError, match="key_bits: 192"):
        catalogue.expand({"planes": ["n3"], "ciphers": {"gcm-aes-192": {"label": "X", "key_bits": 192}}})
    with pytest.raises(catalogue.CatalogueError, match="replay_window: -1"):
        catalogue.expand({"planes": ["n3"], "replay_window": -1,
                          "ciphers": {"gcm-aes-128": {"label": "GCM-AES-128", "key_bits": 128}}})
