"""The security-function catalogue, its units, and the experiment parameters (testbed/secfn)."""
from __future__ import annotations

from pathlib import Path

import pytest

from testbed import manifest, runparams, secfn


def test_every_function_resolves_with_its_engines() -> None:
    assert secfn.resolve("none").engine is None and not secfn.resolve("none").nat
    assert secfn.resolve("nat").nat and secfn.resolve("nat").mode is None
    assert secfn.resolve("nat", "snort").engine is None                 # nat runs no engine
    assert secfn.resolve("ids-nat").engine == "suricata" and secfn.resolve("ids-nat").mode == "passive"
    assert secfn.resolve("ips-nat", "passthrough").mode == "inline"
    assert secfn.resolve("ips-nat", "snort", queue_maxlen=4096).queue_maxlen == 4096


@pytest.mark.parametrize("args,kw,words", [
    (("bogus",), {}, "valid: none, nat, ids-nat, ips-nat"),
    (("ids-nat", "zeek"), {}, "valid: suricata, snort, passthrough"),
    (("ids-nat", "passthrough"), {}, "valid for it: suricata, snort"),
    (("ips-nat", "suricata"), {"queue_maxlen": 4096}, "Suricata 7 sets no queue length"),
    (("ips-nat", "snort"), {"queue_maxlen": 0}, "positive packet count"),
])
def test_bad_combinations_name_the_valid(args: tuple[str, ...], kw: dict, words: str) -> None:
    with pytest.raises(secfn.SecfnError, match=words):
        secfn.resolve(*args, **kw)


def test_units_round_trip() -> None:
    units = secfn.all_units()
    assert units == ["none-none", "nat-none", "ids-nat-suricata", "ids-nat-snort", "ips-nat-suricata",
                     "ips-nat-snort", "ips-nat-passthrough"]
    for u in units:
        f, e = secfn.parse_unit(u)
        assert secfn.unit(secfn.resolve(f, e)) == u
    with pytest.raises(secfn.SecfnError, match="valid: none-none"):
        secfn.parse_unit("ids-nat-passthrough-x")


def test_parameters_checked_before_anything_starts() -> None:
    p = runparams.validate("secfn-lab", {"SECFN": "ips-nat", "IDS": "snort", "RATES": "100 5000"}, "aes128gcm")
    assert p["rates"] == [100, 5000] and p["runs"] == 20 and p["duration"] == 5.0 and p["fail_open"] == "0"
    with pytest.raises(runparams.ParamError) as err:
        runparams.validate("secfn", {"SECFN": "ips", "PROTOCOLS": "sctp", "RATES": "0"})
    text = str(err.value)
    assert "SECFN='ips'" in text and "PROTOCOLS='sctp'" in text and "RATES='0'" in text
    with pytest.raises(runparams.ParamError, match="Suricata 7 sets no queue length"):
        runparams.validate("secfn", {"SECFN": "ips-nat", "QUEUE_MAXLEN": "64"})
    with pytest.raises(runparams.ParamError, match="cannot run on the n3 plane"):
        runparams.validate("secfn", {}, "aes128gcm-trap")


def test_run_directory_names_the_profile_and_the_function(tmp_path: Path) -> None:
    run_dir = manifest.create(tmp_path, "secfn-lab", "wireguard", {"SECFN": "ips-nat", "IDS": "passthrough",
                                                                   "CAMPAIGN": "c1"})
    assert run_dir.parent == tmp_path / "c1" / "secfn-lab" / "wireguard.ips-nat-passthrough"
    m = manifest.load(run_dir)
    assert m["secfn"]["unit"] == "ips-nat-passthrough" and m["secfn"]["form"] == "namespaces"
    assert m["versions"]["open5gs"] is None                 # no 5G stack between namespaces
    assert manifest.validate(m) == []


def test_a_stack_run_records_the_function_the_stack_ran_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SECFN reaches every stack render (make exports it): an n3 run says so in its manifest."""
    monkeypatch.setenv("SECFN", "ips-nat")
    monkeypatch.setenv("IDS", "snort")
    m = manifest.load(manifest.create(tmp_path, "n3", "baseline", {}))
    assert m["secfn"]["unit"] == "ips-nat-snort" and m["secfn"]["form"] == "stack"
    monkeypatch.setenv("SECFN", "")
    assert "secfn" not in manifest.load(manifest.create(tmp_path, "n3", "baseline", {}))
