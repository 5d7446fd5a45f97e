"""Create the testbed's keys, certificates, PSKs and SIM secrets under $STATE/keys (idempotent)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from testbed import instance, keys, statelock


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--state", type=Path, default=None,
                        help="state directory (default: $STATE or .state/)")


def run(args: argparse.Namespace) -> int:
    state = args.state if args.state is not None else keys.default_state_dir()
    before = keys.files(keys.keys_root(state)) if keys.keys_root(state).exists() else {}
    try:
        # certificates name that directory's stack addresses
        with statelock.hold(state), instance.addresses_of(state):
            root = keys.ensure(state)
    except (keys.KeysError, statelock.Busy) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: cannot write the keys under {state} ({exc.strerror or exc}); "
              "set STATE=<a writable directory>", file=sys.stderr)
        return 1
    after = keys.files(root)
    changed = [p for p in after if before.get(p) != after[p]]
    print(f"keys: {root}: {len(after)} files, {len(changed)} created or updated"
          + (f" ({', '.join(changed[:6])}{', ...' if len(changed) > 6 else ''})" if changed else ""))
    return 0
