"""The field helpers of analysis/parse/tshark.py that every table parser shares: a frame's
several values of one field (tshark -E occurrence=a) and the epoch text <-> nanoseconds pair."""
from __future__ import annotations

import pytest

from analysis.parse.tshark import epoch_ns_text, field_values, last_value, ns_epoch_text


def test_field_values_split_on_the_aggregator_dropping_empty_ones_unless_kept() -> None:
    assert field_values("") == []
    assert field_values("15,,46") == ["15", "46"]
    assert field_values("a\x1f\x1fb", "\x1f") == ["a", "b"]
    assert field_values("a\x1f\x1fb", "\x1f", keep_empty=True) == ["a", "", "b"]      # aligned with another field


def test_last_value_is_the_innermost_of_the_first_field_that_has_one() -> None:
    assert last_value("10.0.0.1,10.45.0.2", "fd00::1") == "10.45.0.2"
    assert last_value("", "fd00::1,fd00::2") == "fd00::2"
    assert last_value(",", "") == ""
    assert last_value("a\x1f", aggregator="\x1f") == "a"
    assert last_value("a\x1f", aggregator="\x1f", keep_empty=True) == ""


@pytest.mark.parametrize("text", ["1764060254.123456789", "0.000000001", "1764060254.100000000"])
def test_epoch_text_round_trips_through_nanoseconds(text: str) -> None:
    assert ns_epoch_text(epoch_ns_text(text)) == text
