"""The seed study's four IDS rules (Malik et al., section III-B), written for Suricata, plus the
rules the tests use to prove that alerts fire and that an inline drop really drops.

Changes to the seed's text, each needed for the rule to load or to be unique:
- every rule gets `rev:1` (the fourth already has `rev:2`);
- the third rule (`alert icmp any any -> $HOME_NET 80`) names a port, which ICMP has not;
  Suricata refuses ports on icmp rules, so it is written with `any` and keeps its message and sid.
`$HOME_NET` is the data network behind N6 (the servers the rules protect: "HTTP DoS" and
"Exploit" are traffic from UEs to a server's port 80 or 445), `$EXTERNAL_NET` everything else.
"""
from __future__ import annotations

SEED_RULES = (
    'alert icmp any any -> any any (msg:"ADMIN-ALERT, ICMP traffic detected"; sid:1000004; rev:1;)',
    'alert tcp any any -> $HOME_NET 80 (msg:"Possible HTTP DoS Attack"; sid:1000002; rev:1;)',
    'alert icmp any any -> $HOME_NET any (msg:"Dos Attack suspected"; sid:1000001; rev:1;)',
    'alert tcp $EXTERNAL_NET any -> $HOME_NET 445 (msg:"Exploit Detected!"; flow:to_server,established; '
    'classtype:attempted-admin; priority:10; sid:2094284; rev:2;)',
)
SEED_SIDS = (1000004, 1000002, 1000001, 2094284)

# Test traffic: a UDP datagram to this port is dropped by the inline engine (IPS proof).
DROP_PORT = 9999
DROP_SID = 1000100
TEST_RULES = (
    f'drop udp any any -> any {DROP_PORT} (msg:"testbed: inline drop probe"; sid:{DROP_SID}; rev:1;)',
)


def rules_text(inline: bool) -> str:
    """The rule file: the seed's rules, and in inline mode the drop probe."""
    lines = list(SEED_RULES) + (list(TEST_RULES) if inline else [])
    return "\n".join(lines) + "\n"
