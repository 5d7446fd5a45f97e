"""`make bench-crypto`: what the ciphers cost without the network (docs/bench-crypto.md).

Times each scheme of testbed/crypto_schemes.py over buffers of 64 B to 64 MiB, REPEATS times,
once with the CPU's AES instructions and once with them masked (OPENSSL_ia32cap, which the
OpenSSL inside `cryptography` and the `openssl` command both honour), and cross-checks with
`openssl speed`. Each AES-NI mode runs in its own worker process, because OpenSSL reads its
capability mask once, when it loads.

Small buffers are timed as a batch of calls lasting at least MIN_TIME (the clock's resolution
and the call's fixed cost would otherwise dominate); `calls` in raw.csv says how many. Raw rows
are written once; statistics are the analysis package's job (analysis/crypto.py).
"""
from __future__ import annotations

import csv
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from testbed import environment
from testbed import crypto_schemes, programs

DEFAULT_SIZES = tuple(64 * 4 ** i for i in range(11))        # 64 B .. 64 MiB
DEFAULT_REPEATS = 20
DEFAULT_MIN_TIME = 0.02                                        # seconds per timed batch
# Masks AES-NI (bit 57) and PCLMULQDQ (bit 33) of the first capability word (OpenSSL's
# OPENSSL_ia32cap documentation); both are what AES-GCM's fast path needs.
AESNI_MASK = "~0x200000200000000"
RAW_FIELDS = ("aesni", "scheme", "size", "repeat", "calls", "seconds")
SPEED_MAX_BYTES = 1 << 20
SPEED_LINE = re.compile(r"^\+F:\d+:([^:]+):(.*)$")


class BenchError(RuntimeError):
    """A benchmark parameter is wrong or a worker failed; the message says which and why."""


def aesni_available() -> bool | None:
    """True/False from /proc/cpuinfo on x86; None where the question does not apply."""
    if platform.machine() not in ("x86_64", "i686", "AMD64"):
        return None
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    flags = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return " aes " in f" {flags.split(':', 1)[-1]} "


def modes_for(requested: str, available: bool | None) -> list[str]:
    """AES-NI modes to run: "on" (the CPU as it is) and, where masking means something, "masked"."""
    if requested not in ("both", "on", "masked"):
        raise BenchError(f"AESNI={requested!r}; valid: both, on, masked")
    if requested == "on":
        return ["on"]
    if not available:
        if requested == "masked":
            raise BenchError("AESNI=masked: this CPU has no AES-NI to mask (see /proc/cpuinfo)")
        return ["on"]
    return ["on", "masked"] if requested == "both" else ["masked"]


def env_for(mode: str) -> dict[str, str]:
    env = dict(environment.mapping())
    env.pop("OPENSSL_ia32cap", None)
    if mode == "masked":
        env["OPENSSL_ia32cap"] = AESNI_MASK
    return env


# ----------------------------------------------------------------------- the timed worker

def time_scheme(scheme: crypto_schemes.Scheme, size: int, repeats: int,
                min_time: float) -> list[tuple[int, float]]:
    """[(calls, seconds)] per repeat; calls is fixed after a calibration batch. The output
    buffer is allocated once, before the clock starts (testbed/crypto_schemes.py Op): every
    size times the cipher, not the allocator."""
    op = scheme.make(os.urandom(scheme.key_bytes))
    data = os.urandom(size)
    out = bytearray(crypto_schemes.out_bytes(size))
    if op(data, out) <= 0:               # warm-up (the output's pages touched), and a sanity check
        raise BenchError(f"{scheme.id}: empty output for {size} B")
    calls = 1
    while True:
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            op(data, out)
        took = (time.perf_counter_ns() - t0) / 1e9
        if took >= min_time or calls >= 1 << 20:
            break
        calls = max(calls * 2, int(calls * min_time / max(took, 1e-9)) + 1)
    rows = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            op(data, out)
        rows.append((calls, (time.perf_counter_ns() - t0) / 1e9))
    return rows


def worker(mode: str, schemes: list[str], sizes: list[int], repeats: int, min_time: float,
           out: Path) -> None:
    """Runs in a process whose OpenSSL was loaded with `mode`'s capability mask."""
    from cryptography.hazmat.backends.openssl import backend
    with out.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        for scheme in crypto_schemes.select(schemes):
            for size in sizes:
                for i, (calls, seconds) in enumerate(time_scheme(scheme, size, repeats, min_time)):
                    w.writerow((mode, scheme.id, size, i, calls, f"{seconds:.9f}"))
                fh.flush()
    info = {"openssl": backend.openssl_version_text(),
            "ia32cap": environment.get("OPENSSL_ia32cap") or None}
    print(json.dumps(info))              # the parent reads it into the manifest


# ----------------------------------------------------------------------- openssl speed

def speed_command(scheme: crypto_schemes.Scheme, size: int, seconds: int) -> list[str] | None:
    if scheme.speed_args is None:
        return None
    return ["openssl", "speed", "-mr", "-seconds", str(seconds), "-bytes", str(size),
            *scheme.speed_args]


def speed_size(sizes: list[int]) -> int:
    """The buffer size of the cross-check: the largest benchmarked size up to 1 MiB."""
    small = [s for s in sizes if s <= SPEED_MAX_BYTES]
    return max(small) if small else min(sizes)


def parse_speed(text: str) -> dict[str, float]:
    """{algorithm name: bytes/s} from `openssl speed -mr` output (the +F: line)."""
    out = {}
    for line in text.splitlines():
        m = SPEED_LINE.match(line.strip())
        if m:
            vals = [float(v) for v in m.group(2).split(":") if v]
            if vals:
                out[m.group(1)] = vals[-1]
    return out


# ----------------------------------------------------------------------- the run

def _versions() -> dict[str, Any]:
    import cryptography
    from cryptography.hazmat.backends.openssl import backend
    try:
        cli = subprocess.run(["openssl", "version"], capture_output=True, text=True, timeout=10,
                             check=False).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        cli = None
    return {"python": platform.python_version(), "cryptography": cryptography.__version__,
            "cryptography_openssl": backend.openssl_version_text(), "openssl_cli": cli}


def _check(sizes: list[int], repeats: int, min_time: float) -> None:
    if not sizes or any(s <= 0 for s in sizes):
        raise BenchError(f"SIZES must be positive byte counts, got {sizes}")
    if repeats < 2:
        raise BenchError(f"REPEATS must be at least 2 (an interval needs two), got {repeats}")
    if min_time <= 0:
        raise BenchError(f"MIN_TIME must be > 0 seconds, got {min_time}")


def _start(results: Path, campaign: str, parameters: dict[str, Any], modes: list[str],
           available: bool | None) -> tuple[Path, dict[str, Any]]:
    """The run directory and its manifest in state "running"."""
    from testbed import manifest as mf
    parent = Path(results) / (campaign or "adhoc") / "crypto" / "ciphers"
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BenchError(f"cannot create {parent}: {exc.strerror}; choose RESULTS=<writable dir>") from exc
    run_id = mf.new_run_id()
    run_dir = parent / run_id
    run_dir.mkdir()
    commit, dirty = programs.git_revision()
    manifest: dict[str, Any] = {
        "schema_version": 1, "experiment": "crypto", "profile": "ciphers", "plane": None,
        "protocol": None, "campaign": campaign or "adhoc", "run": run_id, "state": "running",
        "reason": None, "valid": None, "validity": None, "datapath": "cpu", "parameters": parameters,
        "aesni": {"available": available, "modes": modes, "mask": AESNI_MASK},
        "host": mf.host_facts(), "versions": {**_versions(), "testbed_commit": commit,
                                              "testbed_dirty": dirty},
        "started": mf.utcnow(), "finished": None, "commands": [], "files": [], "events": [],
    }
    mf.write(run_dir, manifest)
    return run_dir, manifest


def _measure(run_dir: Path, manifest: dict[str, Any], chosen: list[crypto_schemes.Scheme], sizes: list[int],
             repeats: int, min_time: float, speed_seconds: int) -> list[str]:
    """One worker per AES-NI mode (and `openssl speed` when asked); returns the problems."""
    problems: list[str] = []
    for mode in manifest["aesni"]["modes"]:
        raw = run_dir / f"raw-{mode}.csv"
        cmd = [sys.executable, "-m", "testbed.crypto_bench", "--worker", mode, "--out", str(raw),
               "--repeats", str(repeats), "--min-time", str(min_time),
               "--sizes", ",".join(map(str, sizes)), "--schemes", ",".join(s.id for s in chosen)]
        manifest["commands"].append(("OPENSSL_ia32cap=" + AESNI_MASK + " " if mode == "masked" else "")
                                    + " ".join(cmd))
        res = subprocess.run(cmd, env=env_for(mode), capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise BenchError(f"worker ({mode}) failed: {res.stderr.strip()[-500:]}")
        info = json.loads(res.stdout.strip().splitlines()[-1])
        manifest["files"].append({"path": raw.name, "kind": "crypto", "attrs": {"aesni": mode, **info}})
        if speed_seconds > 0:
            _speed(run_dir, manifest, chosen, sizes, speed_seconds, mode, problems)
    manifest["aesni"]["mask_effective"] = _mask_effective(run_dir, manifest["aesni"]["modes"])
    if manifest["aesni"]["mask_effective"] is False:
        problems.append("the AES-NI mask changed nothing (AES-128-GCM as fast masked as not): "
                        "the 'masked' rows are not a no-AES-NI measurement")
    return problems


def run(results: Path, campaign: str, schemes: list[str], sizes: list[int], repeats: int,
        min_time: float, aesni: str, speed_seconds: int) -> Path:
    """One benchmark run directory `results/<campaign>/crypto/ciphers/<run>/`; returns it."""
    from testbed import manifest as mf
    chosen = crypto_schemes.select(schemes)
    _check(sizes, repeats, min_time)
    available = aesni_available()
    parameters = {"schemes": [s.id for s in chosen], "sizes": sizes, "repeats": repeats,
                  "min_time_s": min_time, "aesni": aesni, "speed_seconds": speed_seconds}
    run_dir, manifest = _start(results, campaign, parameters, modes_for(aesni, available), available)
    try:
        problems = _measure(run_dir, manifest, chosen, sizes, repeats, min_time, speed_seconds)
        manifest["state"] = "complete"
        manifest["valid"] = not problems
        manifest["validity"] = {"details": "; ".join(problems) or
                                "every scheme produced output; AES-NI mask checked"}
    except KeyboardInterrupt:
        manifest["state"], manifest["valid"] = "interrupted", False
        manifest["validity"] = {"details": "interrupted"}
        raise
    except BenchError as exc:
        manifest["state"], manifest["valid"], manifest["reason"] = "failed", False, str(exc)
        manifest["validity"] = {"details": str(exc)}
        raise
    finally:
        manifest["finished"] = mf.utcnow()
        mf.write(run_dir, manifest)
    return run_dir


def _speed(run_dir: Path, manifest: dict[str, Any], chosen: list[crypto_schemes.Scheme],
           sizes: list[int], seconds: int, mode: str, problems: list[str]) -> None:
    size = speed_size(sizes)
    path = run_dir / f"openssl-speed-{mode}.txt"
    with path.open("w", encoding="utf-8") as fh:
        for scheme in chosen:
            cmd = speed_command(scheme, size, seconds)
            if cmd is None:
                continue
            manifest["commands"].append(("OPENSSL_ia32cap=" + AESNI_MASK + " " if mode == "masked" else "")
                                        + " ".join(cmd))
            try:
                res = subprocess.run(cmd, env=env_for(mode), capture_output=True, text=True,
                                     timeout=60 + 10 * seconds, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                problems.append(f"openssl speed for {scheme.id} ({mode}): {exc}")
                continue
            fh.write(f"# scheme={scheme.id} aesni={mode} bytes={size}\n{res.stdout}")
    manifest["files"].append({"path": path.name, "kind": "openssl-speed",
                              "attrs": {"aesni": mode, "bytes": size}})


def _mask_effective(run_dir: Path, modes: list[str]) -> bool | None:
    if modes != ["on", "masked"]:
        return None
    rate = {}
    for mode in modes:
        with (run_dir / f"raw-{mode}.csv").open(encoding="utf-8") as fh:
            rows = [r for r in csv.reader(fh) if r[1] == "aes128gcm16"]
        if not rows:
            return None
        size = max(int(r[2]) for r in rows)
        big = [r for r in rows if int(r[2]) == size]
        rate[mode] = sum(int(r[2]) * int(r[4]) / float(r[5]) for r in big) / len(big)
    return rate["masked"] < 0.7 * rate["on"]


def _main(argv: list[str] | None = None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="python -m testbed.crypto_bench",
                                description="the timed worker of `make bench-crypto` (internal)")
    p.add_argument("--worker", required=True, choices=("on", "masked"))
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--repeats", type=int, required=True)
    p.add_argument("--min-time", type=float, required=True)
    p.add_argument("--sizes", required=True)
    p.add_argument("--schemes", required=True)
    a = p.parse_args(argv)
    worker(a.worker, a.schemes.split(","), [int(s) for s in a.sizes.split(",")], a.repeats,
           a.min_time, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
