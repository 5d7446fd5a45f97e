"""An apply tried again while the API server answers as a loaded one does (testbed/runtime/k8s/apply.py),
and the retry every cluster request of the runtime shares (retry.py)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from testbed.runtime.k8s import apply, retry

TIMEOUT_ANSWER = ("Error from server (Timeout): Timeout: request did not complete within requested timeout - "
                  "context deadline exceeded")


def _kubectl(tmp_path: Path, fails: int, answer: str) -> tuple[Path, Path]:
    """A kubectl whose first FAILS calls answer ANSWER (exit 1); each call's stdin is kept."""
    tries, fake = tmp_path / "tries", tmp_path / "kubectl"
    (tmp_path / "answer").write_text(answer + "\n")
    fake.write_text(f'''#!/usr/bin/env bash
n=$(cat "{tries}" 2>/dev/null || echo 0); echo $((n + 1)) >"{tries}"
cat >"{tmp_path}/stdin.$n"
((n >= {fails})) || {{ cat "{tmp_path}/answer" >&2; exit 1; }}
echo "pod/upf serverside-applied"
''')
    fake.chmod(0o755)
    return fake, tries


def test_a_timed_out_apply_is_applied_on_a_later_try(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake, tries = _kubectl(tmp_path, 2, TIMEOUT_ANSWER)
    assert apply.apply([str(fake), "apply", "-f", "-"], "kind: Pod\n", "pod upf", within=60, every=0) == ""
    assert tries.read_text().strip() == "3"
    assert all((tmp_path / f"stdin.{n}").read_text() == "kind: Pod\n" for n in range(3))   # the same objects each time
    assert capsys.readouterr().err.count(f"applying pod upf failed ({TIMEOUT_ANSWER}); trying again") == 2


def test_an_apply_the_server_refuses_is_not_tried_again(tmp_path: Path) -> None:
    fake, tries = _kubectl(tmp_path, 5, 'The Pod "upf" is invalid: spec.containers[0].image: Required value')
    why = apply.apply([str(fake), "apply", "-f", "-"], "kind: Pod\n", "pod upf", within=60, every=0)
    assert why == 'The Pod "upf" is invalid: spec.containers[0].image: Required value'
    assert tries.read_text().strip() == "1"


def test_an_apply_that_keeps_timing_out_ends_at_its_deadline_naming_the_error(tmp_path: Path) -> None:
    fake, tries = _kubectl(tmp_path, 1000, TIMEOUT_ANSWER)
    started = time.monotonic()
    assert apply.apply([str(fake), "apply", "-f", "-"], "kind: Pod\n", "pod upf", within=1.5, every=0.5) == TIMEOUT_ANSWER
    assert 1.5 <= time.monotonic() - started < 10 and 3 <= int(tries.read_text()) <= 5


def test_the_command_line_exits_1_naming_what_and_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    fake, _ = _kubectl(tmp_path, 5, "error: the server doesn't have a resource type \"pods\"")
    monkeypatch.setattr(sys, "stdin", open(tmp_path / "kubectl", encoding="utf-8"))
    assert apply.main(["--what", "the data", "--within", "30", "--every", "0", "--", str(fake), "apply", "-f", "-"]) == 1
    assert "error: applying the data: error: the server doesn't have a resource type \"pods\"" in capsys.readouterr().err


@pytest.mark.parametrize("why, again", [(TIMEOUT_ANSWER, True),
                                        ("Unable to connect to the server: dial tcp 10.250.0.1:6443: connect: "
                                         "connection refused", True),
                                        ("The connection to the server 10.250.0.1:6443 was refused - did you "
                                         "specify the right host or port?", True),
                                        ("Unable to connect to the server: EOF", True),
                                        ("Unable to connect to the server: net/http: TLS handshake timeout", True),
                                        ("Error from server (ServiceUnavailable): the server is currently unable "
                                         "to handle the request", True),
                                        ('Error from server (Forbidden): pods "upf" is forbidden', False),
                                        ('Error from server (NotFound): namespaces "g5tb" not found', False)])
def test_what_is_tried_again(why: str, again: bool) -> None:
    assert apply.transient(why) is again


def test_a_request_whose_work_was_done_is_not_tried_again() -> None:
    """An exec whose answer was lost after it ran (the gate then ended): done() ends the tries."""
    calls: list[str] = []

    def attempt() -> str:
        calls.append("try")
        return "Timeout occurred"
    assert retry.until(attempt, 60, 30, done=lambda: len(calls) == 1) == ""
    assert calls == ["try"]
