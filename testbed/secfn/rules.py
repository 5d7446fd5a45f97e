"""The seed study's four IDS rules (Malik et al., section III-B) as data, rendered for each
engine (Suricata 7, Snort 3), plus the rule the tests use to prove that an inline drop drops.

Changes to the seed's text, each needed for the rule to load or to be unique:
- every rule gets a `rev` (the fourth already has `rev:2`, the others `rev:1`);
- the third rule (`alert icmp any any -> $HOME_NET 80`) names a port, which ICMP has not;
  Suricata refuses ports on icmp rules, so it is written with `any` for both engines and keeps
  its message and sid.
`$HOME_NET` is the data network behind N6 (the servers the rules protect: "HTTP DoS" and
"Exploit" are traffic from UEs to a server's port 80 or 445), `$EXTERNAL_NET` everything else.

Both engines read the same header and options; what differs is around the rules: Snort 3
needs every `classtype` declared in its `classifications` table (Suricata reads
/etc/suricata/classification.config), so `classifications()` lists the ones the rules use.
"""
from __future__ import annotations

from dataclasses import dataclass

ENGINES = ("suricata", "snort")


@dataclass(frozen=True)
class Rule:
    action: str                 # alert | drop
    proto: str                  # icmp | tcp | udp
    src: str
    sport: str
    dst: str
    dport: str
    msg: str
    sid: int
    rev: int
    options: tuple[str, ...] = ()     # further options in order, e.g. "flow:to_server,established"

    def text(self, engine: str) -> str:
        if engine not in ENGINES:
            raise ValueError(f"no rule syntax for engine {engine!r}; valid: {', '.join(ENGINES)}")
        opts = [f'msg:"{self.msg}"', *self.options, f"sid:{self.sid}", f"rev:{self.rev}"]
        return (f"{self.action} {self.proto} {self.src} {self.sport} -> {self.dst} {self.dport} "
                f"({'; '.join(opts)};)")


SEED_RULES = (
    Rule("alert", "icmp", "any", "any", "any", "any", "ADMIN-ALERT, ICMP traffic detected", 1000004, 1),
    Rule("alert", "tcp", "any", "any", "$HOME_NET", "80", "Possible HTTP DoS Attack", 1000002, 1),
    Rule("alert", "icmp", "any", "any", "$HOME_NET", "any", "Dos Attack suspected", 1000001, 1),
    Rule("alert", "tcp", "$EXTERNAL_NET", "any", "$HOME_NET", "445", "Exploit Detected!", 2094284, 2,
         ("flow:to_server,established", "classtype:attempted-admin", "priority:10")),
)
SEED_SIDS = tuple(r.sid for r in SEED_RULES)

# Test traffic: a UDP datagram to this port is dropped by the inline engine (IPS proof).
DROP_PORT = 9999
DROP_SID = 1000100
TEST_RULES = (
    Rule("drop", "udp", "any", "any", "any", str(DROP_PORT), "testbed: inline drop probe", DROP_SID, 1),
)
# classtype -> (priority, description), as Suricata's classification.config has them
CLASSIFICATIONS = {"attempted-admin": (1, "Attempted Administrator Privilege Gain")}


def rules_for(inline: bool) -> tuple[Rule, ...]:
    return SEED_RULES + (TEST_RULES if inline else ())


def rules_text(inline: bool, engine: str = "suricata") -> str:
    """The rule file: the seed's rules, and in inline mode the drop probe."""
    return "\n".join(r.text(engine) for r in rules_for(inline)) + "\n"


def classifications(inline: bool) -> dict[str, tuple[int, str]]:
    """The classtypes the rules use, with priority and text (Snort 3 needs them declared)."""
    used = {o.split(":", 1)[1] for r in rules_for(inline) for o in r.options if o.startswith("classtype:")}
    return {c: CLASSIFICATIONS[c] for c in sorted(used)}
