"""testbed/planes.py: the plane catalogue of nf-configs/channels.yaml and PLANE expressions."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from testbed import planes, stack


def test_catalogue_names_every_plane_with_its_network_transport_and_port() -> None:
    values = stack.load()
    got = {p.name: (p.network, p.transport, p.port(values), p.protocol) for p in planes.load().values()}
    assert got == {"n3": ("n3", "udp", 2152, "gtp"), "sbi": ("sbi", "tcp", 7777, "http2"),
                   "n2": ("n2", "sctp", 38412, "ngap"), "n4": ("n4", "udp", 8805, "pfcp"),
                   "f1c": ("f1c", "sctp", 38472, "f1ap"), "f1u": ("f1u", "udp", 2152, "gtp"),
                   "e1": ("e1", "sctp", 38462, "e1ap")}
    for p in planes.load().values():
        assert p.network in values["networks"], p
        assert len(planes.nodes_on(p.name, values)) >= 2, p
    assert planes.get("n2").plaintext_filter(values) == \
        "(tcp.port == 38412 || udp.port == 38412 || sctp.port == 38412 || ngap)"


def test_expressions_are_canonical() -> None:
    assert planes.split("sbi,n4 n2") == ("sbi", "n2", "n4")
    assert planes.split(["n4", "n4", "n3"]) == ("n3", "n4")
    assert planes.expr("n4+n2") == "n2,n4"
    assert planes.key("n4,n2") == "n2+n4" and planes.key("sbi") == "sbi"
    for bad in ("", "n9", "n2,x"):
        with pytest.raises(planes.PlaneError):
            planes.split(bad)


def test_a_new_plane_is_data(tmp_path: Path) -> None:
    """A plane entry with its network is all it takes (the RAN planes f1c, f1u, e1 came this way)."""
    raw = yaml.safe_load(planes.PLANE_FILE.read_text())
    raw["planes"]["xn"] = {"network": "xn", "transport": "sctp", "port": "xnap_port", "protocol": "xnap",
                           "label": "Xn-C", "channels": []}
    f = tmp_path / "channels.yaml"
    f.write_text(yaml.safe_dump(raw, sort_keys=False))
    loaded = planes.load(f)
    assert list(loaded)[-1] == "xn" and "sctp.port == 38422 || xnap)" in \
        loaded["xn"].plaintext_filter({"xnap_port": 38422})
    del raw["planes"]["xn"]["transport"]
    bad = tmp_path / "bad.yaml"          # another path: load() caches by path
    bad.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(planes.PlaneError, match="lacks field 'transport'"):
        planes.load(bad)
