"""Rosenpass beside WireGuard (docs/overlays/wireguard.md "Rosenpass"): a post-quantum key exchange
(Classic McEliece 460896 static keys, Kyber-512 ephemeral keys) on its own UDP port whose output is
WireGuard's pre-shared key, set with `wg set <dev> peer <key> preshared-key` by the rosenpass daemon
itself, and renewed every 2 minutes (rosenpass's REKEY_AFTER_TIME: 120 s responder, 130 s initiator).

- keys: one static key pair per node (`rosenpass gen-keys` when a Rosenpass profile is rendered,
  for the nodes it renders, not in every `make keys`: the program on PATH, else the one in the
  built tools image through `docker run`), under <keys>/rosenpass/<node>.{pk,sk};
  the public key is 524,160 B;
- render: the node's secret key and its partners' public keys into the node's dir (rosenpass/);
- the capture: its messages by their type byte on RP_PORT (InitHello 0x81, RespHello 0x82,
  InitConf 0x83, EmptyData 0x84): a complete exchange per pair, the first one's InitConf before
  that pair's first WireGuard handshake initiation (the PSK was in place first); a plain WireGuard
  capture judged as the Rosenpass profile has none and is invalid.

The daemon is the crate `rosenpass` from crates.io, pinned (ROSENPASS_VERSION, read from the tools
image's Dockerfile), built with
`cargo install --locked` outside the repository (`make rosenpass`: tests and CI) or in the tools
image's build stage.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from testbed import ROOT, keys, tshark


def _pinned_version() -> str:
    """The one home of the pin: the tools image's build argument (images/tools/Dockerfile), which
    `make rosenpass` (mk/80-pq.mk) reads too."""
    for line in (ROOT / "images" / "tools" / "Dockerfile").read_text(encoding="utf-8").splitlines():
        if line.startswith("ARG ROSENPASS_VERSION="):
            return line.split("=", 1)[1].strip()
    raise RuntimeError("images/tools/Dockerfile has no ARG ROSENPASS_VERSION")


ROSENPASS_VERSION = _pinned_version()
RP_PORT = 9999                 # rosenpass's customary port; its own UDP, kept off the tunnel
MSG_TYPES = {0x81: "InitHello", 0x82: "RespHello", 0x83: "InitConf", 0x84: "EmptyData", 0x85: "DataMsg",
             0x86: "CookieReply"}
# The message sizes (UDP payload) of rosenpass 0.2.3 (src/msgs.rs): envelope type 1 + 3 reserved +
# payload + MAC 16 + cookie 16; Kyber-512 public key 800 B / ciphertext 768 B, Classic McEliece
# 460896 ciphertext 188 B (the oqs-sys 0.8 it links), AEAD tag 16, XAEAD nonce 24, biscuit 76 + 40:
# 1,092 / 1,132 / 176 / 64 B, as measured (tests/integration/test_wireguard_rosenpass_netns.py).
ENVELOPE = 1 + 3 + 16 + 16
SIZES = {"InitHello": ENVELOPE + 4 + 800 + 188 + 48 + 16, "RespHello": ENVELOPE + 8 + 768 + 188 + 16 + 116,
         "InitConf": ENVELOPE + 8 + 116 + 16, "EmptyData": ENVELOPE + 4 + 8 + 16}
# the report's analytic rows (analysis/pq.py through the plug-in)
ANALYTIC_SIZES = [("Rosenpass InitHello / RespHello", "UDP payload (Kyber-512 + McEliece 460896 ct)",
                   SIZES["InitHello"], SIZES["RespHello"]),
                  ("Rosenpass InitConf / EmptyData", "UDP payload", SIZES["InitConf"], SIZES["EmptyData"])]


def program() -> str | None:
    """The rosenpass daemon on PATH, None without it."""
    return shutil.which("rosenpass")


def _in_tools_image(keys_dir: Path) -> list[str] | None:
    """`docker run` of the built tools image's rosenpass (images/tools/Dockerfile compiles it) with
    keys_dir mounted at /keys, as the caller's user so the keys stay theirs; None without the Docker
    CLI or without that image here (nothing is pulled or built for keys)."""
    from testbed import environment, images
    docker = environment.mapping().get("DOCKER") or "docker"
    if shutil.which(docker) is None:
        return None
    ref = images.resolve()["TOOLS_IMAGE"]
    if images.docker_inspect(ref, docker) is None:
        return None
    return [docker, "run", "--rm", "--network", "none", "--user", f"{os.getuid()}:{os.getgid()}",
            "-v", f"{keys_dir.resolve()}:/keys", ref, "rosenpass"]


def generator(keys_dir: Path) -> tuple[list[str], Path] | None:
    """How `gen-keys` runs: (argv prefix, the directory as that program sees keys_dir). The program
    on PATH first; else the tools image's; None with neither."""
    exe = program()
    if exe is not None:
        return [exe], keys_dir
    in_image = _in_tools_image(keys_dir)
    return (in_image, Path("/keys")) if in_image is not None else None


def key_paths(root: Path, node: str) -> tuple[Path, Path]:
    return Path(root) / "rosenpass" / f"{node}.sk", Path(root) / "rosenpass" / f"{node}.pk"


def ensure(root: Path, nodes: list[str]) -> list[str]:
    """Missing key pairs made with `rosenpass gen-keys` (returns the nodes done); without the
    program (on PATH or in the tools image) nothing is made and the Rosenpass profile stops at
    render naming it."""
    todo = [n for n in nodes if not all(p.is_file() for p in key_paths(root, n))]
    if not todo:
        return nodes
    rp_dir = Path(root) / "rosenpass"
    how = generator(rp_dir)
    if how is None:
        return []
    rp_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    argv, seen_as = how

    def gen(node: str) -> None:
        sk, pk = key_paths(root, node)
        # names of this process alone: renders in parallel test workers may share a keys dir
        tmp_sk, tmp_pk = sk.with_suffix(f".sk.{os.getpid()}.tmp"), pk.with_suffix(f".pk.{os.getpid()}.tmp")
        res = subprocess.run([*argv, "gen-keys", "--force", "--secret-key", str(seen_as / tmp_sk.name),
                              "--public-key", str(seen_as / tmp_pk.name)],
                             capture_output=True, text=True, timeout=300, check=False)
        if res.returncode != 0 or not tmp_sk.is_file():
            raise keys.KeysError(f"rosenpass gen-keys for {node} failed ({' '.join(argv[:1])}): "
                                 f"{res.stderr.strip()[-300:]}")
        os.chmod(tmp_sk, 0o600)
        os.replace(tmp_pk, pk)
        os.replace(tmp_sk, sk)

    # one gen-keys per node, side by side (each its own files; list() re-raises the first failure)
    with ThreadPoolExecutor(max_workers=min(len(todo), os.cpu_count() or 1)) as pool:
        list(pool.map(gen, todo))
    return nodes


def render(d: Path, node: str, partners: list[str], keys_dir: Path) -> list[str]:
    """The node's rosenpass/ dir: its secret and public key, each partner's public key; returns the
    overlay.env lines."""
    sk, pk = key_paths(keys_dir, node)
    missing = [p for p in [sk, pk, *(key_paths(keys_dir, x)[1] for x in partners)] if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"no Rosenpass key {missing[0]}: the render makes them with `rosenpass` on "
                                f"PATH (`make rosenpass` builds it) or the built tools image (`make build`: "
                                f"it has rosenpass {ROSENPASS_VERSION}); neither is here")
    rp = d / "rosenpass"
    rp.mkdir(mode=0o700, exist_ok=True)
    shutil.copyfile(sk, rp / "self.sk")
    os.chmod(rp / "self.sk", 0o600)
    shutil.copyfile(pk, rp / "self.pk")
    for x in partners:
        shutil.copyfile(key_paths(keys_dir, x)[1], rp / f"{x}.pk")
    return ["WG_ROSENPASS=1", f"RP_PORT={RP_PORT}"]


# --- the capture ------------------------------------------------------------------------------

@dataclasses.dataclass
class Exchange:
    """One Rosenpass key exchange between two addresses: its messages in order of appearance."""
    initiator: str
    responder: str
    messages: list[tuple[float, str, int]] = dataclasses.field(default_factory=list)   # (time, kind, UDP payload)

    @property
    def complete(self) -> bool:
        kinds = [k for _, k, _ in self.messages]
        return all(k in kinds for k in ("InitHello", "RespHello", "InitConf"))

    @property
    def start(self) -> float:
        return self.messages[0][0]

    @property
    def pair(self) -> frozenset[str]:
        """The two addresses, either way round (as the capture rules compare pairs)."""
        return frozenset((self.initiator, self.responder))

    @property
    def keyed(self) -> float | None:
        """The first InitConf: from here the pair's key is in place at the initiator (rosenpass sets it
        as it sends InitConf) and at the responder once it has read it. Before it, neither end has
        the key; EmptyData, the responder's acknowledgement, can come much later on a busy end."""
        return next((t for t, k, _ in self.messages if k == "InitConf"), None)

    @property
    def end(self) -> float:
        """The last message of the exchange (EmptyData acknowledges InitConf; else InitConf)."""
        ends = [t for t, k, _ in self.messages if k in ("EmptyData", "InitConf")]
        return max(ends) if ends else self.messages[-1][0]


def exchanges(pcap: Path, port: int = RP_PORT) -> list[Exchange]:
    """The Rosenpass exchanges of a capture: an InitHello opens one per (initiator, responder); the
    following RespHello/InitConf/EmptyData of the same pair belong to it."""
    rows = tshark.fields(pcap, f"udp.port == {port} && data", ["frame.time_epoch", "ip.src", "ip.dst",
                                                                 "udp.length", "data.data"],
                         extra=["-d", f"udp.port=={port},data"])
    out: list[Exchange] = []
    open_: dict[frozenset[str], Exchange] = {}
    for t, src, dst, udplen, data in (r + [""] * (5 - len(r)) for r in rows):
        kind = MSG_TYPES.get(int(data[:2], 16) if data else -1)
        if kind is None:
            continue
        pair = frozenset((src, dst))
        if kind == "InitHello":
            open_[pair] = Exchange(src, dst)
            out.append(open_[pair])
        ex = open_.get(pair)
        if ex is not None:
            ex.messages.append((float(t), kind, int(udplen) - 8))
    return out


def capture_problems(pcap: Path, wg_port: int, pairs: int) -> tuple[str, list[str]]:
    """(details, problems): every pair with a WireGuard initiation had a complete Rosenpass exchange
    whose InitConf (Exchange.keyed) came before the pair's first initiation; at least one exchange
    at all. A WireGuard handshake after InitConf but before the responder has read it cannot make a
    session without the key: the ends' pre-shared keys differ and it fails."""
    exs = exchanges(pcap)
    done = [e for e in exs if e.complete]
    first_wg: dict[frozenset[str], float] = {}
    for t, src, dst in tshark.fields(pcap, "wg.type == 1", ["frame.time_epoch", "ip.src", "ip.dst"],
                                     extra=["-d", f"udp.port=={wg_port},wg"]):
        first_wg.setdefault(frozenset((src, dst)), float(t))
    problems: list[str] = []
    if not done:
        problems.append(f"no complete Rosenpass exchange (InitHello, RespHello, InitConf on UDP {RP_PORT})")
    for pair, first in sorted(first_wg.items(), key=lambda kv: kv[1]):
        before = [e for e in done if e.pair == pair and e.keyed is not None and e.keyed <= first]
        if done and not before:
            problems.append(f"WireGuard handshake between {' and '.join(sorted(pair))} before any complete "
                            "Rosenpass exchange of the pair (the PSK was not in place)")
    details = (f"; Rosenpass: {len(done)} complete exchange(s) of {len(exs)}, "
               f"{sum(len(e.messages) for e in exs)} message(s) on UDP {RP_PORT}")
    return details, problems


def records(pcap: Path) -> list[dict[str, Any]]:
    """One row per complete exchange: time InitHello to EmptyData (or InitConf), packets and bytes."""
    rows = []
    for e in exchanges(pcap):
        if not e.complete:
            continue
        row: dict[str, Any] = {"kind": "rosenpass", "start": e.start, "handshake_ms": round((e.end - e.start) * 1000, 3),
                               "packets": len(e.messages), "ip_bytes": sum(b + 28 for _, _, b in e.messages),
                               "frame_bytes": sum(b + 42 for _, _, b in e.messages), "retransmitted":
                               len(e.messages) - len({k for _, k, _ in e.messages})}
        for _, k, b in e.messages:
            row.setdefault(f"{k}_udp_bytes", b)
        rows.append(row)
    return rows
