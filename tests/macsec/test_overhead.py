"""macsec/overhead.py: 32 bytes per frame, counted on the frame (docs/wire-bytes.md), measured from
frames whose lengths are known to the byte (tests/macsec/sectag.py), the way analysis/wire_bytes.py
measures a run."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from analysis import wire_bytes
from macsec import overhead
from testbed import profiles, registry, wire
from tests import frames as fr
from tests.conftest import require_tools
from tests.macsec import sectag

GNB, UPF = "10.100.3.50", "10.100.3.7"
GNB_MAC, UPF_MAC = "02:42:0a:64:03:32", "02:42:0a:64:03:07"
MACSEC = [p for p in profiles.load().values() if p.protocol == "macsec"]


def test_the_formula_is_sectag_with_sci_plus_icv_for_every_suite_and_size() -> None:
    ov = registry.overlay("macsec")
    assert overhead.frame_overhead() == 16 + 16 == 32 and overhead.frame_overhead(send_sci=False) == 24
    assert {ov.packet_overhead(p, size) for p in MACSEC for size in (28, 84, 1044, 1436)} == {32}
    assert overhead.packet_overhead(profiles.get("wireguard"), 84) is None
    rows = ov.analytic_overheads(MACSEC, (64, 1024))
    assert len(rows) == 8 and {r["added_bytes"] for r in rows} == {32}
    assert rows[0]["what"] == "MACsec GCM-AES-128: SecTAG with SCI + ICV, per Ethernet frame"


def test_a_protected_frame_is_the_clear_frame_plus_32_bytes() -> None:
    inner = sectag.ping(GNB, UPF, 56)
    clear = fr.ethernet(UPF_MAC, GNB_MAC, fr.ETH_IPV4, inner)
    protected = sectag.macsec(GNB_MAC, UPF_MAC, GNB, 1, fr.ETH_IPV4, inner)
    assert len(protected) - len(clear) == 32
    assert struct.unpack("!H", protected[12:14])[0] == 0x88E5             # the SecTAG's EtherType


def test_measured_overhead_equals_the_analytic_one(tmp_path: Path) -> None:
    """Pings of 64 and 1,024 B (ICMP sizes; IP 84 and 1,044 B) both ways, an encrypted ARP exchange
    (secure data under 48 B: SL set, no data frame) and the baseline's cleartext echo requests."""
    require_tools("tshark")
    frames, base = [], []
    for n, size in enumerate((56, 1016)):
        for src, dst, smac, dmac, reply in ((GNB, UPF, GNB_MAC, UPF_MAC, False), (UPF, GNB, UPF_MAC, GNB_MAC, True)):
            frames.append(sectag.macsec(smac, dmac, src, n + 1, fr.ETH_IPV4, sectag.ping(src, dst, size, reply)))
        base.append(fr.ethernet(UPF_MAC, GNB_MAC, fr.ETH_IPV4, sectag.ping(GNB, UPF, size)))
    frames.append(sectag.macsec(GNB_MAC, "ff:ff:ff:ff:ff:ff", GNB, 9, fr.ETH_ARP, fr.arp_request(GNB_MAC, GNB, UPF)))
    pcap = fr.write_pcap(tmp_path / "macsec.pcap", frames)
    inner = sorted(set(wire.lengths(fr.write_pcap(tmp_path / "base.pcap", base), "icmp.type == 8")))
    assert inner == [84, 1044]
    ov = registry.overlay("macsec")
    lengths = ov.protected_lengths(pcap)
    assert sorted(lengths) == [116, 116, 1076, 1076]                        # the ARP frame left out
    assert ov.protected_lengths(pcap, src=UPF) == [116, 1076]               # by the SCI it sends with
    measured = wire_bytes.measured_overheads(lengths, inner)
    assert measured == {i: ov.packet_overhead(profiles.get("macsec-gcm-aes-256"), i) for i in inner} == {84: 32, 1044: 32}


def test_no_handshake_with_static_keys(tmp_path: Path) -> None:
    require_tools("tshark")
    pcap = fr.write_pcap(tmp_path / "n3.pcap", [
        sectag.macsec(GNB_MAC, UPF_MAC, GNB, 1, fr.ETH_IPV4, sectag.ping(GNB, UPF, 56))])
    hs = registry.overlay("macsec").handshakes(pcap, "n3", {})
    assert hs is not None and hs.protocol == "macsec" and hs.total_packets == 0 and hs.total_frame_bytes == 0


def test_the_analytic_table_sets_macsec_beside_the_others() -> None:
    pytest.importorskip("pandas")
    table = wire_bytes.analytic_table((64, 1024))
    mine = table[table["protocol"] == "macsec"]
    assert len(mine) == 8 and set(mine["added_bytes"]) == {32}
    assert {"ipsec", "wireguard", "macsec"} <= set(table["protocol"])
