"""The drivers' whole-packet captures on a cluster: a capture container in the pod where the overlay is.

A driver asks for its captures before the stack starts (testbed/runtime/k8s/driver.sh
engine_net_capture), and the render puts each into the pod named as one more native sidecar
(an init container with restartPolicy Always) from the tools image, FIRST among the pod's init
containers: the kubelet starts the next one (the overlay holder, then the NF) only once its
startup probe passes, and that probe waits for dumpcap's file header. So the capture holds every
packet of the pod from before its first one, as Compose's captures on the bridges started before
`up` do (scripts/lib/capture.sh). It runs in the pod's network namespace, on the interfaces named
after their networks (Multus, testbed/runtime/k8s/networks.py), or on eth0 on the pod network
(MULTUS=0: the captures then hold the pod's other traffic too, told apart by address).

    K8S_CAPTURES="n3.pcap=*:n3 leak-gnb.pcap=gnb:n2,n3"   (FILE=POD:INTERFACE[,INTERFACE...][:COUNT])

POD `*` is the whole network, as a Compose capture on its bridge: a capture container in every pod
attached to it, each keeping the packets its pod sends (`-f outbound`: each packet once, at its
sender), merged into FILE when copied out. A named pod's capture keeps both directions (an
overlay endpoint's leak capture: what leaves any of its interfaces, and what comes back).
A COUNT stops each pod's dumpcap after that many packets (`-c`, as run-throughput's capture of
the n3 bridge stops on Compose: iperf3 fills a disk in seconds); a whole network's file then holds
each pod's first COUNT packets, at most COUNT times its pods.
dumpcap writes /captures/FILE on the pod's captures volume (an emptyDir) and its PID beside it;
the driver stops it and copies the file out (testbed/runtime/k8s/stackctl.py capture-hold), then
the stack is deleted. The container's privileges are the `capture` role's (nf-configs/privileges.yaml).
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from testbed import privileges
from testbed.contract import RuntimeOptionError

OPTION = "K8S_CAPTURES"
ROLE = "capture"
VOLUME = "captures"
MOUNT = "/captures"
POD_NETWORK_INTERFACE = "eth0"
WHOLE_NETWORK = "*"
_SPEC = re.compile(r"(?P<file>[A-Za-z0-9][A-Za-z0-9._-]*\.pcap)=(?P<pod>\*|[a-z0-9][-a-z0-9]*):(?P<ifaces>[a-z0-9][-a-z0-9,]*)"
                   r"(?::(?P<count>[1-9][0-9]*))?")
STARTUP_SECONDS = 60            # dumpcap writes its header within a second; more is a broken image


@dataclasses.dataclass(frozen=True)
class Capture:
    file: str
    pod: str
    interfaces: tuple[str, ...]
    count: int | None = None                 # packets per pod, then dumpcap stops (-c)

    @property
    def container(self) -> str:
        """cap-<file without .pcap>, a DNS label (it-01-sbi.pcap -> cap-it01-sbi)."""
        return ("cap-" + re.sub(r"[^a-z0-9]+", "-", self.file[: -len(".pcap")].lower())).strip("-")[:63].rstrip("-")

    @property
    def path(self) -> str:
        return f"{MOUNT}/{self.file}"


def parse(text: str) -> list[Capture]:
    """K8S_CAPTURES as captures; RuntimeOptionError naming the form for a bad entry or a file twice."""
    out: list[Capture] = []
    for entry in text.split():
        m = _SPEC.fullmatch(entry)
        if not m:
            raise RuntimeOptionError(f"{OPTION}: {entry!r} is not FILE.pcap=POD:INTERFACE[,INTERFACE...][:COUNT]")
        cap = Capture(m["file"], m["pod"], tuple(i for i in m["ifaces"].split(",") if i),
                      int(m["count"]) if m["count"] else None)
        if cap.pod == WHOLE_NETWORK and len(cap.interfaces) != 1:
            raise RuntimeOptionError(f"{OPTION}: {entry}: the whole network ({WHOLE_NETWORK}) is one network")
        if any(c.file == cap.file or c.container == cap.container for c in out):
            raise RuntimeOptionError(f"{OPTION}: {cap.file} asked for twice")
        out.append(cap)
    return out


def script(cap: Capture, multus: bool, outbound: bool = False) -> str:
    """dumpcap on the capture's interfaces (eth0 without Multus), whole packets, no promiscuous mode,
    its PID beside the file; the container stays once dumpcap ended (a native sidecar that exits is
    restarted, and a restarted dumpcap would overwrite the file). outbound: what the pod sends only
    (the packet type the kernel gives libpcap's filter: each packet of a whole network once)."""
    ifaces = cap.interfaces if multus else (POD_NETWORK_INTERFACE,)
    args = " ".join(f"-i {i}" + (" -f outbound" if outbound else "") for i in ifaces)
    if cap.count is not None:
        args += f" -c {cap.count}"
    return (f"dumpcap -q -p {args} -w {cap.path} & echo $! >{cap.path}.pid; wait; "
            "exec sleep 2147483647")


def container(cap: Capture, image: str, multus: bool, outbound: bool = False) -> dict[str, Any]:
    role = privileges.role(ROLE)
    return {"name": cap.container, "image": image, "imagePullPolicy": "IfNotPresent",
            "command": ["/bin/sh", "-c", script(cap, multus, outbound)], "restartPolicy": "Always",
            "securityContext": {"capabilities": {"drop": ["ALL"], "add": sorted(role.capabilities)},
                                "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": role.read_only,
                                "privileged": False},
            "volumeMounts": [{"name": VOLUME, "mountPath": MOUNT}],
            "startupProbe": {"exec": {"command": ["test", "-s", cap.path]}, "periodSeconds": 1,
                             "timeoutSeconds": 5, "failureThreshold": STARTUP_SECONDS}}


def pods_of(cap: Capture, networks_of: Mapping[str, Sequence[str]]) -> list[str]:
    """The pods a capture goes into: the one named, or every pod on the network (`*`)."""
    if cap.pod != WHOLE_NETWORK:
        return [cap.pod]
    return sorted(p for p, nets in networks_of.items() if cap.interfaces[0] in nets)


def add(pod_objects: Mapping[str, dict[str, Any]], networks_of: Mapping[str, Sequence[str]],
        captures: list[Capture], image: str, multus: bool) -> None:
    """Each capture's container first in its pods' init containers, the captures volume once per pod;
    RuntimeOptionError for a pod or network the render does not have, or without the tools image.
    networks_of: each pod's networks (its Compose networks)."""
    for cap in captures:
        where = pods_of(cap, networks_of)
        missing = [p for p in where if p not in pod_objects] or ([] if where else [cap.interfaces[0]])
        if missing:
            raise RuntimeOptionError(f"{OPTION}: {cap.file} on {', '.join(missing)}, which the render does not "
                                     f"have (pods: {', '.join(sorted(pod_objects))})")
        if not image:
            raise RuntimeOptionError(f"{OPTION}: no TOOLS_IMAGE to capture with (images/defaults.env)")
        foreign = [i for i in cap.interfaces if cap.pod != WHOLE_NETWORK and i not in networks_of.get(cap.pod, ())]
        if foreign:
            raise RuntimeOptionError(f"{OPTION}: {cap.file}: pod {cap.pod} is not on {', '.join(foreign)} "
                                     f"(its networks: {', '.join(networks_of.get(cap.pod, ()))})")
        for name in where:
            spec = pod_objects[name]["spec"]
            ours = [c for c in spec.get("initContainers", []) if c["name"].startswith("cap-")]
            spec["initContainers"] = (ours + [container(cap, image, multus, cap.pod == WHOLE_NETWORK)]
                                      + spec.get("initContainers", [])[len(ours):])
            vols = spec.setdefault("volumes", [])
            if not any(v["name"] == VOLUME for v in vols):
                vols.append({"name": VOLUME, "emptyDir": {}})
