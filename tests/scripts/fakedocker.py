"""A stand-in `docker` CLI for testing the drivers' and up.sh's bash without a Docker engine.

`install(tmp_path, world)` writes an executable `docker` into tmp_path/bin that runs this file;
put that directory first on PATH. Every call is appended to tmp_path/docker-calls.jsonl (argv),
and the answers come from `world` (a dict, kept as tmp_path/docker-world.json):

  containers   {service: {status, health, exit, started, finished, image, log, health_log}}; the
               services of the render's compose files missing there take `default` (if given)
  default      the container every other service of the compose files is (e.g. running/healthy)
  sessions     {service: N}: PDU session interfaces `ip -4 -o addr show` lists in that container
  exec         [[substring, output, rc], ...]: the first whose substring is in an exec's command
  events       [[delay_s, line], ...] printed by `docker events`, which then idles until killed
  follow_hang  true: `logs --follow` prints the log, then idles (a UE that never attaches)
  slow         {compose subcommand: seconds}: that call waits so long before it answers (an engine
               as slow as one under emulation, where `docker compose ps` took 55 s)

Only what the scripts ask is answered (compose ps/logs/exec/up/down/rm/config, logs and exec by
container id, inspect with the
formats the scripts use, events, info, version). The engine is what is faked; everything else the
scripts run (Python, dumpcap, tshark) is real.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

NEVER = "0001-01-01T00:00:00Z"


def install(tmp_path: Path, world: dict[str, Any]) -> tuple[Path, Path]:
    """(bin directory to put first on PATH, the calls file)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (tmp_path / "docker-world.json").write_text(json.dumps(world))
    calls = tmp_path / "docker-calls.jsonl"
    script = bin_dir / "docker"
    script.write_text(f"#!/usr/bin/env bash\nexport FAKE_DOCKER_DIR={tmp_path}\n"
                      f'exec {sys.executable} {Path(__file__).resolve()} "$@"\n')
    script.chmod(0o755)
    modprobe = bin_dir / "modprobe"          # up.sh's check_sctp must not load a module on this host
    modprobe.write_text("#!/usr/bin/env bash\nexit 1\n")
    modprobe.chmod(0o755)
    return bin_dir, calls


def calls(tmp_path: Path) -> list[list[str]]:
    f = tmp_path / "docker-calls.jsonl"
    return [json.loads(line) for line in f.read_text().splitlines()] if f.exists() else []


# ------------------------------------------------------------------ the CLI itself

def _world() -> tuple[Path, dict[str, Any]]:
    d = Path(os.environ["FAKE_DOCKER_DIR"])
    return d, json.loads((d / "docker-world.json").read_text())


def _compose_services(files: list[str], profiles: list[str]) -> list[str]:
    import hashlib
    d, _ = _world()
    key = hashlib.sha256(json.dumps([files, sorted(profiles)]).encode()).hexdigest()[:16]
    cache = d / f"docker-services-{key}.json"
    if cache.exists():
        return list(json.loads(cache.read_text()))
    import yaml
    out: list[str] = []
    for f in files:
        try:
            data = yaml.safe_load(Path(f).read_text()) or {}
        except OSError:
            continue
        for name, spec in (data.get("services") or {}).items():
            want = (spec or {}).get("profiles")
            if name not in out and (not want or set(want) & set(profiles)):
                out.append(name)
    if files:
        cache.write_text(json.dumps(out))
    return out


def _containers(world: dict[str, Any], services: list[str]) -> dict[str, dict[str, Any]]:
    out = {k: dict(v) for k, v in (world.get("containers") or {}).items()}
    if world.get("default"):
        for s in services:
            out.setdefault(s, dict(world["default"]))
    return out


def _inspect_obj(project: str, svc: str, c: dict[str, Any]) -> dict[str, Any]:
    health = None
    if c.get("health"):
        health = {"Status": c["health"], "FailingStreak": 3 if c["health"] == "unhealthy" else 0,
                  "Log": c.get("health_log") or []}
    return {"Id": f"cid-{svc}", "Name": f"/{project}-{svc}-1",
            "State": {"Status": c.get("status", "running"), "ExitCode": c.get("exit", 0), "OOMKilled": False,
                      "Error": "", "StartedAt": c.get("started", "2026-01-01T10:00:00.000000000Z"),
                      "FinishedAt": c.get("finished", NEVER), **({"Health": health} if health else {})},
            "Config": {"Image": c.get("image", "img"), "Labels": {"com.docker.compose.service": svc},
                       "Env": ["SECRET=must-not-be-recorded"]}}


def _template(fmt: str, obj: dict[str, Any]) -> str:
    def cond(m: re.Match[str]) -> str:
        return m.group(2) if obj["State"].get("Health") else m.group(3)
    fmt = re.sub(r"\{\{if \.State\.(Health)\}\}(.*?)\{\{else\}\}(.*?)\{\{end\}\}", cond, fmt)
    repl = {
        "{{.Id}}": obj["Id"], "{{.Name}}": obj["Name"],
        '{{index .Config.Labels "com.docker.compose.service"}}': obj["Config"]["Labels"]["com.docker.compose.service"],
        "{{.State.Health.Status}}": (obj["State"].get("Health") or {}).get("Status", ""),
    }
    for k in ("Status", "ExitCode", "StartedAt", "FinishedAt"):
        repl[f"{{{{.State.{k}}}}}"] = str(obj["State"][k])
    for k, v in repl.items():
        fmt = fmt.replace(k, v)
    return fmt


def _exec_answer(world: dict[str, Any], svc: str, cmd: list[str]) -> tuple[str, int]:
    line = " ".join(cmd)
    if "ip -4 -o addr show" in line:
        n = int((world.get("sessions") or {}).get(svc, 0))
        return "".join(f"{5 + i}: uesimtun{i}    inet 10.45.0.{2 + i}/24 scope global uesimtun{i}\n"
                       for i in range(n)), 0
    for sub, out, rc in world.get("exec") or []:
        if sub in line:
            return out, rc
    return "", 0


def _compose(argv: list[str], world: dict[str, Any]) -> int:
    files: list[str] = []
    profiles: list[str] = []
    project = "g5tb"
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        opt = argv[i]
        if opt in ("-f", "--file"):
            files.append(argv[i + 1])
        elif opt == "--profile":
            profiles.append(argv[i + 1])
        elif opt in ("-p", "--project-name"):
            project = argv[i + 1]
        elif opt == "--env-file":
            pass
        else:
            i += 1
            continue
        i += 2
    sub, rest = (argv[i], argv[i + 1:]) if i < len(argv) else ("", [])
    services = _compose_services(files, profiles + ["ue2", "scale"])
    cons = _containers(world, services)
    time.sleep(float((world.get("slow") or {}).get(sub, 0)))
    if sub == "version":
        print("v2.29.7" if "--short" in rest else "Docker Compose version v2.29.7")
        return 0
    if sub == "config":
        print("\n".join(_compose_services(files, profiles)))
        return 0
    if sub == "ps":
        quiet = "-q" in rest or "--quiet" in rest or "-aq" in rest
        every = any(a in ("-a", "--all", "-aq") for a in rest)
        status = rest[rest.index("--status") + 1] if "--status" in rest else None
        fmt = rest[rest.index("--format") + 1] if "--format" in rest else None
        named = [a for j, a in enumerate(rest) if not a.startswith("-") and rest[j - 1] not in ("--status", "--format")]
        for svc, c in cons.items():
            if named and svc not in named:
                continue
            st = c.get("status", "running")
            if (status and st != status) or (not every and st != "running" and not status):
                continue
            if quiet:
                print(f"cid-{svc}")
            elif fmt:
                print(fmt.replace("{{.Service}}", svc).replace("{{.Image}}", c.get("image", "img"))
                      .replace("{{.State}}", st).replace("{{.Name}}", f"{project}-{svc}-1")
                      .replace("{{.ID}}", f"cid-{svc}"))
            else:
                print(f"{project}-{svc}-1  {c.get('image', 'img')}  {svc}  {st} ({c.get('health') or '-'})")
        return 0
    if sub == "logs":
        named = [a for a in rest if not a.startswith("-") and not a.isdigit()]
        tail = int(rest[rest.index("--tail") + 1]) if "--tail" in rest else None
        for svc in named or list(cons):
            lines = str((cons.get(svc) or {}).get("log", "")).splitlines()
            if tail is not None:
                lines = lines[-tail:]
            stamp = "2026-01-01T10:00:00.000000000Z " if "--timestamps" in rest else ""
            for line in lines:
                print(f"{stamp}{line}" if len(named) == 1 else f"{svc}  | {stamp}{line}")
        sys.stdout.flush()
        if "--follow" in rest and world.get("follow_hang"):
            time.sleep(3600)
        return 0
    if sub == "exec":
        j = 0
        while rest[j].startswith("-"):
            j += 1
        svc, cmd = rest[j], rest[j + 1:]
        if (cons.get(svc) or {}).get("status", "absent") != "running":
            print(f"service \"{svc}\" is not running", file=sys.stderr)
            return 1
        out, rc = _exec_answer(world, svc, cmd)
        sys.stdout.write(out)
        return rc
    return 0                                       # up, down, rm, stop, create, ...


def main(argv: list[str]) -> int:
    d, world = _world()
    with (d / "docker-calls.jsonl").open("a") as f:
        f.write(json.dumps(argv) + "\n")
    if not argv:
        return 0
    if argv[0] == "compose":
        return _compose(argv[1:], world)
    if argv[0] == "info":
        print("Server Version: 28.0.0 (stand-in)")
        return 0
    if argv[0] == "version":
        print("1.47")
        return 0
    if argv[0] == "inspect":
        fmt = None
        ids = []
        k = 1
        while k < len(argv):
            if argv[k] in ("-f", "--format"):
                fmt = argv[k + 1]
                k += 2
                continue
            ids.append(argv[k])
            k += 1
        cons = world.get("containers") or {}
        objs = []
        for cid in ids:
            svc = cid.removeprefix("cid-")
            c = cons.get(svc) or world.get("default") or {}
            objs.append(_inspect_obj("g5tb", svc, c))
        if fmt is None:
            print(json.dumps(objs))
        else:
            for o in objs:
                print(_template(fmt, o))
        return 0
    if argv[0] == "events":
        for delay, line in world.get("events") or []:
            time.sleep(delay)
            print(line, flush=True)
        os.execvp("sleep", ["sleep", "3600"])
    if argv[0] == "logs":                          # docker logs [--timestamps] <cid-service>
        cid = [a for a in argv[1:] if not a.startswith("-")][0]
        svc = cid.removeprefix("cid-")
        c = (world.get("containers") or {}).get(svc) or world.get("default") or {}
        stamp = "2026-01-01T10:00:00.000000000Z " if "--timestamps" in argv else ""
        for line in str(c.get("log", "")).splitlines():
            print(f"{stamp}{line}")
        return 0
    if argv[0] == "exec":
        if "cpu.stat" in " ".join(argv):
            print("usage_usec 123456")
            return 0
        cid = [a for a in argv[1:] if not a.startswith("-")][0]
        svc = cid.removeprefix("cid-")
        out, rc = _exec_answer(world, svc, argv[argv.index(cid) + 1:])
        sys.stdout.write(out)
        return rc
    return 0                                       # image inspect, update, ...


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
