"""Suricata's configuration for the UPF security function, rendered from the catalogue
(testbed/secfn): passive (AF_PACKET on the UE-side interface) or inline (NFQUEUE). Everything it
writes (EVE JSON alerts, stats, its log) goes into one output folder, the run directory."""
from __future__ import annotations

from pathlib import Path

import yaml

from testbed.secfn import Secfn, rules

RULE_FILE = "testbed-secfn.rules"
# The decoder/stream rules Debian's suricata package ships (/etc/suricata/rules): they make the
# engine do the protocol checks a real deployment does, beside the seed's rules.
SHIPPED_RULES = ("decoder-events.rules", "stream-events.rules")
SHIPPED_DIR = Path("/etc/suricata/rules")


def render(sf: Secfn, out_dir: Path, log_dir: Path, ue_iface: str, home_net: str) -> Path:
    """Write suricata.yaml + the rule file into out_dir; returns the yaml's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / RULE_FILE).write_text(rules.rules_text(sf.mode == "inline"), encoding="utf-8")
    shipped = [str(SHIPPED_DIR / r) for r in SHIPPED_RULES if (SHIPPED_DIR / r).is_file()]
    cfg = {
        "vars": {"address-groups": {"HOME_NET": f"[{home_net}]", "EXTERNAL_NET": "!$HOME_NET"},
                 "port-groups": {"HTTP_PORTS": "80"}},
        "default-log-dir": str(log_dir),
        "default-rule-path": str(out_dir),
        "rule-files": [str(out_dir / RULE_FILE), *shipped],
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
                                          "filename": str(log_dir / "suricata.log")}}]},
        "stats": {"enabled": True, "interval": 1},
        "af-packet": [{"interface": ue_iface, "cluster-id": 99, "cluster-type": "cluster_flow",
                       "defrag": True}],
        "nfq": {"mode": "accept", "fail-open": sf.fail_open},
        "host-mode": "router",
        "run-as": {},
        "unix-command": {"enabled": False},
        "detect": {"profile": "medium"},
    }
    path = out_dir / "suricata.yaml"
    path.write_text("%YAML 1.1\n---\n" + yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def command(sf: Secfn, cfg: Path, ue_iface: str) -> list[str]:
    """The engine's command line: -q QUEUE inline, --af-packet=IFACE passive."""
    base = ["suricata", "-c", str(cfg), "--pidfile", str(cfg.parent / "suricata.pid"), "-k", "none"]
    if sf.mode == "inline":
        return base + ["-q", str(sf.queue_num)]
    return base + [f"--af-packet={ue_iface}"]
