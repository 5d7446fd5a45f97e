"""Campaign plans: which runs a campaign needs, in a seeded shuffled order, and which are done.

A campaign is profiles x repetitions of one experiment. Each (profile, repetition) is a slot
with a fixed id (`<experiment>.<profile>.r<NN>`); a run records the slot it fills in its
manifest. Resume = skip every slot that has a complete, not-invalid run; a slot whose runs
are all incomplete/interrupted/failed/invalid is run again in a new run directory (old ones
are kept as they are). The order is shuffled per repetition with a recorded seed, to spread
drift over profiles (flent does the same).
"""
from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

from testbed import manifest, profiles, runparams


@dataclasses.dataclass(frozen=True)
class Slot:
    id: str
    experiment: str
    profile: str
    rep: int
    status: str            # done | todo | redo (earlier runs not complete or invalid)
    runs: tuple[str, ...]  # earlier run ids for this slot

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def slot_id(experiment: str, profile: str, rep: int, plane: str | None = None) -> str:
    return f"{experiment}.{runparams.result_name(experiment, profile, plane)}.r{rep:02d}"


def campaign_profiles(experiment: str, requested: list[str] | None = None, plane: str | None = None,
                      n3_profile: str = "baseline") -> list[str]:
    """Every profile of the experiment's plane(s) (the baseline included), or the requested ones.
    The security-function experiments (secfn, secfn-lab) run over SECFN x IDS instead: every
    `<function>-<engine>` unit (or the requested ones) behind one N3 profile, as
    `<n3_profile>.<unit>` (their result directories' names)."""
    if experiment in manifest.SECFN_EXPERIMENTS:
        from testbed import secfn
        profiles.get(n3_profile, "n3")
        units = list(dict.fromkeys(requested)) if requested else secfn.all_units()
        errors = []
        for u in units:
            try:
                secfn.parse_unit(u)
            except secfn.SecfnError as exc:
                errors.append(str(exc))
        if errors:
            raise profiles.ProfileError("\n".join(errors))
        return [f"{n3_profile}.{u}" for u in units]
    plane = plane or runparams.PLANE[experiment]
    if not requested:
        return profiles.names(plane)
    errors = []
    for p in requested:
        try:
            profiles.get(p, plane)
        except profiles.ProfileError as exc:
            errors.append(str(exc))
    if errors:
        raise profiles.ProfileError("\n".join(errors))
    return list(dict.fromkeys(requested))


def _slot_status(results: Path, campaign: str, experiment: str, profile: str,
                 sid: str, mark_stale: bool) -> tuple[str, tuple[str, ...]]:
    run_ids = []
    done = False
    for run_dir in manifest.runs(results, campaign, experiment, profile):
        try:
            m = manifest.load(run_dir)
        except manifest.ManifestError:
            continue
        if m.get("slot") != sid:
            continue
        if mark_stale and m.get("state") == "running":
            manifest.mark_stale(run_dir)
            m = manifest.load(run_dir)
        run_ids.append(run_dir.name)
        if m.get("state") == "complete" and m.get("valid") is not False:
            done = True
    if done:
        return "done", tuple(run_ids)
    return ("redo" if run_ids else "todo"), tuple(run_ids)


def plan(results: Path, campaign: str, experiment: str, reps: int, seed: int,
         requested: list[str] | None = None, mark_stale: bool = False, plane: str | None = None,
         n3_profile: str = "baseline") -> list[Slot]:
    """All slots in run order: repetition by repetition, profiles shuffled with seed + rep.
    `plane`: the PLANE expression of the runs (experiments with a PLANE parameter); `all`
    gives each profile all of its planes. `n3_profile`: the N3 profile under the security
    function (secfn experiments)."""
    names = campaign_profiles(experiment, requested, None if plane == "all" else plane, n3_profile)
    out: list[Slot] = []
    for rep in range(1, reps + 1):
        order = list(names)
        random.Random(seed * 1000 + rep).shuffle(order)
        for p in order:
            pl = None if plane is None else ",".join(profiles.planes_for(profiles.get(p), plane))
            sid = slot_id(experiment, p, rep, pl)
            status, run_ids = _slot_status(results, campaign, experiment,
                                           runparams.result_name(experiment, p, pl), sid, mark_stale)
            out.append(Slot(sid, experiment, p, rep, status, run_ids))
    return out


def record_plan(results: Path, campaign: str, experiment: str, seed: int, reps: int,
                slots: list[Slot], params: dict[str, str]) -> Path:
    """Write this invocation's plan beside the runs (a new file each time, never overwritten)."""
    d = Path(results) / campaign / "plans"
    d.mkdir(parents=True, exist_ok=True)
    stamp = manifest.new_run_id()
    path = d / f"{stamp}-{experiment}.json"
    with open(path, "x", encoding="utf-8") as fh:
        json.dump({"campaign": campaign, "experiment": experiment, "seed": seed, "reps": reps,
                   "created": manifest.utcnow(), "parameters": params,
                   "slots": [s.to_dict() for s in slots]}, fh, indent=2)
        fh.write("\n")
    return path


def _seconds(m: dict[str, Any]) -> float | None:
    """A complete run's wall time from its manifest (started, finished: UTC ISO stamps)."""
    from datetime import datetime
    if m.get("state") != "complete":
        return None
    try:
        t0, t1 = (datetime.fromisoformat(str(m[k]).replace("Z", "+00:00")) for k in ("started", "finished"))
    except (KeyError, ValueError):
        return None
    s = (t1 - t0).total_seconds()
    return s if s > 0 else None


def run_times(results: Path, experiment: str) -> dict[str, list[float]]:
    """Wall times (s) of the complete runs of `experiment` under `results` (every campaign), per
    result directory (profile)."""
    out: dict[str, list[float]] = {}
    for path in sorted(Path(results).glob(f"*/{experiment}/*/*/manifest.json")):
        try:
            s = _seconds(manifest.load(path.parent))
        except manifest.ManifestError:
            continue
        if s is not None:
            out.setdefault(path.parent.parent.name, []).append(s)
    return out


def _hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def eta(results: Path, experiment: str, slots: list[Slot]) -> str:
    """The campaign's expected duration: each slot to run timed by the median complete run of
    its profile under `results`, else by the experiment's median (a pilot's runs; docs/methodology.md
    "How many boots"). Says so when nothing can time it."""
    import statistics
    todo = [s for s in slots if s.status != "done"]
    if not todo:
        return "ETA: nothing to run (every slot is done)"
    times = run_times(results, experiment)
    every = [t for ts in times.values() for t in ts]
    if not every:
        return (f"ETA: unknown: no complete {experiment} run under {results} to time a slot by "
                f"(a pilot first, e.g. BOOTS=2; then python -m analysis plan RESULTS says how many boots)")
    fallback = statistics.median(every)
    total, guessed = 0.0, 0
    for s in todo:
        name = s.id[len(experiment) + 1:s.id.rfind(".r")]
        if times.get(name):
            total += statistics.median(times[name])
        else:
            total += fallback
            guessed += 1
    return (f"ETA: {_hms(total)} for {len(todo)} slot(s) to run (each: its profile's median complete run under "
            f"{results}, {len(every)} run(s) timed" + (f"; {guessed} slot(s) by the experiment's median "
                                                      f"{_hms(fallback)}, their profile never ran" if guessed else "")
            + "; the stack's boot included)")
