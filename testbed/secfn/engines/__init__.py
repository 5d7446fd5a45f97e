"""The security-function engines (IDS=...) and the one engine directory they run from.

An engine is a plug-in (testbed/contract.py EnginePlugin, a folder under this one, one line in
testbed/registry.py) plus its line in profiles.yaml (`secfn.engines`: its modes); nothing else
names it. `render_dir` writes one directory that `testbed/secfn/entrypoint.sh` runs, identically
in the stack's engine container and in the namespace lab: `engine.env` (engine, mode, queue,
where its output goes and which line says it is ready) and `engine.argv` (its command, one
argument a line), beside the engine's configuration.
"""
from __future__ import annotations

import ipaddress
import json
import shlex
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testbed.secfn import Secfn, SecfnError

if TYPE_CHECKING:
    from testbed.contract import EnginePlugin

ENV_FILE = "engine.env"
ARGV_FILE = "engine.argv"
READY_NAME = "secfn-ready"        # written by entrypoint.sh when the engine serves traffic
PID_FILE = "engine.pid"           # entrypoint.sh: the engine's pid, in the output folder
QUEUE_FILE = "nfqueue.txt"        # /proc/net/netfilter/nfnetlink_queue before the engine stops
FORWARD_FILE = "forward-counters.txt"


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    ready_file: str               # file in the output folder whose text says "ready"...
    ready_line: str               # ...once it holds this line
    library_path: str = ""        # LD_LIBRARY_PATH for an engine installed outside the system


@dataclass
class Counters:
    engine: str
    inspected: int                # packets the engine analysed
    alerts_per_sid: dict[int | str, int] = field(default_factory=dict)   # sid, or "gid:sid" (built-in rules)
    blocked: int | None = None    # inline: packets it gave a drop verdict
    passed: int | None = None     # inline: packets it let through
    capture_drops: int | None = None   # packets the capture/queue lost before the engine (its own count)
    raw: dict[str, Any] = field(default_factory=dict)   # the engine's own names, for the manifest

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["alerts_per_sid"] = {str(k): v for k, v in sorted(self.alerts_per_sid.items(), key=lambda kv: str(kv[0]))}
        d["alerts"] = sum(self.alerts_per_sid.values())
        return d


def json_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a one-object-a-line file (EVE JSON, alert_json); a cut last line or
    other noise is skipped, a missing file gives nothing."""
    if not Path(path).is_file():
        return
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


def plugin(engine: str) -> EnginePlugin:
    from testbed import registry
    try:
        return registry.engine(engine)
    except registry.UnknownPlugin as exc:
        raise SecfnError(f"IDS={engine}: {exc}") from None


def render_dir(sf: Secfn, out_dir: Path, *, log_at: Path, iface: str, ue_subnet: str, home_net: str,
               iptables: str = "iptables", config_at: Path | None = None, program: str | None = None,
               library_path: str = "") -> Path:
    """Write the engine directory for entrypoint.sh; returns out_dir."""
    if sf.engine is None or sf.mode is None:
        raise SecfnError(f"SECFN={sf.function} runs no engine: nothing to render")
    mod = plugin(sf.engine)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    config_at = Path(config_at) if config_at is not None else out_dir.resolve()
    launch: Launch = mod.render(sf, out_dir, config_at=config_at, log_at=Path(log_at), iface=iface,
                                home_net=home_net, program=program or mod.program)
    env = {
        "ENGINE": sf.engine, "MODE": sf.mode, "QUEUE_NUM": str(sf.queue_num), "QUEUES": str(sf.queues),
        "FAIL_OPEN": "1" if sf.fail_open else "0", "UE_SUBNET": ue_subnet, "UE_IFACE": iface,
        "LOG_DIR": str(log_at), "READY_FILE": str(Path(log_at) / launch.ready_file),
        "READY_LINE": launch.ready_line, "IPTABLES": iptables,
        "ENGINE_LIBRARY_PATH": library_path or launch.library_path,
        # the last address of the UE subnet: no UE has it (entrypoint.sh wakes a passive engine with it)
        "WAKE_ADDR": str(ipaddress.ip_network(ue_subnet).broadcast_address - 1),
    }
    (out_dir / ENV_FILE).write_text("# rendered by testbed/secfn/engines (docs/secfn.md)\n"
                                    + "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items()),
                                    encoding="utf-8")
    if any("\n" in a for a in launch.argv):
        raise SecfnError(f"{sf.engine}: an argument spans lines: {launch.argv}")
    (out_dir / ARGV_FILE).write_text("".join(f"{a}\n" for a in launch.argv), encoding="utf-8")
    (out_dir / "secfn.json").write_text(json.dumps(sf.to_dict(), indent=1) + "\n", encoding="utf-8")
    return out_dir


def counters(engine: str, log_dir: Path) -> Counters:
    return plugin(engine).counters(Path(log_dir))


def queue_stats(log_dir: Path, queue_nums: list[int]) -> dict[str, Any] | None:
    """The queues' lines of /proc/net/netfilter/nfnetlink_queue as entrypoint.sh saved them,
    summed over the queues: packets waiting, dropped by the kernel because a queue was full,
    dropped because the netlink socket's buffer was full, and the last packet ids (= packets
    queued so far); `per_queue` keeps each queue's line."""
    f = Path(log_dir) / QUEUE_FILE
    if not f.is_file():
        return None
    per: dict[str, dict[str, int]] = {}
    for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
        p = line.split()
        if len(p) >= 8 and p[0].isdigit() and int(p[0]) in queue_nums:
            per[p[0]] = {"queue_total": int(p[2]), "queue_dropped": int(p[5]), "user_dropped": int(p[6]),
                         "id_sequence": int(p[7])}
    if not per:
        return None
    out: dict[str, Any] = {k: sum(q[k] for q in per.values()) for k in next(iter(per.values()))}
    if len(queue_nums) > 1:
        out["per_queue"] = per
    return out
