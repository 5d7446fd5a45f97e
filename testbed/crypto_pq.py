"""The public-key part of `make bench-crypto` (docs/bench-crypto.md "Key exchange and signatures"):
operations per second of ML-KEM-512/768/1024 (key generation, encapsulation, decapsulation), X25519
and P-256 key agreement, ML-DSA-44/65/87 and ECDSA P-256 (key generation, sign, verify).

Two sources, each a row of its own:
- `openssl speed` of an OpenSSL >= 3.5 (`--openssl`: a command, e.g. the host's openssl or
  Debian 13's run by tls/openssl.sh with TLS_ROOT: the library the TLS images use), one process per
  algorithm and repeat, its machine-readable (-mr) result lines; CPU time (openssl's default divisor);
- the Python `cryptography` package (its own OpenSSL), each operation timed in calibrated batches
  (at least MIN_TIME of CPU time per batch) as the cipher benchmark does; it has no ML-KEM-512.
Intervals are 99 % t intervals over the repeats (one process: they bound timing noise on this host).

Output: results/<campaign>/crypto/pq/<run>/{pq-raw.csv, openssl-speed-pq.txt, manifest.json}.
"""
from __future__ import annotations

import csv
import re
import shlex
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testbed import programs

# id -> (label, openssl speed algorithm, kind, classical)
SCHEMES: dict[str, tuple[str, str, str, bool]] = {
    "mlkem512": ("ML-KEM-512", "ML-KEM-512", "kem", False),
    "mlkem768": ("ML-KEM-768", "ML-KEM-768", "kem", False),
    "mlkem1024": ("ML-KEM-1024", "ML-KEM-1024", "kem", False),
    "x25519": ("X25519", "ecdhx25519", "ecdh", True),
    "p256": ("ECDH P-256", "ecdhp256", "ecdh", True),
    "mldsa44": ("ML-DSA-44", "ML-DSA-44", "sig", False),
    "mldsa65": ("ML-DSA-65", "ML-DSA-65", "sig", False),
    "mldsa87": ("ML-DSA-87", "ML-DSA-87", "sig", False),
    "ecdsap256": ("ECDSA P-256", "ecdsap256", "sig", True),
}
OPERATIONS = {"kem": ("keygen", "encaps", "decaps"), "ecdh": ("derive",), "sig": ("keygen", "sign", "verify")}
DEFAULT_REPEATS = 5
DEFAULT_SECONDS = 1
MIN_TIME = 0.05
# `openssl speed -mr` result lines (OpenSSL 3.5): +F5 ECDH (index:bits:ops/s:s per op), +F9 KEM
# (index:keygen/s:encaps/s:decaps/s), +F10 other signatures (index:keygen/s:sign/s:verify/s), +F4
# ECDSA (index:bits:sign/s:verify/s)
_F = re.compile(r"^\+F(\d+):(.*)$", re.M)


class PqBenchError(RuntimeError):
    """The benchmark cannot run; the message says why."""


def parse_speed(kind: str, text: str) -> dict[str, float]:
    """{operation: ops/s} from one algorithm's `openssl speed -mr` output."""
    for num, rest in _F.findall(text):
        cells = rest.split(":")
        if kind == "kem" and num == "9":
            return dict(zip(OPERATIONS["kem"], map(float, cells[1:4])))
        if kind == "sig" and num == "10":
            return dict(zip(OPERATIONS["sig"], map(float, cells[1:4])))
        if kind == "ecdh" and num == "5":
            return {"derive": float(cells[2])}
        if kind == "sig" and num == "4":          # ECDSA: sign/s, verify/s
            return {"sign": float(cells[2]), "verify": float(cells[3])}
    raise PqBenchError(f"no openssl speed result of kind {kind} in: {text[-300:]}")


def openssl_version(openssl: list[str]) -> str | None:
    try:
        out = subprocess.run([*openssl, "version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return None
    return out.stdout.strip() or None


def speed_rows(openssl: list[str], repeats: int, seconds: int, log: Path) -> list[dict[str, Any]]:
    """Every scheme x repeat with `openssl speed` (one process each)."""
    rows: list[dict[str, Any]] = []
    with open(log, "w", encoding="utf-8") as fh:
        for sid, (_, algo, kind, _classical) in SCHEMES.items():
            for rep in range(repeats):
                cmd = [*openssl, "speed", "-mr", "-seconds", str(seconds), algo]
                res = subprocess.run(cmd, capture_output=True, text=True, timeout=60 + 10 * seconds, check=False)
                fh.write(f"$ {shlex.join(cmd)}\n{res.stdout}{res.stderr}\n")
                if res.returncode != 0:
                    raise PqBenchError(f"`{shlex.join(cmd)}` failed: {res.stderr.strip()[-300:]}")
                rows += [{"source": "openssl-speed", "scheme": sid, "operation": op, "repeat": rep, "ops_per_s": v}
                         for op, v in parse_speed(kind, res.stdout).items()]
    return rows


def _python_ops() -> dict[str, dict[str, Callable[[], Callable[[], object]]]]:
    """{scheme: {operation: factory() -> op()}} with the `cryptography` package (what it has)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, mldsa, mlkem, x25519
    msg = b"\x5a" * 64
    out: dict[str, dict[str, Callable[[], Callable[[], object]]]] = {}
    kems: tuple[tuple[str, Any], ...] = (("mlkem768", mlkem.MLKEM768PrivateKey), ("mlkem1024", mlkem.MLKEM1024PrivateKey))
    sigs: tuple[tuple[str, Any], ...] = (("mldsa44", mldsa.MLDSA44PrivateKey), ("mldsa65", mldsa.MLDSA65PrivateKey),
                                         ("mldsa87", mldsa.MLDSA87PrivateKey))
    for sid, cls in kems:
        def kem(cls: Any = cls) -> dict[str, Callable[[], Callable[[], object]]]:
            key = cls.generate()
            pub = key.public_key()
            _, ct = pub.encapsulate()
            return {"keygen": lambda: cls.generate, "encaps": lambda: pub.encapsulate,
                    "decaps": lambda: (lambda: key.decapsulate(ct))}
        out[sid] = kem()
    for sid, cls in sigs:
        def sig(cls: Any = cls) -> dict[str, Callable[[], Callable[[], object]]]:
            key = cls.generate()
            pub, s = key.public_key(), key.sign(msg)
            return {"keygen": lambda: cls.generate, "sign": lambda: (lambda: key.sign(msg)),
                    "verify": lambda: (lambda: pub.verify(s, msg))}
        out[sid] = sig()
    a, b = x25519.X25519PrivateKey.generate(), x25519.X25519PrivateKey.generate().public_key()
    out["x25519"] = {"derive": lambda: (lambda: a.exchange(b))}
    p, q = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1()).public_key()
    out["p256"] = {"derive": lambda: (lambda: p.exchange(ec.ECDH(), q))}
    sig_ = p.sign(msg, ec.ECDSA(hashes.SHA256()))
    out["ecdsap256"] = {"keygen": lambda: (lambda: ec.generate_private_key(ec.SECP256R1())),
                        "sign": lambda: (lambda: p.sign(msg, ec.ECDSA(hashes.SHA256()))),
                        "verify": lambda: (lambda: p.public_key().verify(sig_, msg, ec.ECDSA(hashes.SHA256())))}
    return out


def _time(op: Callable[[], object], min_time: float) -> float:
    """Operations per CPU second of one calibrated batch (at least min_time of this process's CPU
    time: openssl speed's divisor too, so both sources read the same on a loaded host)."""
    op()
    n = 1
    while True:
        t0 = time.process_time()
        for _ in range(n):
            op()
        dt = time.process_time() - t0
        if dt >= min_time:
            return n / dt
        n *= 2 if dt <= 0 else max(2, int(min_time / dt * 1.2) + 1)


def python_rows(repeats: int, min_time: float = MIN_TIME) -> list[dict[str, Any]]:
    rows = []
    for sid, ops in _python_ops().items():
        for op_name, factory in ops.items():
            op = factory()
            rows += [{"source": "python-cryptography", "scheme": sid, "operation": op_name, "repeat": r,
                      "ops_per_s": _time(op, min_time)} for r in range(repeats)]
    return rows


def run(results: Path, campaign: str, openssl: list[str] | None, repeats: int = DEFAULT_REPEATS,
        seconds: int = DEFAULT_SECONDS) -> Path:
    """One run directory results/<campaign>/crypto/pq/<run>/; returns it. `openssl`: the command of
    an OpenSSL >= 3.5 for the speed rows (None or an older one: those rows are left out, said why)."""
    import cryptography

    from testbed import manifest as mf
    if repeats < 2:
        raise PqBenchError(f"REPEATS must be at least 2 (an interval needs two), got {repeats}")
    run_dir = Path(results) / (campaign or "adhoc") / "crypto" / "pq" / mf.new_run_id()
    run_dir.mkdir(parents=True)
    version = openssl_version(openssl) if openssl else None
    usable = bool(version and re.search(r"OpenSSL (3\.([5-9]|\d\d)|[4-9])\.", version))
    notes = [] if usable else [f"no openssl speed rows: {shlex.join(openssl) if openssl else 'no command'} is "
                               f"{version or 'not runnable'}, ML-KEM needs OpenSSL >= 3.5 (give --openssl)"]
    commit, dirty = programs.git_revision()
    manifest: dict[str, Any] = {
        "schema_version": 1, "experiment": "crypto", "profile": "pq", "plane": None, "protocol": None,
        "campaign": campaign or "adhoc", "run": run_dir.name, "state": "running", "datapath": "cpu",
        "parameters": {"repeats": repeats, "speed_seconds": seconds, "openssl": openssl,
                       "schemes": list(SCHEMES)},
        "host": mf.host_facts(), "versions": {"openssl_speed": version, "cryptography": cryptography.__version__,
                                              "testbed_commit": commit, "testbed_dirty": dirty},
        "started": mf.utcnow(), "finished": None, "files": [], "notes": notes}
    rows = python_rows(repeats)
    if usable and openssl:
        rows += speed_rows(openssl, repeats, seconds, run_dir / "openssl-speed-pq.txt")
    with open(run_dir / "pq-raw.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["source", "scheme", "operation", "repeat", "ops_per_s"])
        w.writeheader()
        w.writerows(rows)
    manifest.update(state="complete", valid=True, finished=mf.utcnow(),
                    validity={"details": "; ".join(notes) or "every scheme measured by both sources"},
                    files=[{"path": "pq-raw.csv", "kind": "crypto", "attrs": {}}])
    mf.write(run_dir, manifest)
    return run_dir
