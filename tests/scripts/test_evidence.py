"""scripts/lib/compose.sh stack_save_evidence on a slow engine. In the emulated guest one `docker
compose ps` took 55 s; with every call bounded at 30 s a failed run-sbi kept an empty ps.txt and
not one container log. Now the logs of every service the compose files name are kept even when
the engine does not list the containers in time, and what timed out is written down."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, require_tools


def _render(tmp_path: Path) -> Path:
    render = tmp_path / "render"
    render.mkdir()
    (render / "compose.env").write_text("PROFILE=baseline\n")
    compose = tmp_path / "stack.yaml"
    compose.write_text("services:\n  nrf: {image: img}\n  amf: {image: img}\n  ue2: {image: img, profiles: [ue2]}\n")
    (render / "compose.files").write_text(f"{compose}\n")
    return render


def _save(tmp_path: Path, world: dict, timeout_s: int) -> tuple[subprocess.CompletedProcess[str], Path]:
    from tests.scripts import fakedocker
    require_tools("bash", "timeout")
    bin_dir, _ = fakedocker.install(tmp_path, world)
    out = tmp_path / "evidence"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "EVIDENCE_TIMEOUT": str(timeout_s),
           "COMPOSE_PROJECT": "g5tb", "PYTHON": sys.executable}
    script = f'source "{ROOT}/scripts/lib/compose.sh"; stack_save_evidence "{_render(tmp_path)}" "{out}"'
    res = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    return res, out


def test_a_slow_engine_still_leaves_every_log_and_says_what_timed_out(tmp_path: Path) -> None:
    world = {"default": {"status": "exited", "exit": 1, "log": "the NF's last words\n"}, "slow": {"ps": 30}}
    res, out = _save(tmp_path, world, timeout_s=2)
    assert res.returncode == 0, res.stderr
    logs = sorted(p.name for p in (out / "logs").iterdir())
    assert logs == ["amf.log", "nrf.log", "ue2.log"], logs   # compose config --services, UE profiles too
    assert "the NF's last words" in (out / "logs" / "nrf.log").read_text()
    errors = (out / "evidence-errors.txt").read_text()
    assert "docker compose ps -a: no answer within 2s" in errors, errors
    assert "states.json not written" in errors, errors


def test_an_engine_that_answers_leaves_no_error_file(tmp_path: Path) -> None:
    world = {"default": {"status": "exited", "exit": 1, "log": "bye\n"}}
    res, out = _save(tmp_path, world, timeout_s=30)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in (out / "logs").iterdir()) == ["amf.log", "nrf.log", "ue2.log"]
    assert "g5tb-nrf-1" in (out / "ps.txt").read_text()
    assert (out / "states.json").is_file() and not (out / "evidence-errors.txt").exists()


def test_listed_containers_are_read_by_id_when_compose_logs_is_too_slow(tmp_path: Path) -> None:
    """The guest: the listing answered, but two dozen parallel `docker compose logs` (each loading
    the project) all passed the bound and left empty files. The listed containers' logs come from
    the plain docker CLI by id."""
    world = {"default": {"status": "running", "log": "the NF's last words\n"}, "slow": {"logs": 30}}
    res, out = _save(tmp_path, world, timeout_s=5)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in (out / "logs").iterdir()) == ["amf.log", "nrf.log", "ue2.log"]
    for name in ("amf", "nrf", "ue2"):
        assert "the NF's last words" in (out / "logs" / f"{name}.log").read_text(), name
    assert not (out / "evidence-errors.txt").exists()
