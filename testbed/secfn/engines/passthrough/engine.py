"""The NFQUEUE pass-through (testbed/secfn/engines/passthrough/nfq_accept.c): accepts every queued packet,
so a run with it measures the queue's own cost (kernel -> userspace -> verdict) without any
inspection. Inline only; it loads no rules and raises no alerts."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from testbed import host_tools
from testbed.secfn import Secfn, SecfnError
from testbed.secfn.engines import Counters, Launch

PROGRAM = "nfq-accept"
SOURCE = Path(__file__).with_name("nfq_accept.c")
OUT = "passthrough.out"          # entrypoint.sh: <LOG_DIR>/<engine>.out


def check(sf: Secfn) -> str | None:
    if sf.queues != 1:
        return f"QUEUES={sf.queues}: the pass-through serves one queue; use IDS=suricata or IDS=snort for more"
    return None


def render(sf: Secfn, cfg_dir: Path, *, config_at: Path, log_at: Path, iface: str, home_net: str,
           program: str = PROGRAM) -> Launch:
    problem = check(sf)
    if problem:
        raise SecfnError(problem)
    argv = [program, str(sf.queue_num), str(sf.queue_maxlen), "1" if sf.fail_open else "0"]
    return Launch(argv, OUT, "nfq-accept: serving queue")


def counters(log_dir: Path) -> Counters:
    text = (log_dir / OUT).read_text(errors="replace") if (log_dir / OUT).is_file() else ""
    got = re.search(r"nfq-accept: packets=(\d+)", text)
    n = int(got.group(1)) if got else 0
    return Counters("passthrough", n, {}, blocked=0 if got else None, passed=n if got else None)


def build(out_dir: Path) -> Path:
    """Compile the program (gcc + libnetfilter-queue) once per source change; returns its path."""
    binary = Path(out_dir) / PROGRAM
    if binary.is_file() and binary.stat().st_mtime >= SOURCE.stat().st_mtime:
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    if shutil.which("gcc") is None:
        raise SecfnError(f"gcc not found: IDS=passthrough is compiled from {SOURCE.name}; {host_tools.install_hint('gcc')}")
    res = subprocess.run(["gcc", "-O2", "-Wall", "-o", str(binary), str(SOURCE), "-lnetfilter_queue"],
                         capture_output=True, text=True, check=False, timeout=120)
    if res.returncode != 0:
        raise SecfnError(f"compiling {SOURCE.name} failed (needs libnetfilter-queue-dev): {res.stderr.strip()[-400:]}")
    return binary
