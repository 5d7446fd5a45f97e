"""UPF security functions (SECFN x IDS), orthogonal to PROFILE: the catalogue section of
profiles.yaml as typed data, checked before anything starts (docs/secfn.md)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import yaml

from testbed import ROOT

CATALOGUE = ROOT / "profiles.yaml"


class SecfnError(ValueError):
    """An unknown function or engine, or an engine that cannot serve the function's mode."""


@dataclass(frozen=True)
class Secfn:
    function: str               # none | nat | ids-nat | ips-nat
    engine: str | None          # suricata | snort | passthrough (None without an engine)
    nat: bool
    mode: str | None            # passive | inline | None
    queue_num: int              # the first queue
    queue_maxlen: int
    fail_open: bool
    queues: int = 1             # queues queue_num .. queue_num + queues - 1 (iptables --queue-balance)

    @property
    def queue_nums(self) -> list[int]:
        return list(range(self.queue_num, self.queue_num + self.queues))

    def to_dict(self) -> dict[str, Any]:
        return {"function": self.function, "engine": self.engine, "nat": self.nat, "mode": self.mode,
                "queue_num": self.queue_num, "queue_maxlen": self.queue_maxlen, "fail_open": self.fail_open,
                "queues": self.queues}


@lru_cache(maxsize=1)
def catalogue() -> dict[str, Any]:
    return yaml.safe_load(CATALOGUE.read_text(encoding="utf-8"))["secfn"]


def resolve(function: str, engine: str | None = None, *, queue_maxlen: int | None = None,
            fail_open: bool | None = None, queues: int | None = None, check_engine: bool = True) -> Secfn:
    """The checked combination; SecfnError lists the valid values. With check_engine, the
    engine module's own `check(sf)` hook (when it has one) may refuse settings it cannot honour."""
    cat = catalogue()
    funcs, engines = cat["functions"], cat["engines"]
    if function not in funcs:
        raise SecfnError(f"unknown SECFN {function!r}; valid: {', '.join(funcs)}")
    mode = funcs[function]["engine_mode"]
    if mode is None:
        engine = None
    else:
        engine = engine or "suricata"
        if engine not in engines:
            raise SecfnError(f"unknown IDS {engine!r}; valid: {', '.join(engines)}")
        if mode not in engines[engine]["modes"]:
            able = [e for e, v in engines.items() if mode in v["modes"]]
            raise SecfnError(f"IDS={engine} cannot run {function} ({mode}); valid for it: {', '.join(able)}")
    q = cat["nfqueue"]
    maxlen = int(q["queue_maxlen"] if queue_maxlen is None else queue_maxlen)
    if maxlen <= 0:
        raise SecfnError(f"QUEUE_MAXLEN must be a positive packet count, got {maxlen}")
    nq = int(q["queues"] if queues is None else queues)
    if not 1 <= nq <= 16:
        raise SecfnError(f"QUEUES must be 1..16 (one engine thread each), got {nq}")
    sf = Secfn(function, engine, bool(funcs[function]["nat"]), mode, int(q["queue_num"]), maxlen,
               bool(q["fail_open"] if fail_open is None else fail_open), nq)
    if check_engine and engine is not None:
        from testbed.secfn import engines
        problem = engines.plugin(engine).check(sf)
        if problem:
            raise SecfnError(problem)
    return sf


def unit(sf: Secfn) -> str:
    """The configuration's name in result paths and campaign slots: `<function>-<engine>`
    (`-none` without an engine), e.g. ips-nat-suricata, nat-none."""
    return f"{sf.function}-{sf.engine or 'none'}"


def parse_unit(text: str) -> tuple[str, str | None]:
    """`ips-nat-suricata` -> ("ips-nat", "suricata"); SecfnError for anything else."""
    cat = catalogue()
    for function in sorted(cat["functions"], key=len, reverse=True):
        if text.startswith(function + "-"):
            engine = text[len(function) + 1:]
            if engine == "none" or engine in cat["engines"]:
                return function, None if engine == "none" else engine
    raise SecfnError(f"unknown configuration {text!r}; valid: {', '.join(all_units())}")


def all_units() -> list[str]:
    """Every valid SECFN x IDS combination (none/nat without an engine)."""
    cat = catalogue()
    out = []
    for function, spec in cat["functions"].items():
        if spec["engine_mode"] is None:
            out.append(f"{function}-none")
        else:
            out += [f"{function}-{e}" for e, v in cat["engines"].items() if spec["engine_mode"] in v["modes"]]
    return out
