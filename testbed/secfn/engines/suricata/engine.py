"""Suricata (Debian package) as the security-function engine: passive on the UE-side interface
(AF_PACKET) or inline behind NFQUEUE. Everything it writes (EVE JSON alerts, stats, its log)
goes into the output folder, the run directory."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from testbed.secfn import Secfn, SecfnError, rules
from testbed.secfn.engines import Counters, Launch, json_lines

PROGRAM = "suricata"
RULE_FILE = "testbed-secfn.rules"
# The decoder/stream rules Debian's suricata package ships (/etc/suricata/rules): they make the
# engine do the protocol checks a real deployment does, beside the seed's rules.
SHIPPED_RULES = ("decoder-events.rules", "stream-events.rules")
SHIPPED_DIR = Path("/etc/suricata/rules")
# Suricata has no option for the queue length: the kernel's default stands
KERNEL_QUEUE_MAXLEN = 1024


def config(sf: Secfn, *, config_at: Path, log_at: Path, iface: str, home_net: str) -> dict[str, Any]:
    return {
        "vars": {"address-groups": {"HOME_NET": f"[{home_net}]", "EXTERNAL_NET": "!$HOME_NET"},
                 "port-groups": {"HTTP_PORTS": "80"}},
        "default-log-dir": str(log_at),
        "default-rule-path": str(config_at),
        "rule-files": [str(config_at / RULE_FILE), *(str(SHIPPED_DIR / r) for r in SHIPPED_RULES)],
        "classification-file": "/etc/suricata/classification.config",
        "reference-config-file": "/etc/suricata/reference.config",
        "outputs": [
            {"eve-log": {"enabled": True, "filetype": "regular", "filename": "eve.json",
                         "types": [{"alert": {"tagged-packets": False}}, {"drop": {"alerts": True}}]}},
            {"stats": {"enabled": True, "filename": "stats.log", "append": False, "totals": True,
                       "threads": False}},
        ],
        "logging": {"default-log-level": "notice",
                    "outputs": [{"file": {"enabled": True, "level": "info",
                                          "filename": str(log_at / "suricata.log")}}]},
        "stats": {"enabled": True, "interval": 1},
        "af-packet": [{"interface": iface, "cluster-id": 99, "cluster-type": "cluster_flow",
                       "defrag": True}],
        "nfq": {"mode": "accept", "fail-open": sf.fail_open},
        "host-mode": "router",
        "run-as": {},
        "unix-command": {"enabled": False},
        "detect": {"profile": "medium"},
    }


def check(sf: Secfn) -> str | None:
    """What Suricata cannot honour, or None."""
    if sf.mode == "inline" and sf.queue_maxlen != KERNEL_QUEUE_MAXLEN:
        return (f"QUEUE_MAXLEN={sf.queue_maxlen}: Suricata 7 sets no queue length (the kernel's "
                f"{KERNEL_QUEUE_MAXLEN} stands); use IDS=snort or IDS=passthrough for other lengths")
    return None


def render(sf: Secfn, cfg_dir: Path, *, config_at: Path, log_at: Path, iface: str, home_net: str,
           program: str = PROGRAM) -> Launch:
    """suricata.yaml + the rule file into cfg_dir; the command line (-q QUEUE inline,
    --af-packet=IFACE passive; -k none: checksums offloaded on veth/TUN are not errors)."""
    problem = check(sf)
    if problem:
        raise SecfnError(problem)
    (cfg_dir / RULE_FILE).write_text(rules.rules_text(sf.mode == "inline", "suricata"), encoding="utf-8")
    cfg = config(sf, config_at=config_at, log_at=log_at, iface=iface, home_net=home_net)
    (cfg_dir / "suricata.yaml").write_text("%YAML 1.1\n---\n" + yaml.safe_dump(cfg, sort_keys=False),
                                           encoding="utf-8")
    argv = [program, "-c", str(config_at / "suricata.yaml"), "--pidfile", str(log_at / "suricata.pid"),
            "-k", "none"]
    if sf.mode == "inline":
        argv += [a for n in sf.queue_nums for a in ("-q", str(n))]      # one receive thread per queue
    else:
        argv.append(f"--af-packet={iface}")
    return Launch(argv, "suricata.log", "Engine started")


def _alerts(eve: Path) -> Counter[int]:
    return Counter(int(e["alert"]["signature_id"]) for e in json_lines(eve) if e.get("event_type") == "alert")


def _stats(stats: Path) -> dict[str, int]:
    """The last value of each counter in stats.log (its final block is the engine's totals)."""
    out: dict[str, int] = {}
    if stats.is_file():
        for line in stats.read_text(errors="replace").splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) == 3 and parts[2].isdigit():
                out[parts[0]] = int(parts[2])
    return out


def counters(log_dir: Path) -> Counters:
    c = _stats(log_dir / "stats.log")
    keep = {k: v for k, v in c.items() if k.startswith(("decoder.pkts", "ips.", "capture.", "detect.alert",
                                                         "flow.total"))}
    alerts: dict[int | str, int] = {sid: n for sid, n in _alerts(log_dir / "eve.json").items()}
    return Counters("suricata", c.get("decoder.pkts", 0), alerts,
                    blocked=c.get("ips.blocked"), passed=c.get("ips.accepted"),
                    capture_drops=c.get("capture.kernel_drops"), raw=keep)
