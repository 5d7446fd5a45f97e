"""WireGuard's key material: one key pair per endpoint node, base64 as `wg genkey`/`wg pubkey`
print them, under <keys>/wg/<node>.key (0600) and <node>.pub (docs/keys.md)."""
from __future__ import annotations

import base64
import binascii
import shutil
from pathlib import Path

from testbed import host_tools, keys


def wg_paths(root: Path, node: str) -> tuple[Path, Path]:
    return Path(root) / "wg" / f"{node}.key", Path(root) / "wg" / f"{node}.pub"


def _check(path: Path) -> str:
    """The key's text, or KeysError when it is not one 32-byte key in base64."""
    text = path.read_text(encoding="utf-8").strip()
    try:
        ok = len(base64.b64decode(text, validate=True)) == 32
    except (binascii.Error, ValueError):
        ok = False
    if not ok:
        raise keys.damaged(path, "not a 32-byte WireGuard key in base64")
    return text


def wg_keys(root: Path, node: str) -> tuple[str, str]:
    """(private, public) WireGuard keys of a node, base64; created with `wg` if missing."""
    key, pub = wg_paths(root, node)
    if not key.exists():
        keys.write_new(key, keys.run_tool(["wg", "genkey"], f"WireGuard key of {node}").strip() + "\n", 0o600)
    private = _check(key)
    if not pub.exists():
        public = keys.run_tool(["wg", "pubkey"], f"WireGuard public key of {node}", stdin=private + "\n").strip()
        keys.write_new(pub, public + "\n", 0o644)
    return private, _check(pub)


def ensure(root: Path, nodes: list[str]) -> None:
    """The nodes' WireGuard keys. Not their Rosenpass key pairs: those are made when a Rosenpass
    profile is rendered, for the nodes it renders (wireguard/overlay.py render, wireguard/rosenpass.py ensure), since a
    McEliece key pair per endpoint through the tools image took minutes of every `make keys`."""
    if shutil.which("wg") is None:
        raise keys.KeysError(f"`wg` not found (needed for the WireGuard keys of `make keys`): {host_tools.install_hint('wg')}")
    for node in nodes:
        wg_keys(root, node)
