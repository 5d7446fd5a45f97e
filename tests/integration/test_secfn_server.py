"""testbed/secfn/server.sh for real in a private network namespace: every TCP probe of the ports the
seed's rules watch (80, 445) is answered "ok", as probe.sh sends it (a line, then its end). The
responder once lost the answer to a broken pipe in about one connection of six, which made the
secfn privilege tests fail at random and a run's "established exchange" probe unreliable."""
from __future__ import annotations

import subprocess
from pathlib import Path

from testbed.secfn import lab as secfn_lab
from tests.conftest import require_root, require_tools

SERVER = secfn_lab.HERE / "server.sh"
CONNECTIONS = 60


def test_every_probe_of_80_and_445_is_answered(tmp_path: Path) -> None:
    require_root()
    require_tools("unshare", "ip", "socat", "ss", "ITGRecv", "timeout")
    ready = tmp_path / "server-ready"
    script = f"""
set -eu
ip link set lo up
SECFN_SERVER_READY={ready} bash {SERVER} {tmp_path / 'out'} 9999 2>{tmp_path / 'server.log'} &
server=$!
for i in $(seq 100); do [ -e {ready} ] && break; sleep 0.1; done
[ -e {ready} ] || {{ echo "server not ready"; cat {tmp_path / 'server.log'}; exit 1; }}
for port in 80 445; do
  for i in $(seq {CONNECTIONS}); do
    echo "$port $(echo hello | timeout 5 socat -T 2 - TCP:127.0.0.1:$port 2>/dev/null || true)"
  done
done
kill -TERM "$server"
wait "$server"
"""
    res = subprocess.run(["unshare", "--net", "bash", "-c", script], capture_output=True, text=True,
                         timeout=300, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    replies = [line.split(" ", 1) for line in res.stdout.splitlines()]
    assert len(replies) == 2 * CONNECTIONS
    unanswered = [r for r in replies if r[1:] != ["ok"]]
    assert not unanswered, f"{len(unanswered)} of {len(replies)} probes got no 'ok': {unanswered[:5]}"
    assert not (tmp_path / "server-ready").exists()          # SIGTERM cleans up
