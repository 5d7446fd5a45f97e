"""macsec/run_checks.py: the endpoints' `ip -s macsec show` records against the profile. The
records here are written in iproute2's text format (6.1 and 6.15 print it alike, checked against
their source), stats lines between the SA lines as `-s` puts them; real records of a real link:
tests/integration/test_macsec_netns.py."""
from __future__ import annotations

from pathlib import Path

from macsec import overlay, run_checks
from testbed import profiles, ran, registry, stack

GNB, UPF = "10.100.3.50", "10.100.3.7"
RENDER = "5450df2ce8a0d190c5083ce5"                    # the render's nonce, first 12 bytes


def record(own: str, peer: str, suite: str = "GCM-AES-128", xpn: bool = False, encrypt: str = "on",
           rx_state: str = "on", key_prefix: str = RENDER) -> str:
    def sa(addr: str, pn: int) -> str:
        ssci = f"SSCI {overlay.ssci_of(addr):08x}" if xpn else ""
        return f"        0: PN {pn},{ssci} state on, key {key_prefix}{overlay.ssci_of(addr):08x}\n"
    return (
        f"7: macsec0: protect on validate strict sc off sa off encrypt {encrypt} send_sci on end_station off "
        "scb off replay on window 0 \n"
        f"    cipher suite: {suite}, using ICV length 16\n"
        f"    TXSC: {overlay.sci_of(own)} on SA 0\n"
        "    stats: OutPktsUntagged InPktsUntagged OutPktsTooLong InPktsNoTag InPktsBadTag InPktsUnknownSCI "
        "InPktsNoSCI InPktsOverrun\n"
        "                         0              0              0           0            0                0"
        "           0             0\n"
        "    stats: OutPktsProtected OutPktsEncrypted OutOctetsProtected OutOctetsEncrypted\n"
        "                          0              212                  0              19342\n"
        + sa(own, 213) +
        "    stats: OutPktsProtected OutPktsEncrypted\n"
        "                          0              212\n"
        f"    RXSC: {overlay.sci_of(peer)}, state {rx_state}\n"
        "    stats: InOctetsValidated InOctetsDecrypted InPktsUnchecked InPktsDelayed InPktsOK InPktsInvalid "
        "InPktsLate InPktsNotValid InPktsNotUsingSA InPktsUnusedSA\n"
        "                           0             19342               0             0      212             0"
        "          0              0                0              0\n"
        + sa(peer, 213) +
        "    stats: InPktsOK InPktsInvalid InPktsNotValid InPktsNotUsingSA InPktsUnusedSA\n"
        "                212             0              0                0              0\n"
        "    offload: off \n")


def _values() -> dict:
    return ran.restrict(stack.load(), "ueransim")


def _run(tmp_path: Path, texts: dict[str, str], profile: str = "macsec-gcm-aes-128") -> tuple[Path, dict]:
    files = []
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
        files.append({"path": name, "kind": "log", "bytes": len(text)})
    return tmp_path, {"profile": profile, "plane": "n3", "files": files}


def _verdict(tmp_path: Path, texts: dict[str, str], profile: str = "macsec-gcm-aes-128"):
    run_dir, m = _run(tmp_path, texts, profile)
    (check,) = registry.overlay("macsec").check_run(run_dir, m, _values())
    assert check.field is None and check.verdict is not None
    return check.verdict


def test_records_of_both_ends_with_the_profiles_suite_are_valid(tmp_path: Path) -> None:
    v = _verdict(tmp_path, {f"sa-{w}-{n}.txt": record(a, b) for w in ("before", "after")
                            for n, a, b in (("gnb", GNB, UPF), ("upf", UPF, GNB))})
    assert v.valid, v.details
    assert v.details == ("MACsec SecY: 4 record(s), exactly GCM-AES-128, encrypted, strict validation, "
                         "every partner's channel in use")


def test_xpn_records_are_read(tmp_path: Path) -> None:
    texts = {"sa-after-gnb.txt": record(GNB, UPF, "GCM-AES-XPN-256", xpn=True),
             "sa-after-upf.txt": record(UPF, GNB, "GCM-AES-XPN-256", xpn=True)}
    assert "SSCI 0a640332 state on" in texts["sa-after-gnb.txt"]
    v = _verdict(tmp_path, texts, "macsec-gcm-aes-xpn-256")
    assert v.valid, v.details
    sections = run_checks.sections(texts["sa-after-gnb.txt"])
    assert [line.split(":")[0] for line, _ in sections] == ["TXSC", "RXSC"]
    assert all(sas == {"0": ("on", f"{RENDER}{overlay.ssci_of(a):08x}")} for (_, sas), a in zip(sections, (GNB, UPF)))


def test_a_wrong_suite_an_unencrypted_link_or_a_missing_channel_is_invalid(tmp_path: Path) -> None:
    prof = profiles.get("macsec-gcm-aes-256")
    problems = run_checks.record_problems(record(GNB, UPF), prof, "gnb", _values(), "n3")
    assert problems == ["cipher suite ('GCM-AES-128', '16'), profile wants GCM-AES-256 with a 16-octet ICV"]
    problems = run_checks.record_problems(record(GNB, UPF, "GCM-AES-256", encrypt="off", rx_state="off"), prof,
                                          "gnb", _values(), "n3")
    assert problems == ["'encrypt on' missing from its settings",
                        f"receive channel {overlay.sci_of(UPF)} (upf) off, without an SA in use"]
    wrong_peer = record(GNB, "10.100.3.99", "GCM-AES-256")
    assert f"receive channel {overlay.sci_of(UPF)} (upf) missing, without an SA in use" in \
        run_checks.record_problems(wrong_peer, prof, "gnb", _values(), "n3")
    assert run_checks.record_problems("", prof, "gnb", _values(), "n3") == ["no macsec0 in the record"]
    mixed = record(GNB, UPF, "GCM-AES-256").replace(f"key {RENDER}0a640307", "key 00112233445566778899aabb0a640307")
    assert any(p.startswith("keys of different renders") for p in
               run_checks.record_problems(mixed, prof, "gnb", _values(), "n3"))


def test_a_run_without_records_or_with_one_end_missing_is_invalid(tmp_path: Path) -> None:
    v = _verdict(tmp_path, {})
    assert not v.valid and "no `ip macsec show` record" in v.details
    (tmp_path / "b").mkdir()
    v = _verdict(tmp_path / "b", {"sa-after-gnb.txt": record(GNB, UPF)})
    assert not v.valid and "sa-after-upf: no record" in v.details
    (tmp_path / "c").mkdir()
    v = _verdict(tmp_path / "c", {"it01-sa-after-gnb.txt": record(GNB, UPF), "it01-sa-after-upf.txt": record(UPF, GNB)})
    assert v.valid, v.details
