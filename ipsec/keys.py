"""IPsec's own key material: one pre-shared key per pair of endpoint nodes (names sorted),
32 random bytes as hex, under <keys>/psk/<a>--<b>.psk (docs/keys.md). Certificates come from the
shared PKI (tls-certs/, testbed/keys.py)."""
from __future__ import annotations

import itertools
import re
import secrets
from pathlib import Path

from testbed import keys

PSK_TEXT = re.compile(r"^[0-9a-f]{64}$")


def pair_name(a: str, b: str) -> str:
    if a == b:
        raise ValueError(f"a PSK pair needs two different nodes, got {a!r} twice")
    x, y = sorted((a, b))
    return f"{x}--{y}"


def psk_path(root: Path, a: str, b: str) -> Path:
    return Path(root) / "psk" / f"{pair_name(a, b)}.psk"


def psk(root: Path, a: str, b: str) -> str:
    """The IPsec PSK (64 hex digits) of the pair a, b; created if missing, KeysError if damaged."""
    path = psk_path(root, a, b)
    keys.write_new(path, secrets.token_hex(32) + "\n", 0o600)
    text = path.read_text(encoding="utf-8").strip()
    if not PSK_TEXT.match(text):
        raise keys.damaged(path, "not 64 hex digits")
    return text


def ensure(root: Path, nodes: list[str]) -> None:
    """A PSK for every pair of endpoint nodes (eagerly: 105 small files for 15 nodes)."""
    for a, b in itertools.combinations(nodes, 2):
        psk(root, a, b)
