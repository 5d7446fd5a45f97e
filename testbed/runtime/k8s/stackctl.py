"""A running cluster stack through Compose's verbs: what the experiment drivers call as DC.

    python -m testbed.runtime.k8s.stackctl --render-dir R [--profile P ...] VERB ...

The drivers reach a stack through the verbs of `docker compose` (scripts/lib/stack.sh, attach.sh,
series.sh: `"${DC[@]}" exec -T SERVICE CMD`, `logs`, `up -d --no-deps SERVICE`, `rm -sf SERVICE`);
testbed/runtime/k8s/driver.sh sets DC to this program, so the same lines reach the pods. A
Compose service is a container of the pod of its network namespace (testbed/runtime/k8s/pods.py):

    exec [-T] SERVICE CMD...            kubectl exec -i POD -c SERVICE -- CMD (replaces this process)
    logs [-f] [--timestamps] [--tail N] [--no-color] [SERVICE...]
                                        each container's log, "SERVICE  | line" as Compose prints it
                                        (one SERVICE with -f: kubectl logs -f, replacing this process)
    up [-d] [--no-deps] SERVICE...      apply the pods of those services (run-sbi's UEs), open their
                                        start gates (pods.py start_gate), wait until they run; UES
                                        from the environment as Compose takes it (render.py UP_VARIABLES)
    rm [-s] [-f] SERVICE...             delete those pods and wait until they are gone
    ps [-a] [-q] [SERVICE...]           the pods' containers that exist (POD/CONTAINER)
    config --services                   every service (container) of the render
    down                                delete the stack's namespace
    capture-hold FILE LOCAL             hold until SIGTERM, then stop dumpcap in each pod capturing
                                        FILE and copy it to LOCAL, merged (testbed/runtime/k8s/capture.py)
    evidence DIR [SERVICE...]           a failed stack's pods (ps.txt, describe.txt) and logs/<service>.log
    watch                               one line per container that ended or turned unready:
                                        NANOS|POD/CONTAINER|die or health_status: unhealthy

`--profile` (Compose's profiles) is taken and ignored: a pod of a profile starts when a driver
asks (`up`). Exit: kubectl's, 2 usage.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from testbed import environment
from testbed.runtime.k8s import apply as apply_mod, capture, pods as pods_mod, render, retry

STOP_SECONDS = 30               # for dumpcap to end its file after SIGTERM
LOG_WORKERS = 8                 # `logs` of every service, a capture's pods: kubectl calls at once
GATE_RETRY_SECONDS = 5          # between tries of a request a loaded API server let fail (retry.py)


def start_seconds() -> int:
    """How long a pod the driver starts (a UE, a reader) may take to run: the stack's own deadline,
    STACK_UP_TIMEOUT, as k8s.sh up takes it (300 s without one). A fixed 120 s was less than the
    guest's loaded cluster took to start UE 1's container, and the attach attempt failed on it."""
    return int(environment.get("STACK_UP_TIMEOUT") or 300)


@dataclasses.dataclass
class Stack:
    render_dir: Path
    namespace: str
    pods: dict[str, dict[str, Any]]             # pod name -> its object
    kubectl: str = "kubectl"

    def pod_of(self, service: str) -> str:
        for name, pod in self.pods.items():
            if service in containers(pod):
                return name
        raise KeyError(f"no container {service} in the pods of {self.render_dir} "
                       f"(services: {', '.join(self.services())})")

    def services(self) -> list[str]:
        return [c for pod in self.pods.values() for c in containers(pod)
                if not c.startswith("cap-") and c != pods_mod.GATE]

    def k(self, *args: str) -> list[str]:
        return [self.kubectl, "-n", self.namespace, *args]


def containers(pod: dict[str, Any]) -> list[str]:
    spec = pod["spec"]
    return [c["name"] for c in spec.get("initContainers", []) + spec["containers"]]


def load(render_dir: Path, kubectl: str = "kubectl") -> Stack:
    objs = render.load_objects(render_dir)
    for f in sorted((render_dir / render.ON_DEMAND).glob("*.yaml")):
        objs += render.load_all(f)
    ns = next(o["metadata"]["name"] for o in objs if o["kind"] == "Namespace")
    return Stack(render_dir, ns, {o["metadata"]["name"]: o for o in objs if o["kind"] == "Pod"}, kubectl)


# ------------------------------------------------------------ command lines (tests/testbed/runtime)

def exec_argv(st: Stack, service: str, command: Sequence[str]) -> list[str]:
    """A command in a service's container, stdin attached (Compose's `exec -T`: no TTY)."""
    return st.k("exec", "-i", st.pod_of(service), "-c", service, "--", *command)


def logs_argv(st: Stack, service: str, *, follow: bool = False, timestamps: bool = False,
              tail: str | None = None) -> list[str]:
    return st.k("logs", st.pod_of(service), "-c", service, *(["-f"] if follow else []),
                *(["--timestamps"] if timestamps else []), *([f"--tail={tail}"] if tail is not None else []))


def running_argv(st: Stack, pod: str) -> list[str]:
    """Wait until a pod's containers were started (its phase Running), at most start_seconds()."""
    return st.k("wait", "--for=jsonpath={.status.phase}=Running", f"pod/{pod}", f"--timeout={start_seconds()}s")


class Gate(NamedTuple):
    """The kubectl lines that open a pod's start gate (testbed/runtime/k8s/pods.py start_gate)."""
    wait: list[str]         # until the gate container runs (its holder started), at most start_seconds()
    open: list[str]         # make the file it waits for
    ended: list[str]        # the gate container's exit code once it ended (empty before)


def gate_argvs(st: Stack, pod: str) -> Gate | None:
    """Opening a pod's start gate as k8s.sh up does; None for a pod without one (no holder)."""
    given = (st.pods[pod]["metadata"].get("annotations") or {}).get(pods_mod.GATE_ANNOTATION)
    if not given:
        return None
    gate = json.loads(given)
    status = f'.status.initContainerStatuses[?(@.name=="{gate["container"]}")]'
    return Gate(st.k("wait", f"--for=jsonpath={{{status}.started}}=true", f"pod/{pod}", f"--timeout={start_seconds()}s"),
                st.k("exec", pod, "-c", gate["container"], "--", *gate["open"]),
                st.k("get", f"pod/{pod}", "-o", f"jsonpath={{{status}.state.terminated.exitCode}}"))


def delete_argv(st: Stack, pod: str) -> list[str]:
    return st.k("delete", "pod", pod, "--ignore-not-found", "--wait=true")


def down_argv(st: Stack) -> list[str]:
    return [st.kubectl, "delete", "namespace", st.namespace, "--ignore-not-found", "--wait=true"]


def capture_stop_argv(st: Stack, pod: str, container: str, remote: str) -> list[str]:
    """SIGTERM to the capture container's dumpcap (it ends its file; a background job of sh ignores
    SIGINT), waiting until it exited; exit 1 naming it if it still runs (its file is not whole yet).
    Idempotent: dumpcap once ended, it exits 0 at once."""
    script = (f'p="$(cat {remote}.pid)"; kill -TERM "$p" 2>/dev/null; n=0; '
              f'while kill -0 "$p" 2>/dev/null && [ $n -lt {STOP_SECONDS * 10} ]; do sleep 0.1; n=$((n+1)); done; '
              f'if kill -0 "$p" 2>/dev/null; then echo "dumpcap (pid $p) still runs {STOP_SECONDS} s after TERM" >&2; '
              'exit 1; fi')
    return st.k("exec", pod, "-c", container, "--", "/bin/sh", "-c", script)


def capture_copy_argv(st: Stack, pod: str, container: str, remote: str) -> list[str]:
    """The capture file on stdout (cat: no tar needed in the image, as `kubectl cp` would)."""
    return st.k("exec", pod, "-c", container, "--", "cat", remote)


# ------------------------------------------------------------ verbs

def _exec(argv: list[str]) -> int:
    sys.stdout.flush()
    os.execvp(argv[0], argv)
    return 127                                   # not reached


def _flags(args: list[str], with_value: Sequence[str] = ()) -> tuple[dict[str, str], list[str]]:
    """Leading Compose flags (-f, --tail N, --tail=N) and the rest."""
    flags: dict[str, str] = {}
    i = 0
    while i < len(args) and args[i].startswith("-"):
        name, eq, value = args[i].partition("=")
        if name in with_value and not eq:
            i += 1
            value = args[i] if i < len(args) else ""
        flags[name] = value
        i += 1
    return flags, args[i:]


def logs(st: Stack, args: list[str]) -> int:
    flags, services = _flags(args, ("--tail", "-n"))
    follow = "-f" in flags or "--follow" in flags
    stamps = "-t" in flags or "--timestamps" in flags
    tail = flags.get("--tail", flags.get("-n"))
    if follow and len(services) == 1:
        return _exec(logs_argv(st, services[0], follow=True, timestamps=stamps, tail=tail))
    width = max((len(s) for s in st.services()), default=0)
    rc = 0
    wanted = services or st.services()

    def one(svc: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(logs_argv(st, svc, timestamps=stamps, tail=tail), capture_output=True, text=True,
                              check=False)
    # the API server answers the calls at once (one after the other, a loaded guest cluster took
    # over the drivers' 120 s for a stack's 20-odd containers: scripts/lib/stack.sh stack_logs);
    # printed in the services' order
    with concurrent.futures.ThreadPoolExecutor(max_workers=LOG_WORKERS) as pool:
        results = list(pool.map(one, wanted))
    for svc, res in zip(wanted, results):
        if res.returncode != 0 and services:
            sys.stderr.write(res.stderr)
            rc = res.returncode
        for line in res.stdout.splitlines():
            print(f"{svc:<{width}}  | {line}")
    return rc


def up(st: Stack, args: list[str]) -> int:
    _, services = _flags(args)
    pods = list(dict.fromkeys(st.pod_of(s) for s in services))
    items = [st.pods[p] for p in pods]
    # Compose interpolates these at this `up` from the caller's environment (render.py UP_VARIABLES,
    # the probes' timing: run-sbi starts a UE with UE_HEALTH_START_INTERVAL past its attach)
    render.up_values(items, environment.mapping())
    why = apply_mod.apply(st.k("apply", "-f", "-"), json.dumps({"apiVersion": "v1", "kind": "List", "items": items}),
                          f"pod {', '.join(pods)}", start_seconds())
    if why:
        print(f"error: applying pod {', '.join(pods)}: {why}", file=sys.stderr)
        return 1
    # as `docker compose up -d` returns with the containers started: the driver reads their logs
    # next (the driver starts a service once its dependencies are up: its gate opens at once)
    for pod in pods:
        gate = gate_argvs(st, pod)
        rc = _open_gate(gate) if gate else 0
        rc = rc or subprocess.run(running_argv(st, pod), check=False).returncode
        if rc != 0:
            return rc
    return 0


def _open_gate(gate: Gate) -> int:
    """Wait for the gate container, then its exec, tried again within the same start_seconds(): it
    goes through the API server to the kubelet, which a loaded cluster lets time out; one whose
    answer was lost may have run, and the gate container then ended with exit 0 (k8s.sh open_gate
    does the same)."""
    end = time.monotonic() + start_seconds()
    rc = subprocess.run(gate.wait, check=False).returncode
    if rc != 0:
        return rc

    def attempt() -> str:
        res = subprocess.run(gate.open, check=False)
        return "" if res.returncode == 0 else str(res.returncode)

    def ended() -> bool:
        return subprocess.run(gate.ended, capture_output=True, text=True, check=False).stdout.strip() == "0"
    return int(retry.until(attempt, end - time.monotonic(), GATE_RETRY_SECONDS, done=ended) or 0)


def rm(st: Stack, args: list[str]) -> int:
    _, services = _flags(args)
    rc = 0
    for pod in dict.fromkeys(st.pod_of(s) for s in services):
        rc = subprocess.run(delete_argv(st, pod), check=False).returncode or rc
    return rc


def ps(st: Stack, args: list[str]) -> int:
    _, services = _flags(args, ("--format",))
    res = subprocess.run(st.k("get", "pods", "-o", "json"), capture_output=True, text=True, check=False)
    if res.returncode != 0:
        sys.stderr.write(res.stderr)
        return res.returncode
    found = {i["metadata"]["name"] for i in json.loads(res.stdout).get("items", [])}
    for svc in services or st.services():
        pod = st.pod_of(svc)
        if pod in found:
            print(f"{pod}/{svc}")
    return 0


def capture_pods(st: Stack, file: str) -> list[str]:
    """The pods holding the capture container of FILE (capture.py: one, or every pod on a network)."""
    name = capture.Capture(file, "", ()).container
    return [p for p, obj in st.pods.items() if name in containers(obj)]


def merge_argv(out: Path, parts: Sequence[Path]) -> list[str]:
    """The pods' captures of one network as one file, in time order (what each pod sent)."""
    return ["mergecap", "-w", str(out), *map(str, parts)]


def capture_hold(st: Stack, file: str, local: Path) -> int:
    """Wait for SIGTERM (scripts/lib/capture.sh capture_stop), then end the capture in each pod and
    copy it out into LOCAL (several pods: merged)."""
    pods = capture_pods(st, file)
    if not pods:
        print(f"error: no pod of {st.render_dir} captures {file}", file=sys.stderr)
        return 1
    print(f"holding {file} of {', '.join(pods)}", file=sys.stderr, flush=True)
    while not _STOP.wait(3600):
        pass
    remote, container = f"{capture.MOUNT}/{file}", capture.Capture(file, "", ()).container
    parts = [local.with_name(f".{local.name}.{pod}") for pod in pods]

    def stop(pod: str) -> str:
        """Empty once the pod's dumpcap has ended, else why not: the exec is tried again within half the
        stack's deadline (the copies take the rest of the driver's grace), as a loaded API server
        lets one time out; a file copied while dumpcap still writes is cut short (a guest run's
        leak-gnb.pcap ended mid-packet at 160 KiB and made the run invalid)."""
        def attempt() -> str:
            res = subprocess.run(capture_stop_argv(st, pod, container, remote), capture_output=True, text=True,
                                 check=False)
            return "" if res.returncode == 0 else (res.stderr.strip().splitlines()[-1:] or [f"exit {res.returncode}"])[0]

        def retrying(why: str) -> None:
            print(f"{file}: stopping the capture in pod {pod} failed ({why}); trying again", file=sys.stderr, flush=True)
        return retry.until(attempt, start_seconds() / 2, GATE_RETRY_SECONDS, retrying=retrying)

    def copy(pod: str, part: Path) -> int:
        with open(part, "wb") as fh:
            return subprocess.run(capture_copy_argv(st, pod, container, remote), stdout=fh, check=False).returncode
    # every pod's dumpcap stopped at once, then every file copied at once: one exec after the other
    # (two per pod) took the guest's loaded cluster more than the driver's 300 s for run-sbi's 12
    # pods, and the capture was lost (scripts/lib/capture.sh's grace)
    with concurrent.futures.ThreadPoolExecutor(max_workers=LOG_WORKERS) as pool:
        unstopped = {pod: why for pod, why in zip(pods, pool.map(stop, pods)) if why}
        rc = next((r for r in pool.map(copy, pods, parts) if r != 0), 0)
    if rc == 0 and len(parts) > 1:
        rc = subprocess.run(merge_argv(local, parts), check=False).returncode
    elif rc == 0:
        parts[0].replace(local)
    for part in parts:
        part.unlink(missing_ok=True)
    for pod, why in unstopped.items():
        # copied all the same, as evidence: the validity check reads the file and says it is cut
        print(f"error: {file}: the capture in pod {pod} did not end ({why}); its copy may be cut short",
              file=sys.stderr, flush=True)
    return rc or (1 if unstopped else 0)


def evidence(st: Stack, out: Path, services: list[str]) -> int:
    (out / "logs").mkdir(parents=True, exist_ok=True)
    for name, argv in (("ps.txt", st.k("get", "pods", "-o", "wide")), ("describe.txt", st.k("describe", "pods"))):
        with open(out / name, "w", encoding="utf-8") as fh:
            subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, check=False, timeout=120)
    for svc in services or st.services():
        with open(out / "logs" / f"{svc}.log", "w", encoding="utf-8") as fh:
            subprocess.run(logs_argv(st, svc, timestamps=True), stdout=fh, stderr=subprocess.STDOUT, check=False,
                           timeout=120)
    return 0


def lost(before: dict[str, Any] | None, after: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(POD/CONTAINER, ACTION) for each container of a pod that ended (die) or turned unready
    (health_status: unhealthy) between two states of the pod, in docker events' words
    (scripts/lib/watch.sh _overlay_lost)."""
    def statuses(p: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
        st = (p or {}).get("status") or {}
        return {c["name"]: c for c in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or [])}
    old, new = statuses(before), statuses(after)
    pod = after["metadata"]["name"]
    for name, c in sorted(new.items()):
        if name == pods_mod.GATE:         # its end is the programs' start, not a loss
            continue
        o = old.get(name, {})
        if c.get("restartCount", 0) > o.get("restartCount", 0) or ("terminated" in (c.get("state") or {})
                                                                 and "terminated" not in (o.get("state") or {})):
            yield f"{pod}/{name}", "die"
        elif o.get("ready") and not c.get("ready") and "running" in (c.get("state") or {}):
            yield f"{pod}/{name}", "health_status: unhealthy"


def watch(st: Stack) -> int:
    proc = subprocess.Popen(st.k("get", "pods", "--watch", "-o", "json"), stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    seen: dict[str, dict[str, Any]] = {}
    decoder, buf = json.JSONDecoder(), ""
    for chunk in iter(lambda: proc.stdout.readline() if proc.stdout else "", ""):
        buf += chunk
        while buf.strip():
            try:
                obj, end = decoder.raw_decode(buf.lstrip())
            except ValueError:
                break
            buf = buf.lstrip()[end:]
            name = obj["metadata"]["name"]
            for who, action in lost(seen.get(name), obj) if name in seen else ():
                print(f"{time.time_ns()}|{who}|{action}", flush=True)
            seen[name] = obj
    return proc.wait()


_STOP = threading.Event()           # capture-hold's SIGTERM (or SIGINT), taken from the start


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "capture-hold" in args:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: _STOP.set())
    render_dir = None
    while args and args[0] in ("--render-dir", "--profile"):
        if len(args) < 2:
            break
        if args[0] == "--render-dir":
            render_dir = Path(args[1])
        args = args[2:]
    if render_dir is None or not args:
        print(__doc__, file=sys.stderr)
        return 2
    st = load(render_dir, environment.get("KUBECTL", "kubectl"))
    verb, rest = args[0], args[1:]
    try:
        if verb == "exec":
            _, rest = _flags(rest)
            return _exec(exec_argv(st, rest[0], rest[1:]))
        if verb == "config" and rest == ["--services"]:
            print("\n".join(st.services()))
            return 0
        if verb == "down":
            return subprocess.run(down_argv(st), check=False).returncode
        if verb == "capture-hold" and len(rest) == 2:
            return capture_hold(st, rest[0], Path(rest[1]))
        if verb == "evidence" and rest:
            return evidence(st, Path(rest[0]), rest[1:])
        if verb == "watch":
            return watch(st)
        verbs = {"logs": logs, "up": up, "rm": rm, "ps": ps}
        if verb in verbs:
            return verbs[verb](st, rest)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 1
    print(f"error: stackctl: {verb} {' '.join(rest)}: not a verb it speaks (see its --help)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
