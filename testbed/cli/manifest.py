"""Create, update, finish and validate run manifests (the drivers' bookkeeping; docs/manifest.md)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from testbed import manifest, runparams

ACTIONS = ("create", "add-file", "add-logs", "add-command", "add-ue", "add-failure", "event", "set-datapath",
           "datapath-from-log", "finish", "validate", "get", "mark-stale")


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("action", choices=ACTIONS, help="what to do (see docs/manifest.md)")
    parser.add_argument("target", nargs="?", help="run directory (create: the results root)")
    parser.add_argument("values", nargs="*", metavar="VALUE",
                        help="create: KEY=VALUE parameters; add-file: ATTR=VALUE attributes; "
                        "set-datapath: <overlay>=<datapath> ...; datapath-from-log: the entrypoints' log files; "
                        "get: a key path such as datapath.userspace")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="create: a parameter (repeat; same as the positional KEY=VALUE)")
    parser.add_argument("--attr", action="append", default=[], metavar="ATTR=VALUE",
                        help="add-file: an attribute (repeat)")
    parser.add_argument("--command", dest="command_line", help="add-command: the exact command line")
    parser.add_argument("--message", help="event: the message")
    parser.add_argument("--experiment", choices=runparams.EXPERIMENTS)
    parser.add_argument("--profile")
    parser.add_argument("--image", action="append", default=[], help="create: an image to record (repeat)")
    parser.add_argument("--driver-pid", type=int, help="create: the driver's pid (for resume)")
    parser.add_argument("--spec", help="create: the run spec the driver ran from, as JSON (python -m testbed spec)")
    parser.add_argument("--rerun-of", help="create: the run directory this run repeats (make rerun)")
    parser.add_argument("--path", help="add-file: path relative to the run directory")
    parser.add_argument("--kind", choices=manifest.KINDS)
    parser.add_argument("--state", choices=manifest.END_STATES)
    parser.add_argument("--reason")
    parser.add_argument("--level", choices=("info", "warning", "error"), default="info")
    parser.add_argument("--json", dest="json_value", help="add-ue / add-failure: the entry as JSON")


def _attr_value(raw: str) -> Any:
    """ATTR=VALUE: integers, true/false and null are typed; the rest stay strings."""
    if raw in ("true", "false"):
        return raw == "true"
    if raw == "null":
        return None
    try:
        return int(raw)
    except ValueError:
        return raw


def _pairs(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise manifest.ManifestError(f"{item!r} is not KEY=VALUE")
        out[key] = value
    return out


def _need(value: Any, flag: str, action: str) -> Any:
    if value in (None, ""):
        raise manifest.ManifestError(f"manifest {action} needs {flag}")
    return value


def _dispatch(args: argparse.Namespace) -> int:
    a = args.action
    target = Path(_need(args.target, "a run directory" if a != "create" else "the results root", a))
    if a == "create":
        run_dir = manifest.create(target, _need(args.experiment, "--experiment", a),
                                  _need(args.profile, "--profile", a), _pairs(args.param + args.values),
                                  images=args.image, driver_pid=args.driver_pid,
                                  spec=json.loads(args.spec) if args.spec else None, rerun_of=args.rerun_of)
        print(run_dir)
    elif a == "add-file":
        attrs = {k: _attr_value(v) for k, v in _pairs(args.attr + args.values).items()}
        manifest.add_file(target, _need(args.path, "--path", a), _need(args.kind, "--kind", a), attrs)
    elif a == "add-logs":
        manifest.add_unlisted_logs(target)
    elif a == "add-command":
        manifest.add_command(target, _need(args.command_line, "--command", a))
    elif a in ("add-ue", "add-failure"):
        if args.json_value:
            entry = json.loads(args.json_value)
        else:
            # --attr KEY=VALUE; identifiers such as an IMSI keep their leading zeros
            entry = {k: (v if k in ("imsi", "name", "ue", "reason", "evidence") else _attr_value(v))
                     for k, v in _pairs(_need(args.attr, "--attr or --json", a)).items()}
        (manifest.add_ue if a == "add-ue" else manifest.add_attach_failure)(target, entry)
    elif a == "event":
        manifest.add_event(target, args.level, _need(args.message, "--message", a))
    elif a == "set-datapath":
        print(json.dumps(manifest.set_datapath(target, _pairs(args.values))))
    elif a == "datapath-from-log":
        reported = manifest.datapaths_in_logs([Path(v) for v in args.values])
        print(json.dumps(manifest.set_datapath(target, reported) if reported else manifest.load(target)["datapath"]))
    elif a == "finish":
        manifest.finish(target, _need(args.state, "--state", a), args.reason)
    elif a == "validate":
        path = target if target.is_file() else manifest.path_of(target)
        errors = manifest.validate(json.loads(path.read_text(encoding="utf-8")))
        for e in errors:
            print(f"{path}: {e}", file=sys.stderr)
        if errors:
            return 1
        print(f"{path}: valid (schema_version {manifest.SCHEMA_VERSION})")
    elif a == "get":
        value: Any = manifest.load(target)
        for part in (args.values[0] if args.values else "").split("."):
            if part:
                value = value[int(part)] if isinstance(value, list) else value[part]
        print(json.dumps(value) if isinstance(value, (dict, list)) or value is None
              else (str(value).lower() if isinstance(value, bool) else value))
    elif a == "mark-stale":
        print("marked incomplete" if manifest.mark_stale(target) else "unchanged")
    return 0


def run(args: argparse.Namespace) -> int:
    try:
        return _dispatch(args)
    except runparams.ParamError as exc:
        for line in str(exc).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return 2
    except (manifest.ManifestError, KeyError, IndexError, json.JSONDecodeError) as exc:
        print(f"error: manifest {args.action}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:            # a read-only or full results root: one line, no traceback
        print(f"error: cannot write {exc.filename or args.target}: {exc.strerror or exc}; "
              "set RESULTS=<a writable directory>", file=sys.stderr)
        return 1


if __name__ == "__main__":
    # Fast path for the drivers (`python -m testbed.cli.manifest ...`, the same as
    # `python -m testbed manifest ...` without importing every other command).
    import logging
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    _parser = argparse.ArgumentParser(prog="python -m testbed manifest")
    add_arguments(_parser, "manifest")
    from testbed.cli.pipes import exit_with
    exit_with(lambda: run(_parser.parse_args()))
