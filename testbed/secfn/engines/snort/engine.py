"""Snort 3 with libdaq (built from pinned upstream releases: images/snort/Dockerfile) as the
security-function engine.

- Inline: `--daq nfq -i <queue> -Q`, the queue length and fail-open as DAQ variables
  (libdaq 3 takes the queue number as the input, not as a `queue=` variable).
- Passive: `--daq pcap -i <UE-side interface>`. libdaq's afpacket module accepts Ethernet
  interfaces only and the UPF's ogstun is a TUN device; its pcap module reads the interface
  through libpcap, itself an AF_PACKET socket, and takes any link type.
- The seed's rules rendered from the same data as Suricata's (testbed/secfn/rules.py), and
  Snort's built-in decoder/stream rules (`enable_builtin_rules`) as Suricata loads Debian's
  decoder/stream event rules.
- Alerts as alert_json (`<log dir>/alert_json.txt`, one JSON object a line); the counters are
  the statistics Snort prints when it stops (SIGTERM), kept in snort.out.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from testbed.secfn import Secfn, rules
from testbed.secfn.engines import Counters, Launch, json_lines

PROGRAM = "snort"
RULE_FILE = "testbed-secfn.rules"
OUT = "snort.out"                 # entrypoint.sh: <LOG_DIR>/<engine>.out
ALERT_FILE = "alert_json.txt"
ALERT_FIELDS = "timestamp action gid sid rev msg proto src_addr src_port dst_addr dst_port"
READY_LINE = "Commencing packet processing"


def _lua_str(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def config_text(sf: Secfn, *, config_at: Path, home_net: str) -> str:
    inline = sf.mode == "inline"
    classes = ",\n".join(f"  {{ name = {_lua_str(n)}, priority = {p}, text = {_lua_str(t)} }}"
                         for n, (p, t) in rules.classifications(inline).items())
    return f"""-- Rendered by testbed/secfn/engines/snort/engine.py (docs/secfn.md). Do not edit.
HOME_NET = {_lua_str(f'[{home_net}]')}
EXTERNAL_NET = '!$HOME_NET'

classifications =
{{
{classes}
}}

ips =
{{
  enable_builtin_rules = true,
  variables = {{ nets = {{ HOME_NET = HOME_NET, EXTERNAL_NET = EXTERNAL_NET }},
                ports = {{ HTTP_PORTS = '80' }} }},
  include = {_lua_str(str(config_at / RULE_FILE))},
}}

stream = {{ }}
stream_ip = {{ }}
stream_icmp = {{ }}
stream_tcp = {{ }}
stream_udp = {{ }}

alert_json = {{ file = true, fields = {_lua_str(ALERT_FIELDS)} }}
"""


def render(sf: Secfn, cfg_dir: Path, *, config_at: Path, log_at: Path, iface: str, home_net: str,
           program: str = PROGRAM) -> Launch:
    inline = sf.mode == "inline"
    (cfg_dir / RULE_FILE).write_text(rules.rules_text(inline, "snort"), encoding="utf-8")
    (cfg_dir / "snort.lua").write_text(config_text(sf, config_at=config_at, home_net=home_net),
                                       encoding="utf-8")
    # -k none: checksums offloaded on veth/TUN are not errors; -l: alert_json.txt goes there
    argv = [program, "-c", str(config_at / "snort.lua"), "-l", str(log_at), "-k", "none"]
    if inline:
        # one packet thread per queue (-z): libdaq's nfq module serves one queue per instance
        argv += ["--daq", "nfq", *[a for n in sf.queue_nums for a in ("-i", str(n))], "-z", str(sf.queues),
                 "--daq-var", f"queue_maxlen={sf.queue_maxlen}"]
        if sf.fail_open:
            argv += ["--daq-var", "fail_open"]
        argv.append("-Q")
    else:
        argv += ["--daq", "pcap", "-i", iface]
    return Launch(argv, OUT, READY_LINE)


def _alerts(path: Path) -> Counter[int | str]:
    """Alerts per rule: text rules (gid 1) by sid, Snort's built-in ones as "gid:sid"."""
    counts: Counter[int | str] = Counter()
    for e in json_lines(path):
        if "sid" in e:
            gid = int(e.get("gid", 1))
            counts[int(e["sid"]) if gid == 1 else f"{gid}:{e['sid']}"] += 1
    return counts


STAT_LINE = re.compile(r"^\s+([A-Za-z0-9_ .:-]+?):\s+(\d+)\s*$")
MODULE_LINE = re.compile(r"^([a-z][a-z0-9_]*)\s*$")


def stats(text: str) -> dict[str, int]:
    """Snort's exit statistics as {"<module>.<counter>": value}: a module name alone on a line,
    then its indented `name: value` lines (the last value wins if a block repeats)."""
    out: dict[str, int] = {}
    module = ""
    for line in text.splitlines():
        if line.startswith("-----"):
            module = ""
            continue
        m = MODULE_LINE.match(line)
        if m:
            module = m.group(1)
            continue
        s = STAT_LINE.match(line)
        if s and module:
            out[f"{module}.{s.group(1).strip()}"] = int(s.group(2))
    return out


def counters(log_dir: Path) -> Counters:
    text = (log_dir / OUT).read_text(errors="replace") if (log_dir / OUT).is_file() else ""
    st = stats(text)
    keep = {k: v for k, v in st.items() if k.startswith(("daq.", "detection.", "stream."))}
    dropped = st.get("daq.dropped")
    return Counters("snort", st.get("daq.analyzed", 0), dict(_alerts(log_dir / ALERT_FILE)),
                    blocked=st.get("daq.block"), passed=st.get("daq.allow"), capture_drops=dropped, raw=keep)
