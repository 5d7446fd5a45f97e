"""One tshark pass per capture (issue 22 point 16): the report reads each capture once, the
overlay plug-ins count handshakes and protected lengths from that one shared export
(testbed/wire.py Export, OverlayPlugin.wire_fields), and the export is cached by the capture's
content (analysis/parse/tshark.py), so an unchanged tree costs no tshark pass at all.

On real captures: a run-sbi run with IPsec on N2 and N4 (tests/data/vm-results-n2n4: IKE with
retransmissions, ESP) and Open5GS SBI/N32 captures with TLS. The expected numbers are what the
plug-ins' per-capture display-filter passes gave on these files before the shared export."""
from __future__ import annotations

import shutil
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from analysis.parse import tshark as cache
from testbed import registry, tshark, wire
from tests.conftest import ROOT, require_tools

DATA = ROOT / "tests" / "data"
RUN = DATA / "vm-results-n2n4" / "adhoc" / "sbi" / "aes128gcm@n2+n4" / "20261125T084414Z-09a8"
TLS = {DATA / "open5gs-docs-pcaps" / "5g-roaming-lbo.pcapng": (87, 75715, 74323),
       DATA / "roastedbeans-open5gs-roaming" / "n32_interfaces.pcap": (73, 22236, 21214)}
IKE = {"it01-n2.pcap": ({"IKE_SA_INIT": 11, "IKE_AUTH": 2}, {"IKE_SA_INIT": 3511, "IKE_AUTH": 1715},
                        {"IKE_SA_INIT": 8}, 60),
       "it01-n4.pcap": ({"IKE_SA_INIT": 6, "IKE_AUTH": 2}, {"IKE_SA_INIT": 1897, "IKE_AUTH": 1715},
                        {"IKE_SA_INIT": 3}, 38)}


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every tshark pass, counted per capture file name."""
    seen: Counter[str] = Counter()
    lock = threading.Lock()
    real = tshark.run

    def counting(pcap: Path | str, args: list[str], **kw: object) -> str:
        with lock:
            seen[Path(pcap).name] += 1
        return real(pcap, args, **kw)  # type: ignore[arg-type]
    monkeypatch.setattr(tshark, "run", counting)
    yield seen


@pytest.mark.parametrize("name", sorted(IKE))
def test_ipsec_counts_the_same_from_the_shared_export(name: str, passes: Counter[str]) -> None:
    require_tools("tshark")
    ov = registry.overlay("ipsec")
    ex = wire.Export.read(RUN / name, ov.wire_fields("n2", {}))
    assert passes[name] == 1
    packets, frames, again, esp = IKE[name]
    for source in (ex, RUN / name):          # the shared export, and the capture as before
        hs = ov.handshakes(source, "n2", {})
        assert hs is not None and (hs.packets, hs.frame_bytes, hs.retransmitted) == (packets, frames, again)
        assert len(ov.protected_lengths(source)) == esp
    assert len(ov.protected_lengths(ex, src="10.100.2.5")) == (34 if name == "it01-n2.pcap" else 0)
    assert passes[name] == 3                 # the two calls given the path: one pass each


@pytest.mark.parametrize("pcap", sorted(TLS), ids=lambda p: p.name)
def test_tls_counts_the_same_from_the_shared_export(pcap: Path, passes: Counter[str]) -> None:
    require_tools("tshark")
    ov = registry.overlay("tls")
    ex = wire.Export.read(pcap, ov.wire_fields("sbi", {}))
    for source in (ex, pcap):
        hs = ov.handshakes(source, "sbi", {})
        assert hs is not None
        assert (hs.total_packets, hs.total_frame_bytes, sum(hs.ip_bytes.values())) == TLS[pcap]


def _tree(root: Path) -> Path:
    dest = root / "adhoc" / "sbi" / RUN.parent.name / RUN.name
    shutil.copytree(RUN, dest)
    return root


def test_the_report_reads_each_capture_once_and_an_unchanged_tree_not_at_all(
        tmp_path: Path, passes: Counter[str]) -> None:
    require_tools("tshark")
    from analysis.report import build
    results = _tree(tmp_path / "results")
    with cache.cached_in(tmp_path / "cache"):
        build(results, tmp_path / "out1")
        assert dict(passes) == {"it01-n2-gnb.pcap": 1, "it01-n2.pcap": 1, "it01-n4.pcap": 1}
        first = (tmp_path / "out1" / "wire-bytes" / "wire-bytes.csv").read_text()
        passes.clear()
        build(results, tmp_path / "out2")
        assert dict(passes) == {}
        assert (tmp_path / "out2" / "wire-bytes" / "wire-bytes.csv").read_text() == first
    # without a cache: the same table, one pass per capture again
    passes.clear()
    build(results, tmp_path / "out3")
    assert (tmp_path / "out3" / "wire-bytes" / "wire-bytes.csv").read_text() == first
    assert set(passes.values()) == {1}


def test_the_cache_is_keyed_by_content(tmp_path: Path, passes: Counter[str]) -> None:
    require_tools("tshark")
    a = tmp_path / "a.pcap"
    shutil.copy(RUN / "it01-n4.pcap", a)
    fields = ["frame.len"]
    with cache.cached_in(tmp_path / "cache"):
        text = cache.export(a, fields)
        b = tmp_path / "b.pcap"                    # the same bytes under another name: no pass
        shutil.copy(a, b)
        assert cache.export(b, fields) == text and passes["b.pcap"] == 0
        a.touch()                                  # a new time stamp, the same content: no pass
        assert cache.export(a, fields) == text and passes["a.pcap"] == 1
        assert cache.export(a, ["frame.number"]) != text and passes["a.pcap"] == 2   # other fields
        shutil.copy(RUN / "it01-n2.pcap", a)       # other content under the old name: a pass
        assert cache.export(a, fields) != text and passes["a.pcap"] == 3


def test_an_unwritable_cache_only_costs_the_pass(tmp_path: Path, passes: Counter[str],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    require_tools("tshark")
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    with cache.cached_in(blocked / "cache"):
        assert cache.export(RUN / "it01-n4.pcap", ["frame.len"]).strip()
    assert passes["it01-n4.pcap"] == 1 and "cache" in caplog.text


def test_the_command_line_leaves_the_callers_cache_as_it_was(tmp_path: Path) -> None:
    """The CLI's --cache is for its command only: after `main()` in the same process (a test, a
    notebook) no export is cached where the caller did not ask (the report test above failed in
    the whole suite after a CLI test had left the default cache on)."""
    from analysis import cli
    before = cache._cache_dir
    cli.main(["list-figures"])
    assert cache._cache_dir == before


def test_leak_captures_are_not_read_as_the_wire(tmp_path: Path, passes: Counter[str]) -> None:
    """A run's leak captures (purpose "leak": every interface out of an endpoint's namespace, the
    verdict's evidence; issue 28) are not the measured wire: the report read each as another wire
    capture, three tshark passes per protected namespace run instead of one (issue 30 item 7's
    cold report) and the same handshakes counted thrice. With a real capture added as two leak
    captures, the wire-bytes table and the attach bytes are those of the run without them, and the
    leak captures are never read."""
    import json

    from analysis import attach_bytes, wire_bytes
    from analysis.results import discover
    require_tools("tshark")
    plain = _tree(tmp_path / "plain")
    leaky = _tree(tmp_path / "leaky")
    run = next((leaky / "adhoc" / "sbi").glob("*/*"))
    manifest = json.loads((run / "manifest.json").read_text())
    for node in ("gnb", "amf"):
        shutil.copy(run / "it01-n2.pcap", run / f"{node}-ifaces.pcap")
        manifest["files"].append({"path": f"{node}-ifaces.pcap", "kind": "pcap", "iface": "n2", "purpose": "leak",
                                  "node": node, "iteration": 1, "bytes": (run / "it01-n2.pcap").stat().st_size})
    (run / "manifest.json").write_text(json.dumps(manifest))

    def read(results: Path) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        runs = [r for r in discover(results) if r.usable]
        got = wire_bytes.read(runs, frames_of=attach_bytes.frame_captures(runs))
        per_attach = attach_bytes.samples(results, frames_of=got.frames)
        return got.rows, per_attach.drop(columns=["campaign"], errors="ignore").to_dict("records")
    want = read(plain)
    passes.clear()
    assert read(leaky) == want
    assert passes["gnb-ifaces.pcap"] == passes["amf-ifaces.pcap"] == 0
    assert [r["capture"] for r in want[0]] == ["it01-n2.pcap", "it01-n4.pcap"] and want[1]


def _echo_capture(path: Path, sizes: tuple[int, ...], count: int = 3) -> Path:
    """A classic pcap of ICMP echo requests between two addresses (Ethernet, IPv4), `count` of each
    payload size: what a baseline namespace run's n3 capture holds, for tshark to read."""
    import struct
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    seq = 0
    for size in sizes:
        for _ in range(count):
            seq += 1
            icmp = struct.pack("!BBHHH", 8, 0, 0, 1, seq) + bytes(size - 8)
            ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), seq, 0, 64, 1, 0,
                             bytes([10, 100, 3, 50]), bytes([10, 100, 3, 7])) + icmp
            frame = bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x08\x00" + ip
            out += struct.pack("<IIII", 1_795_000_000 + seq, 0, len(frame), len(frame)) + frame
    path.write_bytes(out)
    return path


def test_only_the_baseline_capture_that_gives_the_inner_lengths_is_read(tmp_path: Path,
                                                                        passes: Counter[str]) -> None:
    """Issue 30 item 7: of the baseline runs' captures, the table needs the inner lengths of one
    (the first in order with echo requests; its rows are the runs' names alone), yet each was read:
    5 of a paper-sized campaign's 20 passes. Now the first is read, a later one only when the
    earlier give no lengths; the rows are those of reading every capture."""
    from analysis import wire_bytes
    from analysis.results import discover
    from tests.analysis.results_tree import _manifest, _write_run
    require_tools("tshark")
    results = tmp_path / "results"
    for i in range(4):
        d = _write_run(results, _manifest("overlay", "baseline", "none", f"20261129T00000{i}Z-000{i}",
                                          [{"path": "n3.pcap", "kind": "pcap", "iface": "n3",
                                            "purpose": "validation"}]))
        # the first run's capture holds no echo request: the second one's lengths are taken
        _echo_capture(d / "n3.pcap", () if i == 0 else (64, 1024))
    runs = sorted((r for r in discover(results) if r.usable), key=lambda r: r.run_id)
    seen: dict[str, list[int]] = {}
    real = wire_bytes.baseline_lengths

    def noting(ex: wire.Export, experiment: str) -> list[int]:
        seen[str(ex.path)] = real(ex, experiment)
        return seen[str(ex.path)]
    got = wire_bytes.read(runs, workers=1)
    assert sum(passes.values()) == 2
    assert [r["run"] for r in got.rows] == [r.run_id for r in runs] and all(len(r) == 5 for r in got.rows)
    passes.clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(wire_bytes, "baseline_lengths", noting)
        wire_bytes.read(runs, workers=1)
    assert sorted(map(len, seen.values())) == [0, 2]          # the empty first one, then 84 and 1044
    assert [84, 1044] in seen.values()
