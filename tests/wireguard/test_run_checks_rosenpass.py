"""The cold/warm run check of WireGuard + Rosenpass (wireguard/run_checks.py) on a real guest run
(tests/data/guest-wg-rosenpass-n2n4/SOURCE.md): reset-sessions.sh makes each pair's key anew inside
the reset, so the exchanges lie after the first reset began (not after the last one ended); a pair
whose only exchanges came before the resets is named."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import require_tools
from wireguard import run_checks
from wireguard.overlay import LISTEN_PORT

RUN = Path(__file__).resolve().parents[1] / "data" / "guest-wg-rosenpass-n2n4"


def _manifest(run_dir: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))


def test_the_guest_cold_run_used_keys_made_during_the_reset() -> None:
    require_tools("tshark")
    found = run_checks.sessions(RUN, _manifest(RUN), LISTEN_PORT)
    assert found is not None
    record, verdict = found
    assert verdict.valid, verdict.details
    it = record["iterations"]["it01"]
    assert it["rosenpass_exchanges_after_reset"] >= 2, it      # one per plane's pair (amf-gnb, smf-upf)
    assert it["handshakes_after_reset"] + it["remade_during_reset"] >= 2, it   # N4 re-made during the resets


def test_resets_that_began_after_every_exchange_are_named(tmp_path: Path) -> None:
    """The same records with every reset stamped an hour later: the exchanges now precede the
    resets, so the cold attach did not use a new key, and the pairs are named."""
    require_tools("tshark")
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    for f in run.glob("it01-wg-reset-*.txt"):
        lines = f.read_text(encoding="utf-8").splitlines()
        at, began = (int(x) + 3600 for x in lines[0].split())
        f.write_text("\n".join([f"{at} {began}", *lines[1:]]) + "\n", encoding="utf-8")
    found = run_checks.sessions(run, _manifest(run), LISTEN_PORT)
    assert found is not None and not found[1].valid
    assert "no complete Rosenpass exchange after the reset began for 10.100.2.5 and 10.100.2.50" in found[1].details, \
        found[1].details
