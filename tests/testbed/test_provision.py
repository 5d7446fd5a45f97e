"""Subscriber provisioning: the document builder, and idempotent runs against a real
MongoDB-compatible server when one is available (MONGO_TEST_URI, or a FerretDB binary in
FERRETDB_BIN / on PATH, started here with its SQLite backend)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from testbed import provision, stack
from testbed.render import provision_input

K = "465B5CE8B199B49FAA5F0A2EE238A6BC"
OPC = "E8ED289DEBA952E4283B54E88E6183CA"


def test_document_has_the_open5gs_schema() -> None:
    d = provision.subscriber_document("001010000000001", K.lower(), OPC, dnn="internet", s_nssai=[{"sst": 1}])
    assert d["imsi"] == "001010000000001" and d["schema_version"] == 1
    assert d["security"] == {"k": K, "op": None, "opc": OPC, "amf": "8000"}
    assert "sqn" not in d["security"], "the UDR owns the SQN"
    assert d["slice"] == [{"sst": 1, "default_indicator": True, "session": [{
        "name": "internet", "type": 3,
        "qos": {"index": 9, "arp": {"priority_level": 8, "pre_emption_capability": 1, "pre_emption_vulnerability": 2}},
        "ambr": {"downlink": {"value": 1000000000, "unit": 0}, "uplink": {"value": 1000000000, "unit": 0}},
        "pcc_rule": []}]}]
    for key, val in (("access_restriction_data", 32), ("network_access_mode", 0), ("subscriber_status", 0),
                     ("operator_determined_barring", 0), ("subscribed_rau_tau_timer", 12)):
        assert d[key] == val
    for key in ("msisdn", "imeisv", "mme_host", "mm_realm", "purge_flag"):
        assert d[key] == []


def test_slice_with_sd_and_second_slice_not_default() -> None:
    d = provision.subscriber_document("001010000000001", K, OPC, dnn="ims",
                                      s_nssai=[{"sst": 1, "sd": "000080"}, {"sst": 2}])
    assert [(s["sst"], s.get("sd"), s["default_indicator"]) for s in d["slice"]] == [(1, "000080", True), (2, None, False)]
    assert d["slice"][1]["session"][0]["name"] == "ims"


@pytest.mark.parametrize("imsi,k,opc,match", [
    ("00101x", K, OPC, "invalid IMSI"),
    ("001010000000001", K[:-2], OPC, "K must be 32 hex"),
    ("001010000000001", K, "zz" * 16, "OPc must be 32 hex"),
])
def test_bad_input_is_refused_with_the_imsi(imsi: str, k: str, opc: str, match: str) -> None:
    with pytest.raises(provision.ProvisionError, match=match):
        provision.subscriber_document(imsi, k, opc, dnn="internet", s_nssai=[{"sst": 1}])


def test_update_keeps_sqn_and_sets_every_field() -> None:
    d = provision.subscriber_document("001010000000001", K, OPC, dnn="internet", s_nssai=[{"sst": 1}])
    upd = provision.update_for(d)["$set"]
    assert "security" not in upd and upd["security.k"] == K and upd["security.opc"] == OPC
    assert "security.sqn" not in upd
    assert upd["slice"] == d["slice"] and upd["imsi"] == d["imsi"]


def test_rendered_input_gives_one_document_per_subscriber() -> None:
    values = stack.load()
    subs = {"ue1": {"imsi": "001010000000001", "k": K, "opc": OPC},
            "ue2": {"imsi": "001010000000002", "k": K, "opc": OPC},
            "scale": {"imsi_first": "001010000000100", "count": 64, "k": K, "opc": OPC}}
    docs = provision.documents(provision_input(subs, values))
    assert len(docs) == 2 + values["subscribers"]["scale"]["count"]
    assert docs[-1]["imsi"] == "001010000000163"
    assert all(d["slice"][0]["session"][0]["name"] == values["dnn"] for d in docs)


def test_provision_script_imports_only_stdlib_and_pymongo() -> None:
    """The file is mounted alone into the tools image: no testbed or yaml imports."""
    src = Path(provision.__file__).read_text()
    imports = {line.split()[1].split(".")[0] for line in src.splitlines()
               if line.startswith(("import ", "from ")) and not line.startswith("from __future__")}
    assert imports <= {"argparse", "json", "logging", "re", "sys", "time", "pathlib", "typing"}
    assert "import pymongo" in src


def test_cli_reports_an_unreachable_database(tmp_path: Path) -> None:
    pytest.importorskip("pymongo", reason="pymongo not installed: run `make setup`")
    inp = tmp_path / "subs.json"
    inp.write_text(json.dumps({"dnn": "internet", "s_nssai": [{"sst": 1}], "subscribers": []}))
    port = _free_port()
    res = subprocess.run([sys.executable, provision.__file__, "--uri", f"mongodb://127.0.0.1:{port}/open5gs",
                          "--input", str(inp), "--deadline", "2"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert f"127.0.0.1:{port}/open5gs did not answer within 2 s" in res.stderr


# --- against a real MongoDB-compatible server ------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def mongo_uri(tmp_path: Path) -> Iterator[str]:
    pytest.importorskip("pymongo", reason="pymongo not installed: run `make setup`")
    uri = os.environ.get("MONGO_TEST_URI")
    if uri:
        yield uri
        return
    binary = os.environ.get("FERRETDB_BIN") or shutil.which("ferretdb")
    if not binary:
        pytest.skip("no MongoDB-compatible server: set MONGO_TEST_URI, or FERRETDB_BIN to a FerretDB 1.x binary "
                    "(go build github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.0)")
    port, debug = _free_port(), _free_port()
    (tmp_path / "db").mkdir()
    proc = subprocess.Popen([binary, "--handler=sqlite", f"--sqlite-url=file:{tmp_path}/db/",
                             f"--listen-addr=127.0.0.1:{port}", f"--debug-addr=127.0.0.1:{debug}",
                             f"--state-dir={tmp_path}", "--telemetry=disable", "--log-level=error"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    pytest.fail(f"FerretDB {binary} did not listen on {port}: {err[-500:]}")
                time.sleep(0.2)  # polling, bounded by the deadline
        yield f"mongodb://127.0.0.1:{port}/open5gs"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _run(uri: str, inp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, provision.__file__, "--uri", uri, "--input", str(inp), "--deadline", "20"],
                          capture_output=True, text=True, timeout=120)


def test_provisioning_is_idempotent_on_a_real_server(mongo_uri: str, tmp_path: Path) -> None:
    import pymongo
    values = stack.load()
    subs = {"ue1": {"imsi": "001010000000001", "k": K, "opc": OPC},
            "ue2": {"imsi": "001010000000002", "k": K, "opc": OPC},
            "scale": {"imsi_first": "001010000000100", "count": 3, "k": K, "opc": OPC}}
    inp = tmp_path / "subscribers.json"
    inp.write_text(json.dumps(provision_input(subs, values)))
    client = pymongo.MongoClient(mongo_uri, serverSelectionTimeoutMS=5000)
    coll = client.get_default_database()["subscribers"]
    coll.delete_many({})

    first = _run(mongo_uri, inp)
    assert first.returncode == 0, first.stderr
    assert "5 inserted, 0 updated, 0 unchanged" in first.stderr
    # the UDR updates the SQN; a second provisioning must keep it
    coll.update_one({"imsi": "001010000000001"}, {"$set": {"security.sqn": 97}})
    second = _run(mongo_uri, inp)
    assert second.returncode == 0, second.stderr
    assert "0 inserted, 0 updated, 5 unchanged" in second.stderr
    assert coll.count_documents({}) == 5
    ue1 = coll.find_one({"imsi": "001010000000001"})
    assert ue1["security"] == {"k": K, "op": None, "opc": OPC, "amf": "8000", "sqn": 97}
    assert ue1["slice"][0]["session"][0]["name"] == values["dnn"]
    # new SIM secrets (make keys after deleting them) are updated in place
    subs["ue2"]["k"] = OPC
    inp.write_text(json.dumps(provision_input(subs, values)))
    third = _run(mongo_uri, inp)
    assert "0 inserted, 1 updated, 4 unchanged" in third.stderr, third.stderr
    assert coll.find_one({"imsi": "001010000000002"})["security"]["k"] == OPC
    client.close()
