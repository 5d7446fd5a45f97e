"""Per-request SBI operations (analysis/parse/sbi_ops.py), N2 procedure times
(analysis/parse/ngap_procedures.py) and the results-tree breakdown (analysis/sbi_breakdown.py,
sbi_report.py) on real captures from tests/data, checked against tshark's own reading of the same
frames. Decryption with real TLS and strongSwan: tests/integration/test_sbi_ops_decrypt.py."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from analysis import decrypt, sbi_breakdown, sbi_paths, sbi_report
from analysis.datasets import Datasets
from analysis.parse import ngap_procedures, sbi_ops
from analysis.parse.tshark import epoch_ns_text
from analysis.results import discover
from analysis.tables import attach as attach_table
from testbed import tshark
from tests.analysis import sbi_tree
from tests.conftest import require_tools

DOCS = "open5gs-docs-pcaps/5g-roaming-lbo.pcapng"
ROASTED = "roastedbeans-open5gs-roaming/n1_n2_interfaces.pcap"
HTTP1 = "open5gs-docs-pcaps/testregistration-1-110.pcapng"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANALYSIS_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def docs(shared_data: Path) -> Path:
    require_tools("tshark")
    return shared_data / DOCS


@pytest.mark.parametrize("path, template", [
    ("/nausf-auth/v1/ue-authentications", "/nausf-auth/v1/ue-authentications"),
    ("/nausf-auth/v1/ue-authentications/suci-0-001-01-0000-0-0-0000000001/5g-aka-confirmation",
     "/nausf-auth/v1/ue-authentications/{ueId}/5g-aka-confirmation"),
    ("/nnrf-nfm/v1/nf-instances/38c9ca6c-610c-41ee-b951-973e863a8887", "/nnrf-nfm/v1/nf-instances/{id}"),
    ("/nudm-sdm/v2/imsi-001010000000001/am-data?plmn-id=%7B%7D", "/nudm-sdm/v2/{ueId}/am-data"),
    ("/nudm-uecm/v1/imsi-1/registrations/amf-3gpp-access", "/nudm-uecm/v1/{ueId}/registrations/amf-3gpp-access"),
    ("/namf-comm/v1/ue-contexts/imsi-1/n1-n2-messages", "/namf-comm/v1/ue-contexts/{ueId}/n1-n2-messages"),
    ("/nsmf-pdusession/v1/sm-contexts/1/modify", "/nsmf-pdusession/v1/sm-contexts/{id}/modify"),
    ("/nudr-dr/v1/subscription-data/imsi-1/00101/provisioned-data/am-data",
     "/nudr-dr/v1/subscription-data/{ueId}/{id}/provisioned-data/am-data"),
    ("http://nrf:7777/nnrf-disc/v1/nf-instances?target-nf-type=AUSF", "/nnrf-disc/v1/nf-instances"),
])
def test_path_templates(path: str, template: str) -> None:
    assert sbi_paths.template(path) == template
    assert sbi_paths.operation("GET", path) == f"GET {template}"


def test_every_request_of_the_open5gs_capture(docs: Path) -> None:
    rows = sbi_ops.requests(docs)
    # the capture's SBI: 320 requests on ports 80 and 7777 (7777 by its preface), all answered
    assert sbi_ops.detect_ports(docs) == [80, 7777]
    assert len(rows) == 320 and all(r["ns_response"] is not None for r in rows)
    first = rows[0]
    assert (first["method"], first["operation"], first["status"]) == ("PUT", "PUT /nnrf-nfm/v1/nf-instances/{id}", "201")
    assert (first["client"], first["server"], first["server_port"], first["tcp_stream"], first["stream_id"]) == \
        ("127.0.0.1", "127.0.1.10", "80", "4", 1)
    # tshark's own reading of the two frames: the request HEADERS and the :status on stream 1
    got = tshark.fields(docs, "tcp.stream == 4 && http2.streamid == 1 && http2.type == 1",
                        ["frame.number", "frame.time_epoch"], extra=["-d", "tcp.port==80,http2"])
    (f_req, t_req), (f_resp, t_resp) = got[0][:2], got[1][:2]
    assert (first["frame_request"], first["frame_response"]) == (int(f_req), int(f_resp))
    assert sbi_ops.time_ms(first) == pytest.approx((epoch_ns_text(t_resp) - epoch_ns_text(t_req)) / 1e6, abs=1e-9)
    ops = {r["operation"] for r in rows}
    assert "POST /nausf-auth/v1/ue-authentications" in ops
    assert "POST /namf-comm/v1/ue-contexts/{ueId}/n1-n2-messages" in ops


def test_one_tshark_pass_when_every_preface_is_in_the_capture(docs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30 item 4: the port pre-pass was a second full pass (2.0x one bare tshark pass on a
    123,740-frame copy of this capture). The preface on 7777 (which tshark's own heuristics leave
    as TCP data) is found within the one pass; the rows are those the two passes gave."""
    calls: list[tuple[str, ...]] = []
    real = tshark.export

    def counted(*args: object, **kw: object) -> str:
        calls.append(tuple(kw.get("decode_as") or ()))     # type: ignore[arg-type]
        return real(*args, **kw)                              # type: ignore[arg-type]
    monkeypatch.setattr(tshark, "export", counted)
    rows = sbi_ops.requests(docs)
    assert calls == [()]
    two_pass = sbi_ops.requests_from_records(sbi_ops._records(docs, sbi_ops.CLEAR, [80, 7777]), str(docs))
    assert rows == two_pass and len(rows) == 320


def test_without_the_lua_heuristic_the_same_rows_in_two_passes(docs: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A tshark that cannot run the script (no Lua in its build) warns and goes on: the preface's
    connections on 7777 are then found by their HEADERS segments and read in a second pass."""
    broken = tmp_path / "broken.lua"
    broken.write_text("error('this tshark runs no Lua')\n")
    monkeypatch.setattr(sbi_ops, "PREFACE_LUA", broken)
    records = sbi_ops._records(docs, sbi_ops.CLEAR, [])
    assert sbi_ops.undecoded_ports(records) == [7777]
    monkeypatch.setenv("ANALYSIS_CACHE", "off")
    rows = sbi_ops.requests(docs)
    assert len(rows) == 320 and all(r["ns_response"] is not None for r in rows)


def test_http1_sbi_of_open5gs_test_programs(shared_data: Path) -> None:
    """Issue 30 item 4: Open5GS's registration test capture speaks HTTP/1.1 on 7777; sbi-ops
    printed a CSV header only. Each request is paired with the response tshark links to it
    (SOURCE.md: 36 requests, 34 answered, frames 109 and 110 cut)."""
    require_tools("tshark")
    cap = shared_data / HTTP1
    rows = sbi_ops.requests(cap)
    assert len(rows) == 36 and {r["http"] for r in rows} == {"1.1"}
    assert [r["frame_request"] for r in rows if r["ns_response"] is None] == [109, 110]
    first = rows[0]
    assert (first["operation"], first["status"], first["client"], first["server_port"], first["frame_response"]) == \
        ("PUT /nnrf-nfm/v1/nf-instances/{id}", "201", "::1", "7777", 3)
    assert sbi_ops.time_ms(first) == pytest.approx(0.230828, abs=1e-9)
    got = tshark.fields(cap, "http.request_in == 15", ["frame.number", "http.response.code", "tcp.reassembled.length"])
    put = next(r for r in rows if r["frame_request"] == 15)
    assert (put["frame_response"], put["status"], put["response_bytes"]) == (int(got[0][0]), got[0][1], int(got[0][2]))
    ops = {r["operation"] for r in rows}
    assert "POST /nausf-auth/v1/ue-authentications" in ops and "GET /nudm-sdm/v2/{ueId}/am-data" in ops
    out = subprocess.run([sys.executable, "-m", "analysis", "sbi-ops", str(cap)], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert len(out) == 37 and out[0].endswith(",http") and out[1].endswith(",1.1")


def test_capture_starting_after_the_preface(docs: Path, tmp_path: Path) -> None:
    """Frames 1800 on: every connection started before, HPACK tables half unknown. The ports are
    still found and the requests whose headers tshark can decode match the full capture's."""
    require_tools("editcap")
    late = tmp_path / "late.pcapng"
    subprocess.run(["editcap", "-r", str(docs), str(late), "1800-2690"], check=True, capture_output=True)
    full = {(r["frame_request"] - 1799, r["operation"], r["status"], sbi_ops.time_ms(r))
            for r in sbi_ops.requests(docs) if r["frame_request"] >= 1800 and r["frame_response"]}
    rows = sbi_ops.requests(late)
    assert sbi_ops.detect_ports(late) == [80, 7777]
    decoded = [r for r in rows if r["path"]]
    assert len(decoded) >= 20
    part = {(r["frame_request"], r["operation"], r["status"], sbi_ops.time_ms(r)) for r in decoded if r["frame_response"]}
    assert part and part <= full


def test_microsecond_pcap_and_unanswered_request(docs: Path, tmp_path: Path) -> None:
    require_tools("editcap")
    us = tmp_path / "us.pcap"
    subprocess.run(["editcap", "-F", "pcap", str(docs), str(us)], check=True, capture_output=True)
    ns_rows, us_rows = sbi_ops.requests(docs), sbi_ops.requests(us)
    assert [r["operation"] for r in us_rows] == [r["operation"] for r in ns_rows]
    assert all(abs(a["ns_request"] - b["ns_request"]) < 1000 for a, b in zip(us_rows, ns_rows))
    # cut the capture between the PUT's request (89) and its response (97): kept, time empty
    cut = tmp_path / "cut.pcapng"
    subprocess.run(["editcap", "-r", str(docs), str(cut), "1-95"], check=True, capture_output=True)
    rows = sbi_ops.requests(cut)
    put = next(r for r in rows if r["frame_request"] == 89)
    assert put["ns_response"] is None and put["status"] == "" and sbi_ops.time_ms(put) is None
    line = next(ln for ln in sbi_ops.rows_csv(rows).splitlines() if ",89," in ln)
    assert ",PUT,/nnrf-nfm/v1/nf-instances/" in line and ",,," in line


def test_n2_procedures_roastedbeans(shared_data: Path) -> None:
    """Times from the capture's SOURCE.md table: InitialContextSetup 970.828447 -> 974.342318,
    PDUSessionResourceSetup 229.997676 -> 233.024473; the gNB uses 38412 as its own port too."""
    require_tools("tshark")
    rows = ngap_procedures.procedures(shared_data / ROASTED)
    ms = {r["procedure"]: (int(r["ns_end"]) - int(r["ns_start"])) / 1e6 for r in rows if r["ns_end"]}
    assert ms["InitialContextSetup"] == pytest.approx(3.513871, abs=1e-9)
    assert ms["PDUSessionResourceSetup"] == pytest.approx(3.026797, abs=1e-9)
    assert ms["InitialUEMessage -> DownlinkNASTransport"] == pytest.approx(330.832114, abs=1e-9)
    assert ms["NGSetup"] == pytest.approx(16.356361, abs=1e-9)
    ue = {r["ue"] for r in rows if r["procedure"] != "NGSetup"}
    assert ue == {"10.33.33.4:38412/ran-ue-1"}
    assert all(r["status"] == "complete" for r in rows)


def test_n2_procedures_open5gs(docs: Path) -> None:
    rows = ngap_procedures.procedures(docs)
    by = {(r["procedure"], r["kind"]): r for r in rows}
    pdu = by[("PDUSessionResourceSetup", "request-response")]
    # SOURCE.md: frames 2444 -> 2452
    assert (pdu["frame_start"], pdu["frame_end"]) == (2444, 2452)
    assert (pdu["ns_end"] - pdu["ns_start"]) / 1e6 == pytest.approx(151.843681 - 150.986991, abs=1e-6)
    assert by[("InitialContextSetup", "request-response")]["status"] == "complete"


def test_cli_on_captures(docs: Path, shared_data: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "analysis", "sbi-ops", str(docs), "--names"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].startswith("capture,t_request,t_response,time_ms,method,path,operation,status")
    assert len(out) == 321
    out = subprocess.run([sys.executable, "-m", "analysis", "n2-procedures", str(shared_data / ROASTED)],
                         capture_output=True, text=True, check=True).stdout
    assert "InitialContextSetup,request-response,14,1746074502.970828447,1746074502.974342318,3.513871" in out
    bad = subprocess.run([sys.executable, "-m", "analysis", "sbi-ops", "/nonexistent.pcap"], capture_output=True,
                         text=True)
    assert bad.returncode == 1 and "does not exist" in bad.stderr


@pytest.fixture
def tree(tmp_path: Path, shared_data: Path) -> Path:
    require_tools("tshark", "editcap")
    return sbi_tree.build(tmp_path / "results", shared_data)


def test_results_tree_breakdown(tree: Path, tmp_path: Path) -> None:
    ds = Datasets.load(discover(tree))
    t = sbi_breakdown.tables(ds.runs, ds.attach, attach_table(ds))
    status = t["sbi-decryption"].set_index(["profile", "iteration"])["decryption"]
    assert status[("baseline", 1)] == "cleartext"
    assert status[("wireguard@n3", 2)].startswith("cleartext (the overlay covers n3")
    assert status[("tls13-aes128gcm", 1)].startswith("not decrypted: the run exported no keys")
    ops = t["sbi-operations"]
    auth = ops[(ops["operation"] == "POST /nausf-auth/v1/ue-authentications") & (ops["phase"] == "cold")]
    assert set(auth["profile"]) == {"baseline", "wireguard@n3"}
    assert (auth["n_boots"] == 2).all()
    # the same packets in every boot and profile: no overhead, exactly
    w = auth[auth["profile"] == "wireguard@n3"]
    assert (w["overhead"].abs() < 1e-9).all()
    att = t["sbi-attaches"]
    assert len(att) == 4                                   # 2 profiles x 2 boots, one cold attach each
    assert (att["sbi_ms"] <= att["attach_ms"]).all() and (att["sbi_ms"] > 0).all()
    assert (att["ops_ms"] >= att["sbi_ms"]).all()          # nested requests count in the sum only
    budget = t["sbi-budget"].set_index("profile")
    assert budget.loc["wireguard@n3", "attach_overhead"] == pytest.approx(0, abs=1e-9)
    assert budget.loc["wireguard@n3", "sbi_overhead"] == pytest.approx(0, abs=1e-9)
    n2 = t["n2-procedures"].set_index(["profile", "phase", "procedure"])
    pdu = n2.loc[("wireguard@n3", "cold", "PDUSessionResourceSetup")]
    assert pdu["n_boots"] == 2 and pdu["mean"] == pytest.approx(151.843681 - 150.986991, abs=1e-6)
    assert pdu["overhead"] == pytest.approx(0, abs=1e-9)
    report = sbi_report.markdown_section(tree, tmp_path / "out", ds.runs, ds.attach, attach_table(ds))
    assert "## Where the attach time goes" in report and "not decrypted" in report
    assert "### N2 procedure times in the attach" in report
    assert (tmp_path / "out" / "figures" / "fig-sbi-timeline-wireguard@n3.png").is_file()
    assert (tmp_path / "out" / "sbi-ops" / "sbi-operations.csv").is_file()


def test_cli_on_a_tree_names_each_capture_without_a_request(tree: Path) -> None:
    """The guest's `sbi-ops` over a TLS run without keys printed empty tables and no word."""
    res = subprocess.run([sys.executable, "-m", "analysis", "sbi-ops", "--format", "csv", str(tree)],
                         capture_output=True, text=True, check=True)
    said = [line for line in res.stderr.splitlines() if "no SBI request paired" in line]
    assert len(said) == 2, res.stderr                                  # its two iterations
    assert all("(tls13-aes128gcm): not decrypted: the run exported no keys" in s for s in said), res.stderr
    assert "POST /nausf-auth/v1/ue-authentications" in res.stdout    # the other runs' rows still come


def test_union_of_nested_and_parallel_requests() -> None:
    ms = 1_000_000
    assert sbi_breakdown.union_ms([(0, 10 * ms), (2 * ms, 5 * ms), (8 * ms, 12 * ms), (20 * ms, 21 * ms)]) == 13.0
    assert sbi_breakdown.union_ms([]) == 0.0


def test_decryption_plan_names_what_is_missing(tree: Path) -> None:
    runs = {r.profile: r for r in discover(tree)}
    cap = next(f for f in runs["tls13-aes128gcm"].files("pcap") if f.attrs["iface"] == "sbi")
    plan = decrypt.plan(runs["tls13-aes128gcm"], cap)
    assert plan.decode is None and "KEYS=1" in plan.status
    wg = runs["wireguard"]
    wg.manifest["plane"] = "sbi"
    assert "ephemeral" in str(decrypt.plan(wg, cap).status)
