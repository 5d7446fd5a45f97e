"""Print a run's full specification (every default filled in), from Make variables, a file or a run."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from testbed import environment, manifest, runparams, runspec


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("experiment", nargs="?", choices=runparams.EXPERIMENTS,
                        help="the experiment (with --file/--run: must be the spec's, if given)")
    parser.add_argument("assignments", nargs="*", metavar="KEY=VALUE",
                        help="the experiment's Make variables (SIZES='64 1024' ...); empty = default")
    parser.add_argument("--profile", help="the profile [default: $PROFILE, else baseline]")
    parser.add_argument("--from-env", action="store_true",
                        help="also take the experiment's own parameters from the environment (as Make exports them)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--file", type=Path, help="a spec file (YAML or JSON) to validate and complete")
    source.add_argument("--run", type=Path, help="a run directory: the spec its manifest stores")
    parser.add_argument("--format", choices=("yaml", "json", "shell"), default="yaml",
                        help="yaml: to read or edit; json: one line; shell: NAME='value' lines for a driver's eval")


def _spec(args: argparse.Namespace) -> runspec.RunSpec:
    if args.file or args.run:
        if args.assignments or args.profile:
            raise runspec.SpecError("KEY=VALUE and --profile do not go with --file/--run: edit the spec instead")
        if args.file:
            spec = runspec.load(args.file)
        else:
            spec = runspec.from_manifest(manifest.load(args.run), str(manifest.path_of(args.run)))
        if args.experiment and args.experiment != spec.experiment:
            raise runspec.SpecError(f"the spec is of experiment {spec.experiment}, not {args.experiment}")
        return spec
    if not args.experiment:
        raise runspec.SpecError("name an experiment, or give --file or --run")
    raw = runparams.raw_values(args.experiment, args.assignments, args.from_env)
    # the RAN and the dimensions' variables: read here, at the command line's edge
    return runspec.build(args.experiment, raw, args.profile or environment.get("PROFILE", "baseline"),
                         environment.mapping())


def run(args: argparse.Namespace) -> int:
    try:
        spec = _spec(args)
    except (runspec.SpecError, runparams.ParamError, manifest.ManifestError) as exc:
        lines = str(exc).splitlines() or ["invalid spec"]
        print(f"error: {lines[0]}" + (f" (and {len(lines) - 1} more: {'; '.join(lines[1:])})" if lines[1:] else ""),
              file=sys.stderr)
        return 2
    if args.format == "shell":
        print(runspec.shell_assignments(spec))
    else:
        print(runspec.dump(spec, args.format), end="" if args.format == "yaml" else "\n")
    return 0
