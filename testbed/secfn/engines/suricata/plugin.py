"""Suricata as the UPF's IDS/IPS engine (Debian package): configuration and counters (engine.py)."""
from __future__ import annotations

from testbed.contract import EnginePlugin
from testbed.secfn.engines.suricata import engine


class Suricata(EnginePlugin):
    program = engine.PROGRAM
