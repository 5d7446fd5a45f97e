"""Key material for the overlays and the subscribers, generated into $STATE/keys/.

Layout (docs/contracts.md, "State and secrets"):

    keys/ca/ca.crt, ca.key                  testbed CA, ECDSA P-256
    keys/ca/ca-rsa.crt, ca-rsa.key          testbed CA, RSA-2048 (RSA TLS profiles)
    keys/nodes/<node>/{ecdsa,rsa}.{key,crt} CN=<node>.<fqdn_domain>, SAN DNS:<fqdn> + IP:<each address>,
                                            EKU serverAuth+clientAuth, signed by the CA of the same key type
    keys/<overlay material>                 each overlay plug-in's own (ensure_keys: IPsec PSKs, WireGuard keys)
    keys/subscribers.yaml                   random 128-bit K and OPc (hex) per subscriber of stack.yaml

Endpoint nodes are the nodes of stack.yaml with an address on a plane network (the networks of
nf-configs/channels.yaml: sbi, n2, n3, n4): every Open5GS NF (scp included), the UPF and the gNB;
not mongo, provision or the UEs.

`ensure()` is idempotent: it creates what is missing and never replaces an existing key,
PSK or K/OPc; every file is written whole or not at all (temporary file, then link or rename),
and an existing key that does not parse stops it with the command that makes a new one
(`damaged`). A certificate whose names no longer match stack.yaml, or that no longer verifies
against its CA, is re-issued for the same key. Certificates are made by the openssl CLI through
tls-certs/make-ca.sh and make-cert.sh; then every overlay plug-in adds its own material.
"""
from __future__ import annotations

import logging
import os
import secrets
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from testbed import environment
from testbed import ROOT, host_tools, planes, registry, stack

log = logging.getLogger(__name__)

CERT_SCRIPTS = ROOT / "tls-certs"
KEY_TYPES = ("ecdsa", "rsa")                          # made for every endpoint by ensure()
# ML-DSA-65 (FIPS 204) is made by the overlay plug-ins that use it (ensure_type), where openssl has it (>= 3.5)
CA_PREFIX = {"ecdsa": "ca", "rsa": "ca-rsa", "mldsa65": "ca-mldsa65"}          # file stem under keys/ca/
CA_CN = {"ecdsa": "5G testbed CA (ECDSA P-256)", "rsa": "5G testbed CA (RSA-2048)",
         "mldsa65": "5G testbed CA (ML-DSA-65)"}
PLANE_NETWORKS = tuple(p.network for p in planes.load().values())   # an endpoint has an address on one


class KeysError(RuntimeError):
    """Key generation failed; the message names the file and the next step."""


def default_state_dir() -> Path:
    """$STATE (as the Makefile exports it) or .state/ in the repository."""
    return environment.state_dir()


def keys_root(state_dir: Path) -> Path:
    return Path(state_dir) / "keys"


def endpoint_nodes(values: dict[str, Any] | None = None) -> list[str]:
    """Nodes that can be an overlay endpoint, in stack.yaml order."""
    v = values or stack.load()
    return [n for n, spec in v["nodes"].items()
            if any(net in spec.get("networks", {}) for net in PLANE_NETWORKS)]


def node_dir(root: Path, node: str) -> Path:
    return Path(root) / "nodes" / node


def ca_prefix(root: Path, keytype: str) -> Path:
    return Path(root) / "ca" / CA_PREFIX[keytype]


def cert_names(node: str, values: dict[str, Any] | None = None) -> tuple[str, list[str]]:
    """(CN, subjectAltName entries) of a node's certificates."""
    v = values or stack.load()
    name = stack.fqdn(node, v)
    ips = [str(a) for a in v["nodes"][node]["networks"].values()]
    return name, [f"DNS:{name}"] + [f"IP:{ip}" for ip in ips]


# --- small file helpers -------------------------------------------------------------------

def _mkdir(path: Path) -> None:
    """Create path with mode 0700, and every missing parent with it (existing ones are left alone)."""
    if path.is_dir():
        return
    _mkdir(path.parent)
    path.mkdir(mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)


def write_new(path: Path, text: str, mode: int) -> bool:
    """Write `text` to `path` unless it exists (atomic, never replaces). True if written."""
    if path.exists():
        return False
    _mkdir(path.parent)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        try:
            os.link(tmp, path)          # fails if another process created it meanwhile
        except FileExistsError:
            return False
        return True
    finally:
        tmp.unlink(missing_ok=True)


def damaged(path: Path, why: str) -> KeysError:
    """The error for an existing key file that is unusable (a disk-full moment, a hand edit):
    never replaced silently, since results may have been made with it; the message says how to
    make a new one."""
    return KeysError(f"{path} is damaged ({why}); it is never replaced on its own: remove it and "
                     f"make a new one with `rm {path} && make keys`")


def check_pem_key(path: Path) -> None:
    """KeysError (damaged) unless an existing private key file parses (openssl pkey)."""
    if not path.exists():
        return
    res = subprocess.run(["openssl", "pkey", "-in", str(path), "-noout"], capture_output=True, text=True,
                         check=False)
    if res.returncode != 0:
        why = "empty file" if path.stat().st_size == 0 else "openssl pkey cannot read it"
        raise damaged(path, why)


def run_tool(cmd: list[str], what: str, stdin: str | None = None) -> str:
    try:
        res = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise KeysError(f"{what}: {cmd[0]} not found: {host_tools.install_hint(cmd[0])}") from None
    if res.returncode != 0:
        raise KeysError(f"{what} failed ({' '.join(cmd)}): {res.stderr.strip() or res.stdout.strip()}")
    return res.stdout


# --- certificates ---------------------------------------------------------------------------

def _cert_matches(crt: Path, ca_crt: Path, cn: str, san: list[str]) -> bool:
    """True if crt verifies against ca_crt and carries exactly this CN and these SANs."""
    verify = subprocess.run(["openssl", "verify", "-CAfile", str(ca_crt), str(crt)],
                            capture_output=True, text=True, check=False)
    if verify.returncode != 0:
        return False
    out = run_tool(["openssl", "x509", "-in", str(crt), "-noout", "-subject", "-nameopt", "RFC2253",
                "-ext", "subjectAltName"], f"reading {crt}")
    lines = [ln.strip() for ln in out.splitlines()]
    subject = next((ln for ln in lines if ln.startswith("subject=")), "")
    have_san = {s.strip().replace("IP Address:", "IP:")
                for ln in lines if ln.startswith(("DNS:", "IP Address:")) for s in ln.split(",")}
    return subject == f"subject=CN={cn}" and have_san == set(san)


def _ensure_ca(root: Path, keytype: str) -> None:
    prefix = ca_prefix(root, keytype)
    _mkdir(prefix.parent)
    check_pem_key(prefix.with_suffix(".key"))
    run_tool([str(CERT_SCRIPTS / "make-ca.sh"), keytype, str(prefix), CA_CN[keytype]],
         f"creating the {keytype} CA {prefix}.crt")


def _ensure_node_cert(root: Path, node: str, keytype: str, values: dict[str, Any]) -> None:
    ndir = node_dir(root, node)
    _mkdir(ndir)
    prefix = ndir / keytype
    check_pem_key(prefix.with_suffix(".key"))
    ca = ca_prefix(root, keytype)
    cn, san = cert_names(node, values)
    crt = prefix.with_suffix(".crt")
    if crt.exists() and not _cert_matches(crt, ca.with_suffix(".crt"), cn, san):
        log.warning("re-issuing %s (names or CA changed since it was made; the key is kept)", crt)
        crt.unlink()
    run_tool([str(CERT_SCRIPTS / "make-cert.sh"), keytype, str(ca), str(prefix), cn, ",".join(san)],
         f"creating the {keytype} certificate of {node} ({crt})")


def ensure_type(root: Path, keytype: str, nodes: list[str], values: dict[str, Any]) -> None:
    """The CA and every node's certificate of one key type (`make keys`; an overlay plug-in's
    ensure_keys for one more). The nodes' keys side by side: each its own files, and a key
    generation (RSA above all) is seconds of one CPU on an emulated one."""
    _ensure_ca(root, keytype)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(lambda node: _ensure_node_cert(root, node, keytype, values), nodes))


# --- subscribers ------------------------------------------------------------------------

def _ensure_subscribers(root: Path, values: dict[str, Any]) -> None:
    """Add K/OPc for every subscriber of stack.yaml; keep existing K/OPc, refresh the rest."""
    path = Path(root) / "subscribers.yaml"
    old: dict[str, Any] = {}
    if path.exists():
        old = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    new: dict[str, Any] = {}
    for name, spec in values["subscribers"].items():
        prev = old.get(name) or {}
        entry = dict(spec)
        entry["k"] = prev.get("k") or secrets.token_hex(16)
        entry["opc"] = prev.get("opc") or secrets.token_hex(16)
        new[name] = entry
    for name, prev in old.items():      # never drop a secret someone may have provisioned
        new.setdefault(name, prev)
    if new == old:
        return
    text = ("# Generated by `make keys` (testbed/keys.py): SIM secrets, never commit.\n"
            + yaml.safe_dump(new, sort_keys=False))
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def subscribers(root: Path) -> dict[str, Any]:
    """{ue1: {imsi, k, opc}, ue2: ..., scale: {imsi_first, count, k, opc}}."""
    path = Path(root) / "subscribers.yaml"
    if not path.exists():
        raise KeysError(f"{path} does not exist: run `make keys`")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


# --- the whole set --------------------------------------------------------------------------

def ensure(state_dir: Path | None = None, values: dict[str, Any] | None = None) -> Path:
    """Create every missing key, certificate, PSK and secret under state_dir/keys; return that root."""
    v = values or stack.load()
    if shutil.which("openssl") is None:
        raise KeysError(f"`openssl` not found (needed for `make keys`): {host_tools.install_hint('openssl')}")
    root = keys_root(state_dir if state_dir is not None else default_state_dir())
    _mkdir(root)
    nodes = endpoint_nodes(v)
    for keytype in KEY_TYPES:
        ensure_type(root, keytype, nodes, v)
    for overlay in registry.overlays():         # each overlay's own material (PSKs, WireGuard keys)
        overlay.ensure_keys(root, nodes, v)
    _ensure_subscribers(root, v)
    log.info("keys ready under %s (%d endpoint nodes)", root, len(nodes))
    return root


def files(root: Path) -> dict[str, tuple[int, int]]:
    """{relative path: (mtime_ns, mode)} of every file under root (for idempotence checks)."""
    root = Path(root)
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_mode & 0o7777)
            for p in sorted(root.rglob("*")) if p.is_file()}
