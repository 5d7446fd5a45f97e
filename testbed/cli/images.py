"""The images' names with their content hashes, their build inputs, and the rebuild decision.

    env            VAR=ref lines for every image (scripts/lib/images.sh evaluates them)
    hash NAME      the content hash of NAME's build inputs
    inputs NAME    the files (with their SHA-256) and knobs that make the hash
    plan [NAME..]  per image: ok | build | stale, and why (needs Docker to look at the images)
    labels NAME    the --label arguments scripts/build.sh gives the image (--source: what a
                   compiled image is built from, default upstream)
    base-variable NAME  the variable that overrides NAME's base (DEBIAN_IMAGE, DEBIAN13_IMAGE)
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import sys

from testbed import ROOT, images

ACTIONS = ("env", "hash", "inputs", "plan", "labels", "base-variable")


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("action", choices=ACTIONS)
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"image: {', '.join(images.BUILT)}")
    parser.add_argument("--docker", default=os.environ.get("DOCKER") or "docker", help="the Docker CLI (plan)")
    parser.add_argument("--source", default=None,
                        help="labels: upstream (default), local:<dir>@<rev> or prebuilt:<dir>")


def _one(args: argparse.Namespace) -> str:
    if len(args.names) != 1 or args.names[0] not in images.BUILT:
        raise images.ImageError(f"{args.action} takes one image: {', '.join(images.BUILT)}")
    return str(args.names[0])


def _dispatch(args: argparse.Namespace) -> int:
    if args.action == "env":
        for k, v in images.resolve().items():
            print(f"{k}={shlex.quote(v)}")
    elif args.action == "hash":
        print(images.input_hash(_one(args)))
    elif args.action == "inputs":
        name = _one(args)
        for rel in images.input_files(name):
            print(f"{hashlib.sha256((ROOT / rel).read_bytes()).hexdigest()}  {rel}")
        for k, v in images.knobs(name, os.environ).items():
            print(f"knob  {k}={v}")
    elif args.action == "base-variable":
        print(images.base_variable(_one(args)))
    elif args.action == "labels":
        for key, value in images.labels(_one(args), args.source).items():
            print(f"--label\n{key}={value}")
    elif args.action == "plan":
        bad = [n for n in args.names if n not in images.BUILT]
        if bad:
            print(f"error: unknown image {', '.join(bad)}; built here: {', '.join(images.BUILT)}", file=sys.stderr)
            return 2
        for d in images.plan(args.names or None, inspect=lambda ref: images.docker_inspect(ref, args.docker)):
            print(f"{d.name}\t{d.action}\t{d.ref}\t{d.reason}")
    return 0


def run(args: argparse.Namespace) -> int:
    try:
        return _dispatch(args)
    except images.ImageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    # stdlib only: scripts/lib/images.sh runs this with any python3, before a venv exists
    _parser = argparse.ArgumentParser(prog="python -m testbed images")
    add_arguments(_parser, "images")
    from testbed.cli.pipes import exit_with
    exit_with(lambda: run(_parser.parse_args()))
