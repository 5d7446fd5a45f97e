"""charon's key log -> ESP SAs for tshark (ipsec/keylog.py) and the key-export render
dimension (testbed/keylog/plugin.py). The log below is real: the NRF end (CHILD_SA responder) of
a namespace lab `aes128gcm` between ausf and nrf on this host (strongSwan 5.9.8, kernel-libipsec,
2026-11-27), hex dump lines of the nonce seed left out. The decryption itself, with tshark on real
ESP, is tests/integration/test_sbi_ops_decrypt.py."""
from __future__ import annotations

import re

import pytest

from testbed import profiles, stack
from ipsec import keylog as esp
from testbed.keylog.plugin import KeylogDimension

NRF_LOG = """\
09[IKE] <1> 10.100.1.11 is initiating an IKE_SA
10[IKE] <ausf|1> IKE_SA ausf[1] established between 10.100.1.10[CN=nrf.localdomain]...10.100.1.11[CN=ausf.localdomain]
10[CHD] <ausf|1> CHILD_SA ausf{1} state change: CREATED => INSTALLING
10[CHD] <ausf|1>   using AES_GCM_16 for encryption
10[CHD] <ausf|1> encryption initiator key => 20 bytes @ 0x7f004400e780
10[CHD] <ausf|1>    0: DC 6C 91 FE 14 14 59 43 73 0E C7 65 3A F7 92 FD  .l....YCs..e:...
10[CHD] <ausf|1>   16: 7A F4 BB F3                                      z...
10[CHD] <ausf|1> encryption responder key => 20 bytes @ 0x7f0044016530
10[CHD] <ausf|1>    0: 9F 2F 5B 75 21 5C DB 06 E9 9E 1C 55 18 32 B2 7A  ./[u!\\.....U.2.z
10[CHD] <ausf|1>   16: 5B 0E FC 5F                                      [.._
10[CHD] <ausf|1> adding inbound ESP SA
10[CHD] <ausf|1>   SPI 0x9973c063, src 10.100.1.11 dst 10.100.1.10
10[CHD] <ausf|1> adding outbound ESP SA
10[CHD] <ausf|1>   SPI 0xd00c3515, src 10.100.1.10 dst 10.100.1.11
10[IKE] <ausf|1> CHILD_SA ausf{1} established with SPIs 9973c063_i d00c3515_o and TS 10.100.1.10/32 === 10.100.1.11/32
"""
INIT_KEY = bytes.fromhex("DC6C91FE14145943730EC7653AF792FD7AF4BBF3")
RESP_KEY = bytes.fromhex("9F2F5B75215CDB06E99E1C551832B27A5B0EFC5F")


def test_responder_log_gives_both_directions() -> None:
    sas = esp.parse(NRF_LOG.splitlines())
    assert [(hex(s.spi), s.src, s.dst) for s in sas] == [("0x9973c063", "10.100.1.11", "10.100.1.10"),
                                                         ("0xd00c3515", "10.100.1.10", "10.100.1.11")]
    # this end responded: the initiator (ausf) -> responder (nrf) traffic uses the initiator key
    assert sas[0].encryption_key == INIT_KEY and sas[1].encryption_key == RESP_KEY
    assert all(s.encryption == "AES_GCM_16" and s.integrity == "" for s in sas)
    assert sas[0].uat() == ('"IPv4","10.100.1.11","10.100.1.10","0x9973c063","AES-GCM with 16 octet ICV [RFC4106]",'
                            f'"0x{INIT_KEY.hex()}","NULL",""')


def test_the_initiating_end_swaps_the_keys() -> None:
    """The same CHILD_SA seen by the end that sent `establishing CHILD_SA`: its outbound SA
    carries the initiator key."""
    text = NRF_LOG.replace("09[IKE] <1> 10.100.1.11 is initiating an IKE_SA",
                           "09[IKE] <ausf|1> establishing CHILD_SA ausf{1}")
    sas = esp.parse(text.splitlines())
    assert sas[0].encryption_key == RESP_KEY and sas[1].encryption_key == INIT_KEY


def test_uat_args_skip_what_tshark_cannot_decrypt() -> None:
    sas = esp.parse(NRF_LOG.splitlines())
    gmac = esp.EspSa(1, "10.0.0.1", "10.0.0.2", "NULL_AES_GMAC", b"\x00" * 20, "", b"", "x{1}")
    args, skipped = esp.uat_args(sas + sas + [gmac])        # both ends' logs: each SA once
    assert len(args) == 4 and args[0] == "-o" and args[1].startswith("uat:esp_sa:")
    assert skipped == ["SPI 0x00000001 10.0.0.1 -> 10.0.0.2: NULL-AES-GMAC (RFC 4543) is not in tshark's ESP decryption"]
    # a log without the keys (chd below level 4) is an error naming the setting, never an SA without key
    no_keys = [ln for ln in NRF_LOG.splitlines() if "key =>" not in ln and not re.search(r"\d: [0-9A-F]{2} ", ln)]
    with pytest.raises(esp.EspKeyError, match="chd = 4"):
        esp.parse(no_keys)


def test_dimension_sets_the_key_log_for_tls_nfs_only() -> None:
    values = stack.load()
    dim = KeylogDimension()
    assert dim.nf_environment("amf", profiles.get("tls13-aes128gcm"), values) == \
        {"OGS_SBI_TLS_KEYLOG": "/run/open5gs/tls-keys.log"}
    assert dim.nf_environment("upf", profiles.get("tls13-aes128gcm"), values) == {}     # no SBI
    assert dim.nf_environment("amf", profiles.get("aes128gcm"), values) == {}           # charon logs itself
