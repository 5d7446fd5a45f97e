"""Provision the subscribers (UE 1, UE 2, the scaling UEs) into Open5GS's database.

Runs in the tools image as the compose service `provision` (python3 + python3-pymongo, no
tools from the MongoDB image), against any MongoDB-compatible server at MONGO_URI:

    python3 provision.py --uri mongodb://10.100.7.30/open5gs --input subscribers.json

The input is rendered by testbed.render (provision/subscribers.json, 0600). Idempotent: each
subscriber is upserted by IMSI with `$set` of the fields below, so a second run changes
nothing, a changed K/OPc is updated, and the SQN the UDR keeps is left alone.
Document layout: Open5GS misc/db/open5gs-dbctl (v2.7.7).

This file is mounted into the container on its own: it imports only the standard library
and pymongo.
"""
from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("provision")

COLLECTION = "subscribers"
DEFAULT_DB = "open5gs"
AMBR_1GBPS = {"downlink": {"value": 1000000000, "unit": 0}, "uplink": {"value": 1000000000, "unit": 0}}
HEX32 = re.compile(r"^[0-9a-fA-F]{32}$")


class ProvisionError(RuntimeError):
    """Bad input or an unreachable database; the message says which and what to do."""


def _session(dnn: str) -> dict[str, Any]:
    return {
        "name": dnn,
        "type": 3,                                           # IPv4v6 (open5gs-dbctl default)
        "qos": {"index": 9, "arp": {"priority_level": 8, "pre_emption_capability": 1,
                                    "pre_emption_vulnerability": 2}},
        "ambr": AMBR_1GBPS,
        "pcc_rule": [],
    }


def _slice(s_nssai: dict[str, Any], dnn: str, default: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"sst": int(s_nssai["sst"])}
    if s_nssai.get("sd") is not None:
        out["sd"] = str(s_nssai["sd"])
    out["default_indicator"] = default
    out["session"] = [_session(dnn)]
    return out


def subscriber_document(imsi: str, k: str, opc: str, *, dnn: str, s_nssai: list[dict[str, Any]],
                        amf_field: str = "8000") -> dict[str, Any]:
    """The Open5GS subscriber document for one SIM (without `sqn`, which the UDR owns)."""
    if not (isinstance(imsi, str) and imsi.isdigit() and 6 <= len(imsi) <= 15):
        raise ProvisionError(f"invalid IMSI {imsi!r}: 6 to 15 digits expected")
    for name, val in (("K", k), ("OPc", opc)):
        if not HEX32.match(str(val)):
            raise ProvisionError(f"IMSI {imsi}: {name} must be 32 hex digits (128 bits), got {val!r}")
    if not s_nssai:
        raise ProvisionError(f"IMSI {imsi}: at least one S-NSSAI is needed")
    return {
        "schema_version": 1,
        "imsi": imsi,
        "msisdn": [],
        "imeisv": [],
        "mme_host": [],
        "mm_realm": [],
        "purge_flag": [],
        "slice": [_slice(s, dnn, i == 0) for i, s in enumerate(s_nssai)],
        "security": {"k": str(k).upper(), "op": None, "opc": str(opc).upper(), "amf": str(amf_field)},
        "ambr": AMBR_1GBPS,
        "access_restriction_data": 32,
        "network_access_mode": 0,
        "subscriber_status": 0,
        "operator_determined_barring": 0,
        "subscribed_rau_tau_timer": 12,
        "__v": 0,
    }


def documents(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """All documents of a rendered subscribers.json."""
    try:
        return [subscriber_document(str(s["imsi"]), s["k"], s["opc"], dnn=spec["dnn"],
                                    s_nssai=spec["s_nssai"], amf_field=spec.get("amf_field", "8000"))
                for s in spec["subscribers"]]
    except KeyError as exc:
        raise ProvisionError(f"subscribers input lacks key {exc}; re-render with `make render`") from None


def update_for(doc: dict[str, Any]) -> dict[str, Any]:
    """The idempotent update: `$set` every field, security field by field (keeps security.sqn)."""
    fields = {k: v for k, v in doc.items() if k != "security"}
    for k, v in doc["security"].items():
        fields[f"security.{k}"] = v
    return {"$set": fields}


def provision(collection: Any, docs: list[dict[str, Any]]) -> dict[str, int]:
    """Upsert every document into a pymongo collection; returns counts."""
    counts = {"inserted": 0, "updated": 0, "unchanged": 0}
    for doc in docs:
        res = collection.update_one({"imsi": doc["imsi"]}, update_for(doc), upsert=True)
        if res.upserted_id is not None:
            counts["inserted"] += 1
        elif res.modified_count:
            counts["updated"] += 1
        else:
            counts["unchanged"] += 1
    try:
        collection.create_index("imsi", unique=True)
    except Exception as exc:
        log.warning("could not create the imsi index (%s); continuing", exc)
    return counts


def connect(uri: str, deadline_s: float) -> Any:
    """A pymongo database handle once the server answers `ping`, or ProvisionError at the deadline."""
    import pymongo  # imported here so the document builder works without pymongo
    from pymongo.errors import PyMongoError

    client: Any = pymongo.MongoClient(uri, serverSelectionTimeoutMS=2000, connectTimeoutMS=2000)
    end = time.monotonic() + deadline_s
    last = "no attempt"
    while True:
        try:
            client.admin.command("ping")
            break
        except PyMongoError as exc:
            last = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if time.monotonic() >= end:
            raise ProvisionError(f"database at {uri} did not answer within {deadline_s:.0f} s "
                                 f"(last error: {last}); check the mongo service (`make logs SERVICE=mongo`) "
                                 "or MONGO_URI")
        time.sleep(1)  # pacing between connection attempts (deadline above)
    try:
        db = client.get_default_database()
    except Exception:
        db = client[DEFAULT_DB]
    return db


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="provision.py", description=__doc__.splitlines()[0])
    parser.add_argument("--uri", required=True, help="MongoDB URI, e.g. mongodb://mongo/open5gs")
    parser.add_argument("--input", required=True, type=Path, help="rendered subscribers.json")
    parser.add_argument("--deadline", type=float, default=60.0, help="seconds to wait for the database")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="provision: %(message)s")
    try:
        spec = json.loads(args.input.read_text(encoding="utf-8"))
        docs = documents(spec)
        db = connect(args.uri, args.deadline)
        counts = provision(db[COLLECTION], docs)
    except (OSError, ValueError, ProvisionError) as exc:
        print(f"provision: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    log.info("%d subscribers in %s.%s: %d inserted, %d updated, %d unchanged",
             len(docs), db.name, COLLECTION, counts["inserted"], counts["updated"], counts["unchanged"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
