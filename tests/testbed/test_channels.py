"""The channel map's invariants, and checking it against a real capture."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from testbed import channels, ran, stack


def test_startup_is_eight_nf_nrf_pairs() -> None:
    startup = channels.pairs("sbi", "startup")
    assert len(startup) == 8
    assert all("nrf" in pair for pair in startup)
    clients = {c.client for c in channels.channels("sbi", "startup") if c.server == "nrf"}
    assert clients == {"amf", "ausf", "udm", "udr", "pcf", "bsf", "nssf", "smf"}


def test_ue_phase_pairs_match_the_derivation() -> None:
    # docs/channels.md: 10 host pairs always, + AMF<->NSSF depending on start order
    assert len(channels.pairs("sbi", "ue", include_order_dependent=False)) == 10
    assert channels.pairs("sbi", "ue") == sorted(
        channels.pairs("sbi", "ue", include_order_dependent=False) + [("amf", "nssf")])
    assert not any("nrf" in p for p in channels.pairs("sbi", "ue"))


def test_every_node_exists_in_the_stack_on_the_planes_network() -> None:
    values = stack.load()
    for plane, net in channels.PLANE_NETWORK.items():
        for node in channels.nodes(plane):
            assert node in values["nodes"], f"{node} is not in stack.yaml"
            assert net in values["nodes"][node]["networks"], f"{node} has no {net} address"


def test_no_duplicate_channels_and_no_self_loops() -> None:
    # a connection may carry both phases (N2: one SCTP association from NG Setup on), one entry each
    directed = [(c.plane, c.client, c.server, c.phase) for c in channels.load()]
    assert len(directed) == len(set(directed))
    assert all(c.client != c.server for c in channels.load())


def test_pairs_are_sorted_and_unique() -> None:
    ps = channels.pairs("sbi")
    assert ps == sorted(set(ps))
    assert all(a < b for a, b in ps)


def test_partners() -> None:
    assert channels.partners("nrf") == ["amf", "ausf", "bsf", "nssf", "pcf", "smf", "udm", "udr"]
    assert channels.partners("gnb", "n3") == ["upf"]
    assert channels.partners("bsf") == ["nrf", "pcf"]


def test_notify_channels_are_order_dependent_and_reuse_startup_pairs() -> None:
    notifies = [c for c in channels.channels("sbi", "startup") if c.client == "nrf"]
    assert notifies and all(c.order_dependent for c in notifies)
    assert {c.pair for c in notifies} <= set(channels.pairs("sbi", "startup"))


def test_malformed_map_is_rejected(tmp_path: Path) -> None:
    raw = yaml.safe_load(channels.CHANNEL_FILE.read_text())
    del raw["planes"]["sbi"]["channels"][0]["phase"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(raw))
    with pytest.raises(channels.ChannelError, match="lacks field 'phase'"):
        channels.load(bad)


def test_diff_reports_missing_and_unexpected() -> None:
    seen = [("ausf", "nrf"), ("nrf", "udr"), ("amf", "bsf")]
    d = channels.diff(seen, "sbi", nodes_present=["ausf", "nrf", "udr", "amf", "bsf"])
    assert d.unexpected == [("amf", "bsf")]
    assert ("amf", "nrf") in d.missing and ("bsf", "nrf") in d.missing
    assert not d.ok
    assert channels.diff([("ausf", "nrf")], "sbi", ["ausf", "nrf"]).ok


def test_seen_pairs_from_a_real_capture(tmp_path: Path) -> None:
    """Write a pcap with text2pcap (TCP SYN ausf->nrf:7777), read it back with tshark."""
    for tool in ("tshark", "text2pcap"):
        if shutil.which(tool) is None:
            pytest.skip(f"missing {tool}: run `make setup`")
    v = stack.load()
    src = [int(x) for x in stack.address("ausf", "sbi", v).split(".")]
    dst = [int(x) for x in stack.address("nrf", "sbi", v).split(".")]
    port = v["sbi_port"]
    ip = [0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, *src, *dst]
    tcp = [0xC3, 0x50, port >> 8, port & 0xFF, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xFF, 0xFF, 0, 0, 0, 0]
    hexdump = "0000 " + " ".join(f"{b:02x}" for b in ip + tcp) + "\n"
    (tmp_path / "syn.txt").write_text(hexdump)
    pcap = tmp_path / "syn.pcap"
    subprocess.run(["text2pcap", "-q", "-l", "101", str(tmp_path / "syn.txt"), str(pcap)], check=True)
    seen, unknown = channels.seen_pairs(pcap, "sbi", v)
    assert seen == [("ausf", "nrf")]
    assert unknown == []


def _build_functions(build: str) -> tuple[str, list[str]]:
    """'src/x/y-build.c f_build_a, _b' -> ('src/x/y-build.c', ['f_build_a', 'f_build_b'])."""
    path, _, funcs = build.partition(" ")
    names = [f.strip() for f in funcs.split(",") if f.strip()]
    base = names[0][: names[0].index("_build") + len("_build")] if names and "_build" in names[0] else ""
    return path, [base + n if n.startswith("_") else n for n in names]


def test_derivation_functions_exist_in_the_open5gs_source() -> None:
    """Every `build` function of the SBI and N4 maps exists in that file at the pinned Open5GS tag
    (N2's references are UERANSIM's and the AMF's, named for reading, not checked here).
    OPEN5GS_SRC = an open5gs/open5gs clone (work tree or git dir) with the tag, kept outside
    the repository (e.g. a checkout beside it)."""
    src = os.environ.get("OPEN5GS_SRC")
    if not src:
        pytest.skip("OPEN5GS_SRC not set (an open5gs/open5gs clone with tag "
                    f"{stack.load()['open5gs_version']}): the map's source references are not checked")
    tag = stack.load()["open5gs_version"]
    checked = 0
    for ch in channels.channels("sbi") + channels.channels("n4"):
        path, funcs = _build_functions(ch.build)
        text = subprocess.run(["git", "-C", src, "show", f"{tag}:{path}"], capture_output=True, text=True)
        if text.returncode != 0:
            text = subprocess.run(["git", "--git-dir", src, "show", f"{tag}:{path}"], capture_output=True, text=True)
        assert text.returncode == 0, f"{ch.client}->{ch.server}: {path} not in open5gs@{tag}: {text.stderr}"
        for f in funcs:
            assert re.search(rf"\b{re.escape(f)}\s*\(", text.stdout), f"{ch.client}->{ch.server}: {f} not in {path}@{tag}"
            checked += 1
    assert checked >= 20


def test_links_of_a_plane_set() -> None:
    """N2 and N4 are one host pair each; a node on several planes has a link per plane (the stack as
    the default RAN runs it: testbed/ran restricts the nodes; the split's links at the end)."""
    values = ran.restrict(stack.load(), "ueransim")
    assert channels.links("n2", values) == [channels.Link("n2", "amf", "gnb")]
    assert channels.links("n4", values) == [channels.Link("n4", "smf", "upf")]
    assert channels.endpoints("n2,n4,n3", values) == ["amf", "gnb", "smf", "upf"]
    upf = channels.peers("upf", "n4,n3", values)
    assert [(x.plane, x.other("upf")) for x in upf] == [("n3", "gnb"), ("n4", "smf")]
    amf = channels.peers("amf", "sbi,n2", values)
    assert ("n2", "gnb") in [(x.plane, x.other("amf")) for x in amf]
    assert len(amf) == len(channels.partners("amf")) + 1
    # `nodes` limits both ends (the namespace lab's subsets)
    assert channels.links("n2,n4", values, nodes=["gnb", "amf"]) == [channels.Link("n2", "amf", "gnb")]
    split = ran.restrict(stack.load(), "split")
    assert channels.links("n2,n3,f1c,f1u,e1", split) == [
        channels.Link("n3", "cuup", "upf"), channels.Link("n2", "amf", "cucp"), channels.Link("f1c", "cucp", "du"),
        channels.Link("f1u", "cuup", "du"), channels.Link("e1", "cucp", "cuup")]


def test_capture_filter_follows_the_planes_transport() -> None:
    values = stack.load()
    assert "sctp.chunk_type == 1" in channels.capture_filter("n2", values)
    assert "udp.port == 8805" in channels.capture_filter("n4", values)
    assert "tcp.dstport == 7777" in channels.capture_filter("sbi", values)
