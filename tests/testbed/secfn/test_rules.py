"""The seed's rules as data, rendered for Suricata and Snort 3 (testbed/secfn/rules.py)."""
from __future__ import annotations

import pytest

from testbed.secfn import rules


def test_both_engines_get_the_same_rules_with_sid_and_rev() -> None:
    for engine in rules.ENGINES:
        text = rules.rules_text(False, engine)
        assert text.count("\n") == 4
        for r in rules.SEED_RULES:
            assert f"sid:{r.sid}; rev:{r.rev};" in text
        assert "drop " not in text
        assert f"sid:{rules.DROP_SID};" in rules.rules_text(True, engine)
    # the fourth rule keeps the seed's flow, classtype and priority, in order
    assert ('alert tcp $EXTERNAL_NET any -> $HOME_NET 445 (msg:"Exploit Detected!"; flow:to_server,established; '
            'classtype:attempted-admin; priority:10; sid:2094284; rev:2;)') in rules.rules_text(False, "snort")


def test_classifications_are_those_the_rules_use() -> None:
    assert rules.classifications(True) == {"attempted-admin": (1, "Attempted Administrator Privilege Gain")}


def test_unknown_engine_refused() -> None:
    with pytest.raises(ValueError, match="valid: suricata, snort"):
        rules.rules_text(False, "zeek")
