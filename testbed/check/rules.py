"""The checks of `make check-config` (see testbed/check/__init__.py for what and why).

Every check appends Finding(file, key, message, kind); nothing stops at the first problem.
"""
from __future__ import annotations

import ipaddress
from collections.abc import Callable
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from testbed import images, instance, planes, registry
from testbed.stack import holder_service, netns_service
from testbed.check import Finding
from testbed.check import compose_model as cm
from testbed.ran.oai import rules as oai_rules
from testbed.check import privilege_rules
from testbed.render import compose_env as cenv
from testbed.render import layout

OPEN5GS_SECTIONS = ("nrf", "scp", "ausf", "udm", "udr", "pcf", "bsf", "nssf", "amf", "smf", "upf")


def image_defaults() -> dict[str, str]:
    """The image names scripts/lib/compose.sh exports (testbed/images.py: images/defaults.env with
    each built image's content hash; the environment's values win)."""
    try:
        return images.resolve()
    except images.ImageError:
        return {}


class _PlmnRef:
    """stack.yaml's PLMN, TAC, slices and DNN, and the check of one config value against each."""

    def __init__(self, v: dict[str, Any], add: Callable[[Path, str, str, str], None]) -> None:
        self.mcc, self.mnc = str(v["plmn"]["mcc"]), str(v["plmn"]["mnc"])
        self.tac_value = int(v["tac"])
        self.slices = [(int(s["sst"]), s.get("sd")) for s in v["s_nssai"]]
        self.dnn_value = str(v["dnn"])
        self.text = f"stack.yaml plmn {self.mcc}/{self.mnc}, tac {self.tac_value}, s_nssai {v['s_nssai']}, dnn {self.dnn_value}"
        self.add = add

    def plmn(self, path: Path, key: str, pid: Any) -> None:
        pid = pid or {}
        if (str(pid.get("mcc")), str(pid.get("mnc"))) != (self.mcc, self.mnc):
            self.add(path, key, f"PLMN {pid.get('mcc')}/{pid.get('mnc')} differs from {self.text}", "plmn")

    def tac(self, path: Path, key: str, t: Any) -> None:
        if t is None or int(t) != self.tac_value:
            self.add(path, key, f"TAC {t} differs from {self.text}", "plmn")

    def snssai(self, path: Path, key: str, lst: Any) -> None:
        got = [(int(s.get("sst", -1)), s.get("sd")) for s in (lst if isinstance(lst, list) else [lst]) if s]
        if sorted(got, key=str) != sorted(self.slices, key=str):
            self.add(path, key, f"S-NSSAI {lst} differs from {self.text}", "plmn")

    def dnn(self, path: Path, key: str, d: Any) -> None:
        if str(d) != self.dnn_value:
            self.add(path, key, f"DNN {d} differs from {self.text}", "plmn")


class Checker:
    def __init__(self, render_dir: Path, stack_file: Path, keys_root: Path | None) -> None:
        self.render_dir = render_dir
        self.stack_file = stack_file
        self.keys_root = keys_root
        self.findings: list[Finding] = []
        env_path = render_dir / layout.COMPOSE_ENV
        self.env = {**image_defaults(), **cenv.parse_env(env_path.read_text(encoding="utf-8"))}
        self.files = [Path(line) for line in
                      (render_dir / layout.COMPOSE_FILES).read_text(encoding="utf-8").split("\n") if line.strip()]
        self.project_dir = self.files[0].parent if self.files else render_dir
        self.model = cm.load(self.files, self.env)
        # the values of this stack: moved to its own address block beside another (testbed/instance.py)
        self.values: dict[str, Any] = instance.shift(yaml.safe_load(stack_file.read_text(encoding="utf-8")) or {},
                                                     instance.env_slot())
        self.configs: dict[str, list[tuple[str, Path, Any]]] = {}   # kind -> [(service, file, data)]

    # --- helpers --------------------------------------------------------------------------
    def add(self, file: Path, key: str, message: str, kind: str) -> None:
        self.findings.append(Finding(Path(file), key, message, kind))

    def svc_file(self, service: str, key: str | None = None) -> Path:
        return self.model.file_of("services", service, key) if key else self.model.file_of("services", service)

    def host_path(self, source: str) -> Path:
        p = Path(source).expanduser()
        return p if p.is_absolute() else (self.project_dir / p).resolve()

    def netns_names(self, service: str, network: str) -> tuple[set[str], set[str]]:
        """(IPv4 addresses, DNS names) of the namespace `service` runs in, on `network`."""
        owner = cm.netns_owner(self.model.services, service)
        spec = cm.service_networks(self.model.services.get(owner, {})).get(network)
        if spec is None:
            return set(), set()
        ips = {str(spec["ipv4_address"])} if spec.get("ipv4_address") else set()
        names = {owner} | {str(a) for a in spec.get("aliases") or []}
        return ips, names

    def expect(self, file: Path, key: str, value: Any, service: str | None, network: str, what: str) -> None:
        if service is None:
            self.add(file, key, f"{what} {value}: no service runs that peer, so it cannot be checked", "reference")
            return
        ips, names = self.netns_names(service, network)
        if str(value) in ips or str(value) in names:
            return
        owner = cm.netns_owner(self.model.services, service)
        if not ips and not names:
            msg = f"{what} {value}: service {owner} is not on network {network}"
        else:
            msg = f"{what} is {value}, but {owner} has {', '.join(sorted(ips)) or '(no fixed address)'} on {network}"
        self.add(file, key, msg, "address")

    # --- stack.yaml -----------------------------------------------------------------------
    def check_stack(self) -> None:
        nets: dict[str, Any] = {}
        for name, spec in (self.values.get("networks") or {}).items():
            try:
                nets[name] = ipaddress.ip_network(spec["subnet"])
            except (KeyError, ValueError) as exc:
                self.add(self.stack_file, f"networks.{name}.subnet", f"invalid subnet: {exc}", "subnet")
        seen: dict[tuple[str, str], str] = {}
        for name, spec in (self.values.get("networks") or {}).items():
            if name in nets and spec.get("gateway"):
                seen[(name, str(spec["gateway"]))] = f"the {name} gateway"
        for node, spec in (self.values.get("nodes") or {}).items():
            for net, addr in (spec.get("networks") or {}).items():
                key = f"nodes.{node}.networks.{net}"
                if net not in nets:
                    self.add(self.stack_file, key, f"network {net} is not defined under networks", "reference")
                    continue
                try:
                    ip = ipaddress.ip_address(str(addr))
                except ValueError:
                    self.add(self.stack_file, key, f"{addr!r} is not an IPv4 address", "subnet")
                    continue
                if ip not in nets[net]:
                    self.add(self.stack_file, key, f"{addr} is outside the {net} subnet {nets[net]}", "subnet")
                other = seen.get((net, str(ip)))
                if other:
                    self.add(self.stack_file, key, f"{addr} on {net} is already used by {other}", "duplicate")
                else:
                    seen[(net, str(ip))] = f"node {node}"

    # --- compose --------------------------------------------------------------------------
    def check_compose(self) -> None:
        for p in self.model.problems:
            self.add(p.file, p.key, p.message, "syntax")
        subnets: dict[str, ipaddress.IPv4Network] = {}
        used: dict[tuple[str, str], str] = {}
        for name, netspec in self.model.networks.items():
            f = self.model.file_of("networks", name)
            for i, cfg in enumerate(((netspec.get("ipam") or {}).get("config")) or []):
                key = f"networks.{name}.ipam.config[{i}]"
                try:
                    subnet = ipaddress.ip_network(str(cfg.get("subnet")))
                except ValueError as exc:
                    self.add(f, f"{key}.subnet", f"invalid subnet: {exc}", "subnet")
                    continue
                subnets[name] = subnet  # type: ignore[assignment]  # IPv6 subnets never appear here
                gw = cfg.get("gateway")
                if gw:
                    try:
                        if ipaddress.ip_address(str(gw)) not in subnet:
                            self.add(f, f"{key}.gateway", f"gateway {gw} is outside {subnet}", "subnet")
                        used[(name, str(gw))] = f"the {name} gateway"
                    except ValueError:
                        self.add(f, f"{key}.gateway", f"{gw!r} is not an IP address", "subnet")
        for svc_name, svc in self.model.services.items():
            for net, spec in cm.service_networks(svc).items():
                f = self.svc_file(svc_name, "networks")
                key = f"services.{svc_name}.networks.{net}"
                if net not in self.model.networks:
                    self.add(f, key, f"network {net} is not defined in the compose files", "reference")
                    continue
                addr = spec.get("ipv4_address")
                if not addr:
                    continue
                key += ".ipv4_address"
                try:
                    ip = ipaddress.ip_address(str(addr))
                except ValueError:
                    self.add(f, key, f"{addr!r} is not an IPv4 address", "subnet")
                    continue
                if net in subnets and ip not in subnets[net]:
                    self.add(f, key, f"{addr} is outside the {net} subnet {subnets[net]}", "subnet")
                other = used.get((net, str(ip)))
                if other:
                    self.add(f, key, f"{addr} on {net} is already used by {other}", "duplicate")
                else:
                    used[(net, str(ip))] = f"service {svc_name}"
            mode = str(svc.get("network_mode") or "")
            if mode.startswith("service:") and mode.split(":", 1)[1] not in self.model.services:
                self.add(self.svc_file(svc_name, "network_mode"), f"services.{svc_name}.network_mode",
                         f"{mode}: no such service", "reference")

    def check_privileges(self) -> None:
        privilege_rules.check(self.model, self.env.get("PROTOCOL", "none"), self.add)

    def check_compose_vs_stack(self) -> None:
        services = self.model.services
        ran_variant = self.env.get("RAN") or "ueransim"
        for node, spec in (self.values.get("nodes") or {}).items():
            if spec.get("ran") is not None and ran_variant not in spec["ran"]:
                continue              # a node of another RAN variant (testbed/ran/)
            found = self.node_service(node)
            if found is None:
                if not spec.get("optional"):
                    self.add(self.stack_file, f"nodes.{node}",
                             f"no compose service {netns_service(node)}, {holder_service(node)} "
                             f"or {node} for this node", "reference")
                continue
            svc = cm.netns_owner(services, found)    # the namespace's networks are its owner's
            want = {n: str(a) for n, a in (spec.get("networks") or {}).items()}
            have = cm.service_networks(services[svc])
            f = self.svc_file(svc, "networks")
            for net, addr in want.items():
                if net not in have:
                    self.add(f, f"services.{svc}.networks",
                             f"not on network {net}, where nf-configs/stack.yaml gives {node} {addr}", "address")
                elif str(have[net].get("ipv4_address", "")) != addr:
                    self.add(f, f"services.{svc}.networks.{net}.ipv4_address",
                             f"{have[net].get('ipv4_address') or '(none)'} differs from stack.yaml nodes.{node}.networks.{net} = {addr}",
                             "address")
            for net in have:
                if net not in want:
                    self.add(f, f"services.{svc}.networks.{net}",
                             f"{node} is on network {net} in compose but not in stack.yaml", "address")

    def check_mounts(self) -> None:
        for svc_name, svc in self.model.services.items():
            targets = set()
            for i, vol in enumerate(svc.get("volumes") or []):
                targets.add(cm.volume_target(vol))
                src = cm.volume_source(vol)
                if src is None or not (src.startswith(("/", ".", "~"))):
                    continue
                if not self.host_path(src).exists():
                    self.add(self.svc_file(svc_name, "volumes"), f"services.{svc_name}.volumes[{i}]",
                             f"mounted file {src} does not exist", "mount")
            env_files = svc.get("env_file") or []
            for i, ef in enumerate([env_files] if isinstance(env_files, str) else env_files):
                path = ef.get("path") if isinstance(ef, dict) else ef
                if path and not self.host_path(str(path)).exists():
                    self.add(self.svc_file(svc_name, "env_file"), f"services.{svc_name}.env_file[{i}]",
                             f"env file {path} does not exist", "mount")
            cmd = svc.get("command") or []
            if isinstance(cmd, list):
                for i, arg in enumerate(cmd[:-1]):
                    if arg in ("-c", "--config") and str(cmd[i + 1]).startswith("/etc/") \
                            and cmd[i + 1] not in targets:
                        self.add(self.svc_file(svc_name, "command"), f"services.{svc_name}.command",
                                 f"config {cmd[i + 1]} is not mounted into the container", "mount")

    def check_dependencies(self) -> None:
        services = self.model.services
        graph: dict[str, list[str]] = {}
        for name, svc in services.items():
            deps = cm.depends_on(svc)
            for d in deps:
                if d not in services:
                    self.add(self.svc_file(name, "depends_on"), f"services.{name}.depends_on.{d}",
                             f"depends on {d}, which is not a service", "reference")
            mode = str(svc.get("network_mode") or "")
            if mode.startswith("service:"):
                deps = deps + [mode.split(":", 1)[1]]
            graph[name] = [d for d in deps if d in services]
        state: dict[str, int] = {}
        stack: list[str] = []
        reported: set[frozenset[str]] = set()

        def visit(n: str) -> None:
            state[n] = 1
            stack.append(n)
            for d in graph.get(n, []):
                if state.get(d) == 1:
                    cycle = stack[stack.index(d):] + [d]
                    if frozenset(cycle) not in reported:
                        reported.add(frozenset(cycle))
                        self.add(self.svc_file(n, "depends_on"), f"services.{n}.depends_on",
                                 "dependency cycle: " + " -> ".join(cycle), "cycle")
                elif state.get(d) is None:
                    visit(d)
            stack.pop()
            state[n] = 2

        for n in graph:
            if n not in state:
                visit(n)

    # --- configs mounted into the containers -----------------------------------------------
    def load_configs(self) -> None:
        for svc_name, svc in self.model.services.items():
            for vol in svc.get("volumes") or []:
                src = cm.volume_source(vol)
                if not src or not src.endswith((".yaml", ".yml", ".json", ".conf")):
                    continue
                path = self.host_path(src)
                if not path.is_file():
                    continue
                if path.suffix == ".conf":
                    oai_rules.load(self, svc_name, path)     # OpenAirInterface (libconfig)
                    continue
                try:
                    text = path.read_text(encoding="utf-8")
                    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
                except (OSError, ValueError, yaml.YAMLError) as exc:
                    self.add(path, "(file)", f"cannot parse: {exc}", "syntax")
                    continue
                if not isinstance(data, dict):
                    continue
                kind = self._classify(data)
                if kind:
                    self.configs.setdefault(kind, []).append((svc_name, path, data))

    @staticmethod
    def _classify(data: dict[str, Any]) -> str | None:
        if "subscribers" in data and "dnn" in data:
            return "provision"
        if "amfConfigs" in data:
            return "gnb"
        if "supi" in data:
            return "ue"
        for sec in OPEN5GS_SECTIONS:
            if isinstance(data.get(sec), dict):
                return f"open5gs:{sec}"
        return None

    def runner(self, kind: str) -> str | None:
        entries = self.configs.get(kind) or []
        return entries[0][0] if entries else None

    def check_open5gs(self) -> None:
        nrf, scp = self.runner("open5gs:nrf"), self.runner("open5gs:scp")
        nrf_port = None
        for _, _, data in self.configs.get("open5gs:nrf", []):
            for srv in (data["nrf"].get("sbi") or {}).get("server") or []:
                nrf_port = srv.get("port")
        for kind, entries in self.configs.items():
            if not kind.startswith("open5gs:"):
                continue
            nf = kind.split(":", 1)[1]
            for svc, path, data in entries:
                sec = data[nf]
                sbi = sec.get("sbi") or {}
                for i, srv in enumerate(sbi.get("server") or []):
                    if "address" in srv:
                        self.expect(path, f"{nf}.sbi.server[{i}].address", srv["address"], svc, "sbi",
                                    f"{nf.upper()} SBI server address")
                client = sbi.get("client") or {}
                for peer_key, peer_svc in (("nrf", nrf), ("scp", scp)):
                    for i, c in enumerate(client.get(peer_key) or []):
                        self._check_uri(path, f"{nf}.sbi.client.{peer_key}[{i}].uri", c.get("uri"), peer_svc,
                                        f"{peer_key.upper()} URI", nrf_port if peer_key == "nrf" else None)
                for i, c in enumerate(client.get("nsi") or []):
                    self._check_uri(path, f"{nf}.sbi.client.nsi[{i}].uri", c.get("uri"), nrf, "NSI (NRF) URI", nrf_port)
                if nf == "amf":
                    for i, s in enumerate((sec.get("ngap") or {}).get("server") or []):
                        self.expect(path, f"amf.ngap.server[{i}].address", s.get("address"), svc, "n2",
                                    "AMF NGAP address")
                if nf in ("smf", "upf"):
                    pfcp = sec.get("pfcp") or {}
                    for i, s in enumerate(pfcp.get("server") or []):
                        self.expect(path, f"{nf}.pfcp.server[{i}].address", s.get("address"), svc, "n4",
                                    f"{nf.upper()} PFCP address")
                if nf == "smf":
                    gtpu = (sec.get("gtpu") or {}).get("server") or []
                    if not gtpu:
                        self.add(path, "smf.gtpu.server", "missing: Open5GS 2.7 SMF does not start without a "
                                 "GTP-U server address (\"No smf.gtpu.address\")", "reference")
                    for i, s in enumerate(gtpu):
                        self.expect(path, f"smf.gtpu.server[{i}].address", s.get("address"), svc, "n4",
                                    "SMF GTP-U address")
                    for i, u in enumerate(((sec.get("pfcp") or {}).get("client") or {}).get("upf") or []):
                        self.expect(path, f"smf.pfcp.client.upf[{i}].address", u.get("address"),
                                    self.runner("open5gs:upf"), "n4", "UPF PFCP address")
                if nf == "upf":
                    for i, s in enumerate((sec.get("gtpu") or {}).get("server") or []):
                        self.expect(path, f"upf.gtpu.server[{i}].address", s.get("address"), svc, "n3",
                                    "UPF GTP-U address")
                if "db_uri" in data:
                    host = urlsplit(str(data["db_uri"])).hostname
                    self.expect(path, "db_uri", host, "mongo" if "mongo" in self.model.services else None,
                                "db", "MongoDB host")

    def _check_uri(self, path: Path, key: str, uri: Any, peer: str | None, what: str, port: Any) -> None:
        try:
            parts = urlsplit(str(uri))
            host, uport = parts.hostname, parts.port
        except ValueError as exc:
            self.add(path, key, f"invalid URI {uri!r}: {exc}", "address")
            return
        if not host:
            self.add(path, key, f"invalid URI {uri!r}", "address")
            return
        self.expect(path, key, host, peer, "sbi", what)
        if port is not None and uport is not None and int(uport) != int(port):
            self.add(path, key, f"{what} port {uport} differs from the NRF's SBI server port {port}", "address")

    def check_ran(self) -> None:
        amf, gnb = self.runner("open5gs:amf"), self.runner("gnb")
        ngap_port = self.values.get("ngap_port")
        relay = self._relay_to_amf()
        for svc, path, d in self.configs.get("gnb", []):
            self.expect(path, "linkIp", d.get("linkIp"), svc, "ran", "gNB radio link address")
            self.expect(path, "gtpIp", d.get("gtpIp"), svc, "n3", "gNB GTP-U address")
            if relay is not None:
                # a relay overlay on N2: the gNB connects to the relay's local listener
                for key, value in [("ngapIp", d.get("ngapIp"))] + [
                        (f"amfConfigs[{i}].address", a.get("address")) for i, a in enumerate(d.get("amfConfigs") or [])]:
                    if str(value) != relay.listen:
                        self.add(path, key, f"{value}: with the N2 relay the gNB must use the relay's listener "
                                 f"{relay.listen} (nf-configs/stack.yaml relay_links.n2)", "address")
            else:
                self.expect(path, "ngapIp", d.get("ngapIp"), svc, "n2", "gNB NGAP address")
            for i, a in enumerate(d.get("amfConfigs") or []):
                if relay is None:
                    self.expect(path, f"amfConfigs[{i}].address", a.get("address"), amf, "n2", "AMF address")
                if ngap_port is not None and a.get("port") is not None and int(a["port"]) != int(ngap_port):
                    self.add(path, f"amfConfigs[{i}].port", f"{a['port']} differs from stack.yaml ngap_port {ngap_port}",
                             "address")
        for svc, path, d in self.configs.get("ue", []):
            for i, a in enumerate(d.get("gnbSearchList") or []):
                self.expect(path, f"gnbSearchList[{i}]", a, gnb, "ran", "gNB address")

    def _relay_to_amf(self) -> Any:
        return self.relay("n2")

    @property
    def ran_values(self) -> dict[str, Any]:
        """The stack values as the render's RAN variant (compose.env RAN) runs them: only its nodes
        (testbed/ran restrict), so a plane's links are those of the nodes that run."""
        from testbed import ran
        try:
            return ran.restrict(self.values, ran.check(self.env.get("RAN") or None, self.values))
        except ran.RanError:
            return self.values

    def relay(self, plane: str) -> Any:
        """The plane's relay link when the render runs a relay overlay on it (the plug-in's
        relay_link), else None; the server side's relay must connect to the server NF's real
        address on the plane (checked here from the rendered relay: the AMF's on N2, the CU-CP's
        on F1-C and E1)."""
        if plane not in planes.split(self.env.get("PLANE") or "n3"):
            return None
        overlay = registry.overlay(self.env.get("PROTOCOL") or "none")
        lk = overlay.relay_link(plane, self.ran_values)
        if lk is None:
            return None
        env_file, setting, fields = overlay.relay_target(self.render_dir / layout.OVERLAY_DIR, lk)
        server = self.runner("open5gs:amf") if lk.server == "amf" else self.node_service(lk.server)
        what = "AMF" if lk.server == "amf" else lk.server.upper()
        if fields is None:
            self.add(env_file, setting, f"no relay rendered for the {what}'s side of {plane.upper()}", "reference")
        else:
            key = f"{setting} (NF side)" if plane == "n2" else f"{setting} ({plane}, NF side)"
            self.expect(env_file, key, fields[4], server, plane, f"{what} address behind the relay")
        return lk

    def node_service(self, node: str) -> str | None:
        """The compose service of a stack node: <node>-ns (its namespace's owner), <node>-net (its
        holder) or <node>."""
        services = self.model.services
        return next((s for s in (netns_service(node), holder_service(node), node) if s in services), None)

    # --- PLMN, TAC, slices, DNN -----------------------------------------------------------
    def check_plmn(self) -> None:
        ref = _PlmnRef(self.values, self.add)
        self._plmn_core(ref)
        self._plmn_ran(ref)

    def _plmn_core(self, ref: _PlmnRef) -> None:
        """The AMF's GUAMI, TAI and PLMN support, the NRF's serving PLMN, the SMF's and UPF's DNNs and
        the SMF's slices and TAI, the NSSF's NSIs."""
        for _, path, d in self.configs.get("open5gs:amf", []):
            a = d["amf"]
            for i, g in enumerate(a.get("guami") or []):
                ref.plmn(path, f"amf.guami[{i}].plmn_id", g.get("plmn_id"))
            for i, t in enumerate(a.get("tai") or []):
                ref.plmn(path, f"amf.tai[{i}].plmn_id", t.get("plmn_id"))
                ref.tac(path, f"amf.tai[{i}].tac", t.get("tac"))
            for i, p in enumerate(a.get("plmn_support") or []):
                ref.plmn(path, f"amf.plmn_support[{i}].plmn_id", p.get("plmn_id"))
                ref.snssai(path, f"amf.plmn_support[{i}].s_nssai", p.get("s_nssai"))
        for _, path, d in self.configs.get("open5gs:nrf", []):
            for i, s in enumerate(d["nrf"].get("serving") or []):
                ref.plmn(path, f"nrf.serving[{i}].plmn_id", s.get("plmn_id"))
        for nf in ("smf", "upf"):
            for _, path, d in self.configs.get(f"open5gs:{nf}", []):
                for i, s in enumerate(d[nf].get("session") or []):
                    if "dnn" in s:
                        ref.dnn(path, f"{nf}.session[{i}].dnn", s["dnn"])
        for _, path, d in self.configs.get("open5gs:smf", []):
            for i, info in enumerate(d["smf"].get("info") or []):
                ref.snssai(path, f"smf.info[{i}].s_nssai", [{k: x for k, x in s.items() if k != "dnn"}
                                                              for s in info.get("s_nssai") or []])
                for j, s in enumerate(info.get("s_nssai") or []):
                    for k, dd in enumerate(s.get("dnn") or []):
                        ref.dnn(path, f"smf.info[{i}].s_nssai[{j}].dnn[{k}]", dd)
                for j, t in enumerate(info.get("tai") or []):
                    ref.plmn(path, f"smf.info[{i}].tai[{j}].plmn_id", t.get("plmn_id"))
                    ref.tac(path, f"smf.info[{i}].tai[{j}].tac", t.get("tac"))
        for _, path, d in self.configs.get("open5gs:nssf", []):
            nsi = ((d["nssf"].get("sbi") or {}).get("client") or {}).get("nsi") or []
            ref.snssai(path, "nssf.sbi.client.nsi[].s_nssai", [n.get("s_nssai") for n in nsi])

    def _plmn_ran(self, ref: _PlmnRef) -> None:
        """The gNB's and UEs' PLMN, TAC, slices and DNNs, and the provisioned subscribers'."""
        for _, path, d in self.configs.get("gnb", []):
            ref.plmn(path, "mcc/mnc", {"mcc": d.get("mcc"), "mnc": d.get("mnc")})
            ref.tac(path, "tac", d.get("tac"))
            ref.snssai(path, "slices", d.get("slices"))
        for _, path, d in self.configs.get("ue", []):
            ref.plmn(path, "mcc/mnc", {"mcc": d.get("mcc"), "mnc": d.get("mnc")})
            supi = str(d.get("supi", ""))
            if not supi.startswith(f"imsi-{ref.mcc}{ref.mnc}"):
                self.add(path, "supi", f"{supi} does not start with imsi-{ref.mcc}{ref.mnc} ({ref.text})", "plmn")
            for i, s in enumerate(d.get("sessions") or []):
                ref.dnn(path, f"sessions[{i}].apn", s.get("apn"))
                ref.snssai(path, f"sessions[{i}].slice", [s.get("slice")])
            ref.snssai(path, "configured-nssai", d.get("configured-nssai"))
        for _, path, d in self.configs.get("provision", []):
            ref.dnn(path, "dnn", d.get("dnn"))
            ref.snssai(path, "s_nssai", d.get("s_nssai"))

    # --- UE credentials vs provisioned subscribers ------------------------------------------
    def check_credentials(self) -> None:
        prov: dict[str, dict[str, Any]] = {}
        prov_path: Path | None = None
        for _, path, d in self.configs.get("provision", []):
            prov_path = path
            for s in d.get("subscribers") or []:
                prov[str(s.get("imsi"))] = s
        if prov_path is None:
            for _, path, _d in self.configs.get("ue", []):
                self.add(path, "supi", "no provisioning input is mounted (provision service), "
                         "so this UE's subscriber is never provisioned", "credentials")
            return
        secrets = self._keys_subscribers()
        scale = (self.values.get("subscribers") or {}).get("scale") or {}
        for svc, path, d in self.configs.get("ue", []):
            imsi = str(d.get("supi", "")).removeprefix("imsi-")
            sub = prov.get(imsi)
            if sub is None:
                self.add(path, "supi", f"IMSI {imsi} is not among the provisioned subscribers ({prov_path})",
                         "credentials")
                continue
            if str(d.get("key", "")).upper() != str(sub.get("k", "")).upper():
                self.add(path, "key", f"K differs from the provisioned K of IMSI {imsi}", "credentials")
            if str(d.get("opType", "")) != "OPC":
                self.add(path, "opType", f"opType {d.get('opType')} but subscribers are provisioned with OPc",
                         "credentials")
            elif str(d.get("op", "")).upper() != str(sub.get("opc", "")).upper():
                self.add(path, "op", f"OPc differs from the provisioned OPc of IMSI {imsi}", "credentials")
            amf_field = str((self._provision_data() or {}).get("amf_field", "8000"))
            if str(d.get("amf", "")) != amf_field:
                self.add(path, "amf", f"AMF field {d.get('amf')} differs from the provisioned {amf_field}",
                         "credentials")
            if svc == "ue-scale" and scale:
                first = int(imsi)
                missing = [str(first + i).zfill(len(imsi)) for i in range(int(scale.get("count", 1)))
                           if str(first + i).zfill(len(imsi)) not in prov]
                if missing:
                    self.add(path, "supi", f"the scaling UEs from {imsi} need {len(missing)} IMSIs that are not "
                             f"provisioned (first: {missing[0]})", "credentials")
            if secrets is not None:
                known = {str(s.get("imsi")): s for s in secrets.values() if isinstance(s, dict) and "imsi" in s}
                ks = known.get(imsi)
                if ks is not None and str(ks.get("k", "")).upper() != str(d.get("key", "")).upper():
                    self.add(path, "key", f"K differs from the SIM secret in {self.keys_root}/subscribers.yaml",
                             "credentials")
                if ks is not None and str(ks.get("opc", "")).upper() != str(d.get("op", "")).upper():
                    self.add(path, "op", f"OPc differs from the SIM secret in {self.keys_root}/subscribers.yaml",
                             "credentials")

    def _provision_data(self) -> dict[str, Any] | None:
        entries = self.configs.get("provision") or []
        return entries[0][2] if entries else None

    def _keys_subscribers(self) -> dict[str, Any] | None:
        if self.keys_root is None:
            return None
        p = Path(self.keys_root) / "subscribers.yaml"
        if not p.exists():
            return None
        return yaml.safe_load(p.read_text(encoding="utf-8")) or {}


def run(render_dir: Path, stack_file: Path | None = None, keys_root: Path | None = None) -> list[Finding]:
    from testbed import stack
    missing = [n for n in (layout.COMPOSE_ENV, layout.COMPOSE_FILES) if not (render_dir / n).exists()]
    if missing:
        return [Finding(render_dir / missing[0], "(file)",
                        "render dir incomplete: run `make render` first", "mount")]
    c = Checker(render_dir, Path(stack_file or stack.STACK_FILE), keys_root)
    c.check_stack()
    c.check_compose()
    c.check_privileges()
    c.check_compose_vs_stack()
    c.check_mounts()
    c.check_dependencies()
    c.load_configs()
    c.check_open5gs()
    c.check_ran()
    oai_rules.check(c)
    c.check_plmn()
    c.check_credentials()
    return c.findings
