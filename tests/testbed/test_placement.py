"""PLACEMENT= (testbed/placement.py): NF:NODE pairs or a YAML file, every bad entry named at once,
an unknown NF or a holder refused naming the NFs, the record the manifest keeps."""
from __future__ import annotations

from pathlib import Path

import pytest

from testbed import placement
from testbed.placement import PlacementError, Target


def test_pairs_name_nodes_or_labels() -> None:
    got = placement.parse("upf:edge gnb:ran,amf:topology.kubernetes.io/zone=z1")
    assert got == {"upf": Target(node="edge"), "gnb": Target(node="ran"),
                   "amf": Target(label=("topology.kubernetes.io/zone", "z1"))}
    assert placement.as_record(got) == {"amf": "topology.kubernetes.io/zone=z1", "gnb": "ran", "upf": "edge"}
    assert placement.as_record(got) == {"amf": "topology.kubernetes.io/zone=z1", "gnb": "ran", "upf": "edge"}
    assert placement.parse("") == {} and placement.parse(None) == {} and placement.key({}) == ""


@pytest.mark.parametrize("text", ["upf:edge", "{upf: edge, gnb: 'site=ran'}", "[upf:edge, 'gnb:site=ran']"])
def test_a_yaml_file_says_the_same(text: str, tmp_path: Path) -> None:
    f = tmp_path / "placement.yaml"
    f.write_text(text)
    got = placement.parse(str(f))
    assert got["upf"] == Target(node="edge")
    assert len(got) == 1 or got["gnb"] == Target(label=("site", "ran"))


@pytest.mark.parametrize("text,message", [
    ("upf:edge gnb", "'gnb' is not NF:NODE"),
    ("upf", "neither NF:NODE pairs nor a file"),
    ("upf:edge upf:core", "upf: placed twice"),
    ("upf:Edge_1", "not a node name"),
    ("UPF:edge", "not an NF name"),
    ("gnb:site=ran/x", "not a node label"),
    ("missing-file.yaml", "neither NF:NODE pairs nor a file"),
])
def test_bad_entries_are_named(text: str, message: str) -> None:
    with pytest.raises(PlacementError, match=message):
        placement.parse(text)


def test_every_bad_entry_at_once() -> None:
    with pytest.raises(PlacementError) as err:
        placement.parse("upf:Edge_1 gnb:a=b=c/ amf:ok")
    assert "upf:Edge_1" in str(err.value) and "gnb:a=b=c/" in str(err.value)


def test_a_file_of_another_shape_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("upf: {node: edge}\n")
    with pytest.raises(PlacementError, match="must map each NF to a node"):
        placement.parse(str(f))


def test_unknown_nfs_and_holders_are_refused_naming_the_nfs() -> None:
    place = placement.parse("upf-net:edge bogus:x gnb:ran")
    with pytest.raises(PlacementError) as err:
        placement.check_known(place, ["upf", "gnb", "amf"], {"upf-net": "upf", "upf": "upf"})
    text = str(err.value)
    assert "upf-net is a container of the upf pod: place upf" in text
    assert "bogus is not an NF of this render" in text and "(NFs: amf, gnb, upf)" in text
    placement.check_known(placement.parse("gnb:ran"), ["gnb"])


def test_star_places_every_nf_not_named() -> None:
    """`*` (a sharded campaign's node group): every NF not named goes there; a named one wins."""
    got = placement.parse("*:pool=a upf:edge")
    assert placement.target_of(got, "upf") == Target(node="edge")
    assert placement.target_of(got, "amf") == Target(label=("pool", "a"))
    assert placement.target_of(placement.parse("upf:edge"), "amf") is None
    placement.check_known(got, ["upf", "amf"])                      # `*` is no NF to refuse
    assert placement.as_record(got) == {"*": "pool=a", "upf": "edge"}
    with pytest.raises(PlacementError, match=r"\*: placed twice"):
        placement.parse("*:a *:b")
