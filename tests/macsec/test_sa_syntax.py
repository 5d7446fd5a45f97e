"""The rendered SA lines against the grammar `ip macsec add <link> tx|rx ...` parses (iproute2's SA
arguments: pn <u32> | xpn <u64>, salt = 12 bytes in hex, ssci = a 32-bit number in HEX, key = a key
id of up to 16 bytes and a key of up to 32 bytes, both hex; on | off), on every host. The same lines
go through the real `ip macsec` on a real macsec link where the kernel has the module
(tests/integration/test_macsec_netns.py::test_rendered_sa_lines_are_accepted_by_ip_macsec)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from macsec import overlay
from testbed import profiles, ran, stack

PROFILES = [p.id for p in profiles.load().values() if p.protocol == "macsec"]
HEX = re.compile(r"^(0x)?[0-9a-fA-F]+$")


def _hexbytes(arg: str, max_bytes: int) -> int:
    """Bytes of a hex string as iproute2's hexstring_a2n takes it (whole bytes, at most max_bytes)."""
    assert re.fullmatch(r"[0-9a-fA-F]+", arg) and len(arg) % 2 == 0 and len(arg) // 2 <= max_bytes, arg
    return len(arg) // 2


def _u(arg: str, bits: int, base: int = 0) -> int:
    """strtoul(arg, base) within `bits`, as iproute2's get_u32/get_u64/get_be32 (base 16 for the ssci)."""
    if base == 16:
        assert HEX.match(arg), f"{arg!r} is no hex number"
        value = int(arg, 16)
    else:
        value = int(arg, 0)
    assert 0 <= value < 1 << bits, f"{arg!r} does not fit {bits} bits (read in base {base or 'auto'})"
    return value


def parse_sa_args(args: list[str]) -> dict[str, object]:
    """What iproute2 makes of `sa <an> ...` (an AssertionError where it prints `argument ... is wrong`)."""
    assert args[:1] == ["sa"] and args[1] in ("0", "1", "2", "3"), args
    sa: dict[str, object] = {"an": int(args[1])}
    it = iter(args[2:])
    for word in it:
        if word in ("pn", "xpn"):
            assert "pn" not in sa, "pn given twice"
            sa["pn"] = _u(next(it), 32 if word == "pn" else 64)
            assert sa["pn"] != 0
            sa["xpn"] = word == "xpn"
        elif word == "salt":
            sa["salt"] = _hexbytes(next(it), 12)
        elif word == "ssci":
            sa["ssci"] = _u(next(it), 32, base=16)
        elif word == "key":
            sa["key_id"], sa["key"] = _hexbytes(next(it), 16), _hexbytes(next(it), 32)
        elif word in ("on", "off"):
            assert "active" not in sa, "on/off given twice"
            sa["active"] = word == "on"
        else:
            raise AssertionError(f'macsec: unknown command "{word}"')
    return sa


def parse_line(line: str) -> dict[str, object]:
    """A sa.conf line (`tx sa ...`, `rx sci <sci> on`, `rx sci <sci> sa ...`)."""
    words = line.split()
    if words[0] == "tx":
        return parse_sa_args(words[1:])
    assert words[:2] == ["rx", "sci"] and re.fullmatch(r"[0-9a-f]{16}", words[2]), words
    return {"sci": words[2]} if words[3:] == ["on"] else parse_sa_args(words[3:])


@pytest.mark.parametrize("profile", PROFILES)
def test_rendered_sa_lines_parse_as_iproute2_reads_them(tmp_path: Path, profile: str) -> None:
    prof = profiles.get(profile)
    values = ran.restrict(stack.load(), "ueransim")
    out = overlay.render(prof, "n3", values, tmp_path / "keys", tmp_path / "r")
    for node, d in out.items():
        lines = [x for x in (d / "sa.conf").read_text().splitlines() if x and not x.startswith("#")]
        sas = [parse_line(x) for x in lines]
        key_bytes = int(prof.params["key_bits"]) // 8
        for sa in (s for s in sas if "key" in s):
            assert sa["key"] == key_bytes and sa["key_id"] == 16 and sa["active"] is True
            if prof.params["xpn"]:
                assert sa["xpn"] is True and sa["salt"] == 12
            else:
                assert sa["xpn"] is False and "ssci" not in sa and "salt" not in sa
        if prof.params["xpn"]:
            addr = stack.address(node, "n3", values)
            assert sas[0]["ssci"] == overlay.ssci_of(addr)      # the transmit SA carries the node's own SSCI


def test_the_parser_refuses_what_iproute2_refuses() -> None:
    """The check can fail: the decimal SSCI of the old render, and the other errors iproute2 names."""
    with pytest.raises(AssertionError, match="does not fit 32 bits"):
        parse_sa_args("sa 0 xpn 1 on ssci 174326578 salt 000102030405060708090a0b key 00 00112233".split())
    for bad in ("sa 4 pn 1 on", "sa 0 pn 0 on", "sa 0 pn 1 on on", "sa 0 pn 1 salt 0011 on xyz",
                "sa 0 pn 1 key 0 0011"):
        with pytest.raises(AssertionError):
            parse_sa_args(bad.split())
    assert parse_sa_args("sa 0 xpn 1 on ssci 0a640332 salt 000102030405060708090a0b key 00 0011".split())["ssci"] \
        == 0x0A640332
