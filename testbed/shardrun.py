"""Run a sharded campaign's boots on a cluster (docs/kubernetes.md "Sharded campaigns").

One thread per shard; the boots to run wait in one queue in the plan's seeded order, and a shard
that is free takes the next one (testbed/shards.py `assign` simulates the same). A boot is a fresh
stack: the experiment's driver (scripts/run-n3.sh, run-sbi.sh) with ENGINE=k8s, the shard's
namespace and placement (every NF on its node group) renders and brings it up itself, its
captures in the pods, and tears it down; another program (--driver) runs against a stack rendered
and brought up for it (`k8s.sh up`). `k8s.sh down` follows every boot whatever happened. The drivers write into the
one results tree (RESULTS/<campaign>/<experiment>/<profile>/<run>/), each shard's output goes to
RESULTS/<campaign>/shards/s<k>.log, the terminal gets one line per boot started and ended.

Outcomes as in scripts/campaign.sh: a driver's exit 2 (its parameters rejected) or 130
(interrupted) stops every shard after its current boot; any other failure counts and the campaign
goes on (re-run to redo it).
"""
from __future__ import annotations

import collections
import dataclasses
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from testbed import ROOT, campaign, environment
from testbed.shards import Shard

K8S_SH = ROOT / "testbed" / "runtime" / "k8s" / "k8s.sh"
UP_REFUSED = 3      # k8s.sh up's exit when its preflight refuses (or the namespace is taken)
STOPS = (2, 130)                      # a driver's exits that end the whole campaign


@dataclasses.dataclass
class Context:
    experiment: str
    campaign: str
    results: Path
    state: Path                       # the campaign's state dir; shard k uses state/shards/s<k>
    stack_slot: str                   # the campaign's address block (testbed/instance.py), every shard's
    blocks: int
    params: Mapping[str, str]         # the experiment's parameters, given to every driver
    driver: Path
    own_stack: bool = False           # the driver renders and brings up its stack itself (ENGINE=k8s, the
                                      # shard's namespace and placement), with its captures in the pods


@dataclasses.dataclass
class Outcome:
    ran: int = 0
    failed: int = 0
    interrupted: int = 0              # boots ended by an interrupt (exit 130): neither done nor failed
    rejected: int = 0                 # boots whose driver rejected its parameters (exit 2)
    stop: int = 0                     # 0, or the exit that stopped the campaign

    def summary(self) -> str:
        """The campaign's last line: every boot it began, each counted once."""
        done = self.ran - self.failed - self.interrupted - self.rejected
        parts = [f"{self.ran} boot(s)", f"{done} done", f"{self.failed} failed or invalid"]
        parts += [f"{self.interrupted} interrupted"] if self.interrupted else []
        parts += [f"{self.rejected} rejected their parameters"] if self.rejected else []
        return ", ".join(parts)


class Runner:
    def __init__(self, ctx: Context, shards: Sequence[Shard], todo: Sequence[campaign.Slot]) -> None:
        self.ctx = ctx
        self.shards = list(shards)
        self.queue = collections.deque(todo)
        self.total = len(todo)
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.current: dict[int, subprocess.Popen[bytes]] = {}
        self.signalled: set[int] = set()     # shards whose step the interrupt signalled
        self.outcome = Outcome()
        self.broken: set[int] = set()
        self.logs = ctx.results / ctx.campaign / "shards"

    def say(self, text: str) -> None:
        with self.lock:
            print(f"{time.strftime('%H:%M:%S', time.gmtime())} {text}", file=sys.stderr, flush=True)

    def state_of(self, shard: Shard) -> Path:
        """Shard k's own state dir (its render, its lock), sharing the campaign's keys."""
        d = self.ctx.state / "shards" / f"s{shard.index}"
        d.mkdir(parents=True, exist_ok=True)
        keys = d / "keys"
        if not keys.exists() and not keys.is_symlink():
            keys.symlink_to((self.ctx.state / "keys").resolve())
        return d

    def _step(self, shard: Shard, cmd: list[str], env: Mapping[str, str], log: Path,
              capture: bool = False) -> tuple[int, str]:
        """Run one step of a boot, its output into the shard's log (stdout returned with capture)."""
        with open(log, "ab") as fh:
            fh.write(f"\n$ {' '.join(cmd)}\n".encode())
            fh.flush()
            proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(env), stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE if capture else fh, stderr=fh)
            with self.lock:
                self.current[shard.index] = proc
            out, _ = proc.communicate()
            with self.lock:
                self.current.pop(shard.index, None)
        return proc.returncode, (out or b"").decode().strip()

    def boot(self, shard: Shard, slot: campaign.Slot) -> int:
        ctx = self.ctx
        state = self.state_of(shard)
        log = self.logs / f"s{shard.index}.log"
        env = {**environment.mapping(), "PYTHON": sys.executable, "STATE": str(state), "STACK_SLOT": ctx.stack_slot, "ENGINE": "k8s",
               "K8S_NAMESPACE": shard.namespace, "PLACEMENT": shard.placement}
        plane = ctx.params.get("PLANE", "")
        run_env = {**env, **{k: v for k, v in ctx.params.items() if v},
                   "PROFILE": slot.profile, "CAMPAIGN": ctx.campaign, "SLOT": slot.id,
                   "BOOT": str(slot.rep), "BOOTS": str(ctx.blocks), "RESULTS": str(ctx.results)}
        if ctx.own_stack:
            try:
                rc, _ = self._step(shard, [str(ctx.driver)], run_env, log)
            finally:
                down, _ = self._step(shard, ["bash", str(K8S_SH), "down", shard.namespace], env, log)
            return self._after(shard, log, rc, down)
        rc, render_dir = self._step(shard, [sys.executable, "-m", "testbed", "render", "--profile", slot.profile,
                                            *(["--plane", plane] if plane else []), "--engine", "k8s",
                                            "--state", str(state), "--placement", shard.placement,
                                            "--k8s-namespace", shard.namespace, "--quiet"], env, log,
                                    capture=True)
        if rc != 0:
            return rc
        try:
            rc, _ = self._step(shard, ["bash", str(K8S_SH), "up", render_dir], env, log)
            if rc == UP_REFUSED:
                rc = 2      # the cluster refused it before applying anything: bad input, as a driver's exit 2
            elif rc == 0 and self.stopping.is_set():
                rc = 130
            elif rc == 0:
                rc, _ = self._step(shard, [str(ctx.driver)], {**run_env, "K8S_RENDER_DIR": render_dir}, log)
        finally:
            down, _ = self._step(shard, ["bash", str(K8S_SH), "down", shard.namespace], env, log)
        return self._after(shard, log, rc, down)

    def _after(self, shard: Shard, log: Path, rc: int, down: int) -> int:
        if down != 0:
            # the next stack of this shard would find the namespace still there (k8s.sh up refuses it)
            self.say(f"s{shard.index}: deleting namespace {shard.namespace} failed (see {log}); "
                     "this shard takes no more boots")
            self.broken.add(shard.index)
            rc = rc or 1
        return rc

    def work(self, shard: Shard) -> None:
        while not self.stopping.is_set() and shard.index not in self.broken:
            with self.lock:
                if not self.queue:
                    return
                slot = self.queue.popleft()
                k = self.total - len(self.queue)
            self.say(f"[{k}/{self.total}] s{shard.index} ({shard.group.text()}): {slot.id} ({slot.status})")
            rc = self.boot(shard, slot)
            with self.lock:
                if rc != 0 and shard.index in self.signalled:
                    rc = 130        # ended by the campaign's interrupt, however its driver exited
                self.outcome.ran += 1
                if rc in STOPS:
                    self.outcome.stop = self.outcome.stop or rc
                    if rc == 130:
                        self.outcome.interrupted += 1
                    else:
                        self.outcome.rejected += 1
                elif rc != 0:
                    self.outcome.failed += 1
            if rc in STOPS:
                self.stopping.set()
            self.say(f"s{shard.index}: {slot.id} " + ("done" if rc == 0 else f"exit {rc}")
                     + ("" if rc == 0 else f" (s{shard.index}.log)"))

    def interrupt(self) -> None:
        self.stopping.set()
        with self.lock:
            self.outcome.stop = self.outcome.stop or 130
            procs = list(self.current.values())
            self.signalled.update(self.current)
        for p in procs:
            p.send_signal(signal.SIGTERM)

    def run(self) -> Outcome:
        self.logs.mkdir(parents=True, exist_ok=True)

        def on_term(signum: int, frame: object) -> None:
            raise KeyboardInterrupt    # as Ctrl-C: end the boots under way, delete their stacks

        signal.signal(signal.SIGTERM, on_term)
        # the main thread waits on an Event, never in Thread.join: a KeyboardInterrupt raised in
        # join (CPython 3.11 threading._wait_for_tstate_lock) marks a still-running thread stopped,
        # and the process then exited before that shard deleted its stack (seen once in CI)
        left = [len(self.shards)]
        finished = threading.Event()
        if not self.shards:
            finished.set()

        def shard_thread(shard: Shard) -> None:
            try:
                self.work(shard)
            finally:
                with self.lock:
                    left[0] -= 1
                    if left[0] == 0:
                        finished.set()
        threads = [threading.Thread(target=shard_thread, args=(s,), name=f"shard-{s.index}") for s in self.shards]
        for t in threads:
            t.start()
        try:
            while not finished.wait(0.2):
                pass
        except KeyboardInterrupt:
            self.say("interrupted: ending the boots under way (their stacks are deleted); resume with the same command")
            self.interrupt()
            finished.wait()
        for t in threads:
            t.join()
        return self.outcome
