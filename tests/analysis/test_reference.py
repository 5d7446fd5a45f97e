"""analysis/reference.py: every published value is transcribed from the digest in tests/data/reference."""
from __future__ import annotations

import re

import pytest

from analysis.reference import RAN_REFERENCES, REFERENCES, by_key
from analysis.tables import TABLES
from tests.conftest import ROOT

REFERENCE_MD = ROOT / "tests" / "data" / "reference" / "published-values.md"


def test_keys_unique_and_tables_exist():
    keys = [r.key for r in REFERENCES]
    assert len(keys) == len(set(keys))
    assert all(r.table in TABLES for r in REFERENCES)
    with pytest.raises(KeyError, match="valid: n3-ipsec-64"):
        by_key("nope")


def test_values_appear_in_reference_md():
    text = REFERENCE_MD.read_text()
    numbers = set(re.findall(r"\d+(?:[.,]\d+)?", text.replace(",", "")))
    for r in REFERENCES:
        quoted = [r.value] if r.value is not None else list(r.range or [])
        for v in quoted:
            if r.key == "sbi-warm-wireguard":     # "about twice the IPsec overhead": 2 x 1.2 ms
                assert v == pytest.approx(2 * by_key("sbi-warm-ipsec").value)
                continue
            assert f"{v:g}" in numbers or f"{v:.2f}" in numbers, (r.key, v)
        assert r.source and r.section and r.text


def test_ran_values_appear_in_the_2026_section_of_reference_md():
    text = REFERENCE_MD.read_text()
    section = text[text.index("## Michaelides et al., WiSec 2026"):text.index("## IPsec throughput")]
    numbers = set(re.findall(r"\d+(?:\.\d+)?", section.replace(",", "")))
    keys = [r.key for r in RAN_REFERENCES]
    assert len(set(keys)) == len(keys) and not set(keys) & {r.key for r in REFERENCES}
    for r in RAN_REFERENCES:
        assert f"{r.value:g}" in numbers, (r.key, r.value)
        assert r.table == "ran" and r.source == "Michaelides et al., WiSec 2026" and by_key(r.key) is r
