"""The plug-in contract: one typed base class per kind of plug-in, each hook a method with a
no-op default (docs/contracts.md "Plug-ins").

Five kinds plug into the core, each registered by one line in testbed/registry.py:

- overlay   a security protocol on one or more planes (IPsec, WireGuard, TLS, DTLS, MACsec): a
            top-level folder (`ipsec/`, ...) holding its class, entrypoint, catalogue expansion,
            keys, datapath probe, validity rule, privileges, overhead formula and README;
- ran       a RAN variant (UERANSIM, OAI monolithic, OAI split): testbed/ran/<name>/;
- dimension a choice orthogonal to the profile (the UPF security function, NAS algorithms);
- engine    a security-function engine (Suricata, Snort 3, the NFQUEUE pass-through);
- runtime   how a rendered stack runs (ENGINE=<name>): Docker Compose on one host (the default)
            or a Kubernetes cluster (`engine` is taken by the security-function engines).

The core (profiles, render, manifest, validity, keys, datapath, analysis, the bash drivers)
calls only these methods and never tests a plug-in's name. What a plug-in declares (its name,
summary and the facts below typed as class attributes) is data: its folder's plugin.yaml, one
entry per class, read into the class when it is defined (Plugin.__init_subclass__); the
plug-in class keeps its behaviour. A method a plug-in does not
override does nothing: it returns an empty result, and the core treats that as "not
concerned". Every hook says when it is called and what it returns.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import shutil
import sys
import types
import typing
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import yaml

from testbed import ROOT, wire
from testbed.verdict import Verdict
from testbed.wire import Handshakes

if TYPE_CHECKING:
    from testbed.placement import Placement
    from testbed.profiles import Profile
    from testbed.render import Rendered
    from testbed.secfn import Secfn
    from testbed.secfn.engines import Counters, Launch

Values = dict[str, Any]
"""The stack values (nf-configs/stack.yaml as testbed/stack.py loads them), as render hands them
over: with `use_scp` and `overlay_planes` (the planes the run covers) set."""
Manifest = Mapping[str, Any]
"""A run's manifest.json as testbed/manifest.py loads it."""

KINDS = ("overlay", "ran", "dimension", "engine", "runtime")
DECLARATIONS = "plugin.yaml"
"""The file, in a plug-in's folder, holding its declared values: {class name: {attribute: value}}."""
_KERNEL_OFFERS: dict[str, bool] = {}      # overlay -> its kernel probe's answer, once per process


class DeclarationError(ValueError):
    """A plug-in folder's plugin.yaml is malformed; the message names the file and the key."""


def _shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


@lru_cache(maxsize=None)
def _declarations_file(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise DeclarationError(f"{_shown(path)}: cannot read it: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise DeclarationError(f"{_shown(path)}: must map each plug-in class name to its declared values")
    return data


def _base(cls: type) -> type:
    """The contract's class `cls` derives from (OverlayPlugin, FolderOverlay, RanPlugin ...)."""
    return next(b for b in cls.__mro__ if b.__module__ == __name__)


def _declarable(cls: type) -> dict[str, Any]:
    """What a plugin.yaml may set for `cls`: every class attribute its contract base declares
    (ClassVar[T] -> T), but its kind."""
    hints = typing.get_type_hints(_base(cls))
    return {k: typing.get_args(h)[0] for k, h in hints.items()
            if typing.get_origin(h) is ClassVar and k != "kind"}


def _type_name(hint: Any) -> str:
    return hint.__name__ if typing.get_origin(hint) is None and hasattr(hint, "__name__") else str(hint)


def _typed(hint: Any, value: Any, where: str) -> Any:
    """`value` as YAML gave it, checked against its declared type (str, bool, int, X | None,
    tuple[X, ...], frozenset[X], dict[X, Y]: lists for the tuples and sets) and converted to it."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _typed(inner[0], value, where)
    elif origin in (tuple, frozenset) and isinstance(value, list):
        items = [_typed(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else frozenset(items)
    elif origin is dict and isinstance(value, dict):
        return {_typed(args[0], k, where): _typed(args[1], v, f"{where}.{k}") for k, v in value.items()}
    elif hint in (str, bool, int) and type(value) is hint:
        return value
    raise DeclarationError(f"{where} must be {_type_name(hint)} (a list for a tuple or set), not {value!r}")


def _declared(cls: type) -> dict[str, Any]:
    """The values the folder's plugin.yaml declares for `cls`, typed; {} without the file."""
    try:
        path = Path(inspect.getfile(cls)).resolve().parent / DECLARATIONS
    except TypeError:                        # a class without a source file (defined at run time)
        return {}
    if not path.is_file():
        return {}
    entries = _declarations_file(path)
    if cls.__name__ not in entries:
        raise DeclarationError(f"{_shown(path)}: no entry for class {cls.__name__} "
                               f"(entries: {', '.join(entries) or 'none'})")
    allowed = _declarable(cls)
    out: dict[str, Any] = {}
    for key, value in entries[cls.__name__].items():
        where = f"{_shown(path)}: {cls.__name__}.{key}"
        if key not in allowed:
            raise DeclarationError(f"{where}: not a declared value of a {_base(cls).__name__} "
                                   f"(testbed/contract.py: {', '.join(sorted(allowed))})")
        if key in vars(cls):
            raise DeclarationError(f"{where}: {cls.__name__} sets it in its code too; declare it once")
        out[key] = _typed(allowed[key], value, where)
    return out


@lru_cache(maxsize=None)
def _folder_module(defining: str, name: str) -> Any:
    """The module `name` beside the module `defining` (<its folder>/<name>.py), None without one."""
    package = defining.rpartition(".")[0]
    if not (Path(inspect.getfile(sys.modules[defining])).resolve().parent / f"{name}.py").is_file():
        return None
    return importlib.import_module(f"{package}.{name}")


@dataclasses.dataclass(frozen=True)
class DoctorNotes:
    """What `make doctor` says of an overlay's kernel datapath (OverlayPlugin.doctor_notes):
    its name, the ok line, and for a missing kernel datapath what breaks and what to do, with
    the userspace fallback (a warning while TUN works) or without it (a failure)."""
    name: str              # "xfrm ESP (kernel IPsec)"
    ok: str                # "ESP with AES-GCM works"
    degraded: str          # what a missing kernel datapath costs while the fallback runs
    fix: str               # how to get the kernel datapath
    fallback: str          # the fallback's name ("the kernel-libipsec fallback")
    affected: str          # what cannot run without either ("every IPsec profile ...")
    fix_either: str        # how to get one of them


@dataclasses.dataclass(frozen=True)
class KeySource:
    """Where an overlay's session keys are while a run that exports them (KEYS=1) is up
    (OverlayPlugin.key_sources): read from every endpoint before the teardown."""
    container: str         # "{node}" (the program container) or "{node}-net" (its holder)
    path: str              # the file inside it
    label: str             # the key file's `protocol` attribute in the manifest (tls, esp)
    combined: bool = False # one file for all endpoints (their logs concatenated), else one each


@dataclasses.dataclass(frozen=True)
class Decryption:
    """How tshark reads a run's traffic with the keys it exported (OverlayPlugin.decryption)."""
    prefs: dict[str, str]                  # tshark -o preferences
    extra: tuple[str, ...] = ()            # further arguments (UAT records)
    label: str = ""                        # a short tag of what it decrypts ("tls", "esp")
    description: str = ""                  # the same for a reader ("TLS key log", "ESP, 9 SA(s)")
    note: str = ""                         # what it could not use, said in the report
    carrier: str = ""                      # what the plane's port carries on the wire, decoded so by port
                                           # ("tls": ALPN h2 then finds HTTP/2); empty: HTTP/2 (cleartext, or
                                           # inside ESP). Never left to tshark's heuristics: a connection whose
                                           # client port another dissector registered is lost to it (EtherCAT's
                                           # 34980 took a TLS connection in CI)


@dataclasses.dataclass(frozen=True)
class RunCheck:
    """One run-level verdict a plug-in adds (check_run; None: it only records), and what it
    records in the manifest: `field` (one of testbed/manifest.py SET_FIELDS) set to `record`."""
    verdict: Verdict | None
    field: str | None = None
    record: Any = None


class Plugin:
    """What every plug-in is: a kind, a name, a folder and a one-line summary.

    Every class attribute typed here and in the bases below (but `kind`) is declared as data in
    the folder's plugin.yaml, under the class's name; a value derived from the folder's code
    (`decode_as` built from a port constant) may instead be assigned in the class, never both."""

    kind: ClassVar[str] = ""
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for key, value in _declared(cls).items():
            setattr(cls, key, value)

    def _module(self, name: str) -> Any:
        """The folder's module `name` (catalogue, overlay, keys, services, engine), imported on first
        use; None where the folder has none. The hooks of FolderOverlay, RanPlugin and EnginePlugin
        call the usual modules through it, so no plug-in class names them."""
        return _folder_module(type(self).__module__, name)

    def _call(self, module: str, function: str, *args: Any) -> Any:
        """`function(*args)` of the folder's module `module`; None where either is missing."""
        found = getattr(self._module(module), function, None)
        return None if found is None else found(*args)

    @property
    def folder(self) -> Path:
        """The folder holding everything that knows this plug-in (the defining module's)."""
        return Path(inspect.getfile(type(self))).resolve().parent

    def problems(self) -> list[str]:
        """Called by the contract test and `python -m testbed plugins --check`: what is wrong
        with the plug-in's own files (missing README, entrypoint ...); empty when nothing is."""
        out = [] if (self.folder / "README.md").is_file() else [f"{self.folder}: no README.md"]
        declarations = self.folder / DECLARATIONS
        if declarations.is_file():      # an entry for a class the module lacks would never be read
            module = sys.modules[type(self).__module__]
            out += [f"{_shown(declarations)}: {k}: no such class in {module.__name__}"
                    for k in _declarations_file(declarations) if not isinstance(getattr(module, k, None), type)]
        return out + ([] if self.name and self.summary else [f"{type(self).__name__}: name or summary unset"])


# ---------------------------------------------------------------------------------- overlays

class OverlayPlugin(Plugin):
    """A security protocol the profiles choose by their `protocol` (= the plug-in's name).

    Class attributes are facts the core reads; methods are hooks the core calls."""

    kind: ClassVar[str] = "overlay"
    protects: ClassVar[bool] = True
    """False only for the baseline (protocol "none"): its runs must show no overlay at all."""
    label: ClassVar[str] = ""
    """Its name in tables and figures ("IPsec")."""
    colour: ClassVar[str] = "#7f7f7f"
    """Its colour in the figures (matplotlib colour)."""
    entrypoint: ClassVar[str | None] = None
    """File name, in the folder, of the program its holders run (`<node>-net` in Compose, the
    namespace lab's endpoints): started with the node's rendered dir, it prints
    `datapath: <name>=<value>`, writes /run/testbed/overlay-ready and runs until SIGTERM.
    None: the overlay has no holder program (TLS is in the NFs themselves)."""
    datapaths: ClassVar[tuple[str, ...]] = ()
    """Every datapath its entrypoint may report (`datapath: <name>=<value>`), kernel first."""
    userspace_datapaths: ClassVar[frozenset[str]] = frozenset()
    """Those of `datapaths` that run in userspace (a run on one is never pooled with kernel runs)."""
    datapath_variable: ClassVar[str | None] = None
    """Environment variable that forces a datapath (IPSEC_DATAPATH=kernel|libipsec|auto)."""
    wire_filter: ClassVar[str] = ""
    """tshark display filter matching its packets on the wire (a baseline run must show none)."""
    decode_as: ClassVar[tuple[str, ...]] = ()
    """tshark options that make its packets dissectable (`-d udp.port==51820,wg`)."""
    daemons: ClassVar[tuple[str, ...]] = ()
    """Process names (comm) of its daemons: a run stops as invalid when one of them vanishes."""
    state_command: ClassVar[tuple[str, ...]] = ()
    """Command, run in an endpoint's namespace, that prints what the overlay negotiated there
    (kept as the run's sa-before/sa-after records); empty: nothing to record."""
    lab_tools: ClassVar[tuple[str, ...]] = ()
    """Host programs the namespace lab needs for it (beyond ip, ping, tshark)."""
    rehandshake: ClassVar[str | None] = None
    """File name, in the folder, of a script run in an endpoint's namespace of a namespace lab
    (arguments: the node's rendered dir, the peer's address) that makes one fresh handshake with
    each peer the node initiates to and exits 0 once every one completed. run-overlay runs it
    once after its capture started, so the capture proves the handshake (a post-quantum key
    exchange is seen only there); the handshake micro-benchmark runs it many times. None: none."""
    bench_responder: ClassVar[str | None] = None
    """Overlays without an entrypoint (TLS, in the NFs): file name, in the folder, of the program
    the handshake micro-benchmark runs in the responding node's namespace (arguments: its
    rendered dir, its address) until SIGTERM, for the initiator's rehandshake script to meet."""

    # --- catalogue -------------------------------------------------------------------------

    def expand(self, section: Mapping[str, Any], all_planes: tuple[str, ...]) -> list[Profile]:
        """Called once when profiles.yaml is loaded, with its section named like the plug-in
        (absent section: {}) and every plane of nf-configs/channels.yaml: the concrete profiles."""
        return []

    # --- render ----------------------------------------------------------------------------

    def endpoints(self, plane: str, values: Values) -> list[str]:
        """The nodes that take part on the plane(s) (a PLANE expression)."""
        return []

    def render(self, profile: Profile, plane: str, values: Values, keys_dir: Path, out_dir: Path,
               nodes: list[str] | None = None) -> dict[str, Path]:
        """Called by render and the namespace lab: write out_dir/<node>/ for every endpoint (`nodes`:
        only these, the lab's subset, each configured with only these peers; an overlay may write
        more); return {node: dir}."""
        return {}

    def nf_config_overrides(self, node: str, profile: Profile, values: Values) -> dict[str, Any]:
        """Called per node whose config render writes (Open5GS NFs, gNB-side RAN nodes): a dict
        deep-merged into that config (TLS: https and certificates; a relay: the address the NF
        connects to)."""
        return {}

    def nf_environment(self, node: str, profile: Profile, values: Values) -> dict[str, str]:
        """Called per program container: extra environment (env/<node>.env)."""
        return {}

    def compose_env(self, profile: Profile, plane: str, values: Values) -> dict[str, str]:
        """Called once per render: extra variables for Compose interpolation (compose.env)."""
        return {}

    def compose_services(self, profile: Profile, plane: str, values: Values) -> dict[str, dict[str, Any]]:
        """Called once per render: {service: override} written into the render's overlay
        fragment (testbed/render/compose_overlay.py; holders: `holder_service`)."""
        return {}

    def plaintext_tap(self, plane: str, values: Values) -> dict[str, str]:
        """Relay overlays: {node, iface, capture_filter} where the plane's traffic can still be read
        (run-sbi's N2 timing view); empty: the plane's own capture is readable."""
        return {}

    def relay_link(self, plane: str, values: Values) -> Any:
        """Relay overlays: the link it moves an NF's connection onto for this plane (check-config
        checks the NF connects to the relay's listener), else None."""
        return None

    def relay_target(self, overlay_dir: Path, link: Any) -> tuple[Path, str, list[str] | None]:
        """Relay overlays, for check-config: (the server end's rendered file, the setting there,
        the fields of its relay line for the link or None when missing; the 5th field is the
        address the relay connects to)."""
        return overlay_dir, "", None

    # --- host, keys, datapath --------------------------------------------------------------

    def host_needs(self, profile: Profile, plane: str) -> list[str]:
        """Called by the doctor and the render plan: what the host must offer (kernel modules,
        devices), as short phrases."""
        return []

    def ensure_keys(self, root: Path, nodes: list[str], values: Values) -> None:
        """Called by `make keys` (testbed/keys.py ensure) after the shared PKI exists: create the
        overlay's own missing key material under root (written atomically; never replace a good
        key; a damaged one raises testbed.keys.KeysError naming the command that regenerates it)."""

    def kernel_datapath(self) -> tuple[bool, str]:
        """Called by the datapath probe (make datapath, doctor, render): does this kernel offer the
        overlay's kernel datapath, and why not."""
        return False, "no kernel datapath"

    def userspace_datapath(self) -> str | None:
        """The userspace fallback this host has (a program or plugin path), None without one."""
        return None

    def datapath(self, kernel: bool, userspace: str | None) -> str | None:
        """The datapath a run here would use given the probes (None: cannot run)."""
        if not self.datapaths:
            return None
        if kernel:
            return self.datapaths[0]
        fallbacks = [d for d in self.datapaths if d in self.userspace_datapaths]
        return fallbacks[0] if userspace and fallbacks else None

    def doctor_notes(self) -> DoctorNotes | None:
        """Called by `make doctor` for an overlay with a kernel datapath: its lines (None: nothing
        to say, e.g. an overlay that never runs in the kernel)."""
        return None

    def userspace_possible(self, values: Values) -> bool:
        """Whether its entrypoint may choose a userspace datapath here (its holders then need
        /dev/net/tun): the choice of its datapath variable (values["datapath_choices"], set by the
        command line from the environment) when not "auto", else the same kernel probe the
        entrypoint makes (the containers share this host's kernel)."""
        if not self.userspace_datapaths:
            return False
        choices = values.get("datapath_choices") or {}
        choice = str(choices.get(self.datapath_variable or "", "auto") or "auto")
        if choice != "auto":
            return choice in self.userspace_datapaths
        if self.name not in _KERNEL_OFFERS:
            _KERNEL_OFFERS[self.name] = self.kernel_datapath()[0]
        return not _KERNEL_OFFERS[self.name]

    def holder_commands(self, moment: str) -> list[tuple[str, tuple[str, ...]]]:
        """Called by run-sbi at `moment` ("before-cold": right before the cold UE attaches,
        "before-warm": right before the warm one): [(record name, command)] run in every
        endpoint's holder, each output kept as <iteration>-<record name>-<node>.txt (check_run
        reads them). Commands are plain words (a script in the folder where quoting is needed)."""
        return []

    def cannot_run(self, profile: Profile, datapath: str | None) -> str | None:
        """Called before anything starts (drivers, lab): why this profile cannot run on this
        datapath, or None."""
        return None

    def lab_environment(self, profiles: list[Profile]) -> dict[str, str]:
        """Called by the namespace lab before its entrypoints start, and when a lab run's manifest
        is made (before `versions`): the variables that select which programs run `profiles` (the
        lab's and its per-node overrides) on this host, e.g. a Debian root of a newer suite
        (IPSEC_ROOT). A variable already set wins; {}: the host's own programs."""
        return {}

    def versions(self) -> dict[str, str | None]:
        """Called when a manifest is written on a host run: {manifest key: version} of its programs."""
        return {}

    def image_versions(self) -> dict[str, tuple[str, str]]:
        """{manifest key: (image, key in its contents file)} of its programs in the images."""
        return {}

    # --- validity and analysis -------------------------------------------------------------

    def verify_capture(self, pcap: Path, profile: Profile, plane: str, values: Values) -> Verdict:
        """Called per validation capture of a run of this protocol (one plane's network): does it
        show the overlay, and no plaintext of the plane's traffic?"""
        return Verdict(False, 0, 0, f"{self.name}: no capture rule -> INVALID")

    def check_run(self, run_dir: Path, manifest: Manifest, values: Values) -> list[RunCheck]:
        """Called once per run of this protocol after its captures are judged: run-level checks
        (the daemons' negotiated SAs, sessions, waits) with what they record."""
        return []

    def key_sources(self) -> list[KeySource]:
        """Called by a driver whose run exports keys (KEYS=1) before each teardown: where the
        session keys are (empty: the overlay exports none)."""
        return []

    def key_environment(self, node: str, values: Values) -> dict[str, str]:
        """Called per program container when keys are exported: the environment that makes its
        programs write their key log (TLS: patch 0003's switch)."""
        return {}

    def decryption(self, key_files: list[Path]) -> Decryption | str:
        """Called by the analysis for a run's capture with the run's exported key files of this
        protocol (possibly none): the tshark arguments that decrypt its traffic, or why it
        cannot be decrypted (said in the report). Validity never uses it."""
        return f"{self.label or self.name}: the testbed exports no keys the tools can use"

    def wire_fields(self, plane: str, values: Values) -> wire.Fields:
        """Called by the analysis before its one tshark pass over a capture of a run of this protocol
        on `plane`: the fields (and decode-as rules) that `handshakes`, `protected_lengths` and
        `packet_overhead` read, so that one shared export of the capture (testbed/wire.py Export:
        every frame, with wire.BASE_FIELDS and these) feeds all three without a tshark pass of
        their own. Empty: they read nothing from a capture."""
        return wire.Fields()

    def packet_overhead(self, profile: Profile, inner: int, pcap: Path | wire.Export | None = None) -> int | None:
        """Bytes the overlay adds to one inner IP packet of `inner` bytes at the IP layer (outer
        headers included), as the profile runs it (`pcap`: a capture of the run, or its shared
        export, where the encapsulation depends on the datapath); None where it has no fixed
        per-packet formula. An overlay below IP gives the bytes it adds to the Ethernet frame
        carrying the packet (testbed/wire.py)."""
        return None

    def analytic_overheads(self, profiles: list[Profile], sizes: tuple[int, ...]) -> list[dict[str, object]]:
        """Called by the bytes-on-the-wire table with the catalogue's profiles of this protocol:
        rows {profile, what, size, added_bytes, ...} of its theoretical per-packet overhead."""
        return []

    def handshakes(self, pcap: Path | wire.Export, plane: str, values: Values) -> Handshakes | None:
        """Its handshake messages in one capture of the plane (packets, frame and IP bytes per
        message kind); None: nothing to count. Given the capture's shared export (made with
        `wire_fields`) it reads that; given the capture's path it makes one pass of its own."""
        return None

    def handshake_records(self, pcap: Path, profile: Profile) -> list[dict[str, Any]]:
        """Called by the handshake micro-benchmark's analysis per capture: one row per complete
        handshake, with at least `handshake_ms` (first to last packet on the capture's clock),
        `packets`, `ip_bytes`, `frame_bytes`, `retransmitted`, and bytes per message kind; empty:
        not measured."""
        return []

    def protected_lengths(self, pcap: Path | wire.Export, src: str | None = None) -> list[int]:
        """IP lengths of its protected data packets in a capture or its shared export (optionally
        only those `src` sent), for the measured per-packet overhead; empty: not measured this way.
        An overlay below IP gives frame lengths less the Ethernet header (testbed.wire.frame_lengths),
        so that minus the inner IP length is its packet_overhead too."""
        return []

    def post_quantum(self, profile: Profile) -> bool:
        """Called by the report's post-quantum section: whether the profile's key exchange or
        authentication is post-quantum (a hybrid counts). False: classical."""
        return bool(profile.params.get("post_quantum"))

    def classical_reference(self, profile: Profile) -> str | None:
        """Called by the report's post-quantum section for a post-quantum profile: the id of the
        classical profile it is set beside (same protocol and everything else, a classical key
        exchange); None: it has none in the catalogue."""
        return None

    def analytic_handshake_sizes(self) -> list[tuple[str, str, int, int]]:
        """Called by the report's post-quantum section: (what, which, bytes, bytes) rows of the
        protocol's own handshake fields whose size a post-quantum key exchange changes (key shares,
        its messages), from its specifications; empty: none beyond the primitives'."""
        return []


class FolderOverlay(OverlayPlugin):
    """An overlay whose folder keeps the usual modules (README "Adding a plug-in" in
    docs/contracts.md): `catalogue.py` with expand(section), `overlay.py` with endpoints(plane,
    values), render(profile, plane, values, keys_dir, out_dir, nodes), host_needs(profile, plane)
    and verify_capture(pcap, profile, plane, values), and optionally `keys.py` with ensure(root,
    nodes). These hooks call the modules the folder keeps (Plugin._module), so a plug-in class
    holds only what differs (one place per protocol, not one adapter method per hook and
    protocol). A plug-in whose module differs overrides that hook."""

    def expand(self, section: Mapping[str, Any], all_planes: tuple[str, ...]) -> list[Profile]:
        found: list[Profile] = self._module("catalogue").expand(section)
        return found

    def endpoints(self, plane: str, values: Values) -> list[str]:
        nodes: list[str] = self._module("overlay").endpoints(plane, values)
        return nodes

    def render(self, profile: Profile, plane: str, values: Values, keys_dir: Path, out_dir: Path,
               nodes: list[str] | None = None) -> dict[str, Path]:
        written: dict[str, Path] = self._module("overlay").render(profile, plane, values, keys_dir, out_dir, nodes)
        return written

    def host_needs(self, profile: Profile, plane: str) -> list[str]:
        needs: list[str] = self._module("overlay").host_needs(profile, plane)
        return needs

    def ensure_keys(self, root: Path, nodes: list[str], values: Values) -> None:
        keys = self._module("keys")
        if keys is not None:
            keys.ensure(root, nodes)

    def verify_capture(self, pcap: Path, profile: Profile, plane: str, values: Values) -> Verdict:
        verdict: Verdict = self._module("overlay").verify_capture(pcap, profile, plane, values)
        return verdict

    # where the folder's overlay.py has nf_config_overrides, nf_environment, compose_env or
    # compose_services (node/profile, plane, values), and its overhead.py analytic_rows(profiles,
    # sizes), FIELDS, handshakes(pcap) or protected_lengths(pcap, src), these hooks answer with them

    def nf_config_overrides(self, node: str, profile: Profile, values: Values) -> dict[str, Any]:
        return dict(self._call("overlay", "nf_config_overrides", node, profile, values) or {})

    def nf_environment(self, node: str, profile: Profile, values: Values) -> dict[str, str]:
        return dict(self._call("overlay", "nf_environment", node, profile, values) or {})

    def compose_env(self, profile: Profile, plane: str, values: Values) -> dict[str, str]:
        return dict(self._call("overlay", "compose_env", profile, plane, values) or {})

    def compose_services(self, profile: Profile, plane: str, values: Values) -> dict[str, dict[str, Any]]:
        return dict(self._call("overlay", "compose_services", profile, plane, values) or {})

    def analytic_overheads(self, profiles: list[Profile], sizes: tuple[int, ...]) -> list[dict[str, object]]:
        return list(self._call("overhead", "analytic_rows", profiles, sizes) or [])

    def wire_fields(self, plane: str, values: Values) -> wire.Fields:
        fields: wire.Fields = getattr(self._module("overhead"), "FIELDS", wire.Fields())
        return fields

    def handshakes(self, pcap: Path | wire.Export, plane: str, values: Values) -> Handshakes | None:
        found: Handshakes | None = self._call("overhead", "handshakes", pcap)
        return found

    def protected_lengths(self, pcap: Path | wire.Export, src: str | None = None) -> list[int]:
        return list(self._call("overhead", "protected_lengths", pcap, src) or [])


# ----------------------------------------------------------------------------------------- RAN

@dataclasses.dataclass(frozen=True)
class RanContext:
    """What a RAN's render gets: the values, the SIM secrets, where to write, the options."""
    values: Values
    subscribers: dict[str, Any]
    out_dir: Path
    header: str                      # the "rendered, do not edit" comment (without comment marks)
    uu: str | None = None            # UU=<nea>-<nia>: AS security of an OAI RAN (docs/ran.md)
    overrides: Any = None            # node -> the overlays' and dimensions' merged overrides

    def override(self, node: str) -> dict[str, Any]:
        return dict(self.overrides(node) or {}) if self.overrides is not None else {}


class RanPlugin(Plugin):
    """A RAN variant (RAN=<name>): its nodes, configs and Compose services.

    Every variant exports the same RAN_* variables (compose_env), which the scripts read
    instead of assuming UERANSIM: RAN, RAN_READY (the service healthy once the RAN is up),
    RAN_UE_TUN, RAN_UE_SESSION_LOG, RAN_SCALE."""

    kind: ClassVar[str] = "ran"
    planes: ClassVar[tuple[str, ...]] = ()
    """Planes only this variant has (the split RAN's f1c, f1u, e1)."""
    pinned_key: ClassVar[str] = ""
    """Its key in nf-configs/stack.yaml holding the version its image pins (ueransim_version)."""

    # The hooks below call the folder's services.py (nodes, env_nodes, render, compose,
    # compose_env, plan, images, each given the variant's name); a folder without one has nothing
    # of the kind (or its plug-in overrides them).

    def nodes(self, values: Values) -> list[str]:
        """The stack.yaml nodes it runs."""
        return list(self._call("services", "nodes", self.name, values) or [])

    def env_nodes(self) -> list[str]:
        """Its program containers that get an env/<node>.env."""
        return list(self._call("services", "env_nodes", self.name) or [])

    def check_options(self, uu: str | None, values: Values) -> None:
        """Called once per render before anything is written: testbed.ran.RanError (a usage error)
        for options it cannot honour (UU=...)."""

    def render(self, ctx: RanContext) -> list[Path]:
        """Called by render: its configs under ctx.out_dir; returns the files written."""
        return list(self._call("services", "render", self.name, ctx) or [])

    def compose(self, values: Values) -> dict[str, Any]:
        """Its Compose services (+ networks), rendered into <render dir>/compose/ran.yaml."""
        return dict(self._call("services", "compose", self.name, values) or {})

    def compose_env(self, values: Values) -> dict[str, str]:
        """Its variables for compose.env (the RAN_* set)."""
        return dict(self._call("services", "compose_env", self.name, values) or {})

    def plan(self, values: Values) -> list[str]:
        """Lines for plan.txt."""
        return list(self._call("services", "plan", self.name, values) or [])

    def images(self) -> list[str]:
        """The image variables it runs (UERANSIM_IMAGE ...)."""
        return list(self._call("services", "images", self.name) or [])

    def image_versions(self) -> dict[str, tuple[str, str]]:
        """{manifest key: (image, key in its contents file)} of its programs (the UE's ping and
        iperf3 included: the experiments run them in its UE)."""
        return {}


# ---------------------------------------------------------------------------------- dimensions

class DimensionChoice:
    """A chosen value of a dimension (what `DimensionPlugin.select` returns), as render calls it."""

    name: str = ""
    """Its render subdir, fragment name and plan label (the dimension's name)."""

    def apply(self, values: Values) -> Values:
        """Called before anything is rendered: the stack values as this choice runs them."""
        return values

    def render(self, profile: Profile, plane: str, values: Values, out_dir: Path) -> dict[str, str]:
        """Its files under out_dir (<render dir>/<name>/, created empty); returns its compose.env
        variables."""
        return {}

    def compose_services(self, profile: Profile, plane: str, values: Values) -> dict[str, dict[str, Any]]:
        """{service: override} for <render dir>/<name>.compose.yaml; empty: no fragment."""
        return {}

    def nf_config_overrides(self, node: str, profile: Profile, values: Values) -> dict[str, Any]:
        """As OverlayPlugin.nf_config_overrides, merged after the overlay's."""
        return {}

    def nf_environment(self, node: str, profile: Profile, values: Values) -> dict[str, str]:
        """As OverlayPlugin.nf_environment, merged after the overlay's."""
        return {}

    def describe(self, env: dict[str, str]) -> str:
        """One line of plan.txt (env: the render's compose.env)."""
        return self.name


class DimensionPlugin(Plugin):
    """A choice orthogonal to the profile, made by variables of its own (SECFN=, IDS=, NAS=)."""

    kind: ClassVar[str] = "dimension"
    variables: ClassVar[dict[str, str]] = {}
    """Its variables (Make/environment, UPPER_CASE) -> help; `python -m testbed render` offers each
    as --<variable> and a run specification stores them under `dimensions`."""

    def select(self, options: Mapping[str, str], profile: Profile, plane: str, ran: str) -> DimensionChoice | None:
        """Called once per render and run: the chosen value from its variables ({VARIABLE: value},
        "" = not set; the command line folds the environment in), None when not in use;
        testbed.dimensions.SelectionError (a usage error) for a bad choice."""
        return None

    def check_run(self, run_dir: Path, manifest: Manifest, values: Values) -> list[RunCheck]:
        """Called once per run after its captures are judged: its own run-level checks."""
        return []


# --------------------------------------------------------------------------------------- engines

class EnginePlugin(Plugin):
    """A security-function engine (IDS=<name>) run by testbed/secfn/entrypoint.sh."""

    kind: ClassVar[str] = "engine"
    program: ClassVar[str] = ""
    """Its executable in its image (PATH); the modes it runs are catalogue data (profiles.yaml
    secfn.engines)."""

    # The hooks below call the folder's engine.py: check(sf) where it has one, render(sf, cfg_dir,
    # ...) and counters(log_dir) (one place per engine instead of an adapter method per hook and
    # engine); a plug-in whose folder has none overrides them.

    def check(self, sf: Secfn) -> str | None:
        """Called when a function is resolved: a setting it cannot honour, or None."""
        engine = self._module("engine")
        found: str | None = engine.check(sf) if hasattr(engine, "check") else None
        return found

    def render(self, sf: Secfn, cfg_dir: Path, *, config_at: Path, log_at: Path, iface: str,
               home_net: str, program: str) -> Launch:
        """Write its configuration (rules included) into cfg_dir; return how to launch it."""
        engine = self._module("engine")
        if engine is None:
            raise NotImplementedError(f"engine {self.name} has no render")
        launch: Launch = engine.render(sf, cfg_dir, config_at=config_at, log_at=log_at, iface=iface,
                                       home_net=home_net, program=program)
        return launch

    def counters(self, log_dir: Path) -> Counters:
        """What it says it did, from its own output after it stopped."""
        engine = self._module("engine")
        if engine is None:
            raise NotImplementedError(f"engine {self.name} has no counters")
        counted: Counters = engine.counters(log_dir)
        return counted

    def host_program(self, work_dir: Path) -> tuple[str, str]:
        """Called by the namespace lab: (executable, LD_LIBRARY_PATH) of the engine on this host
        (built into work_dir if it must be); FileNotFoundError naming how to get it."""
        if shutil.which(self.program) is None:
            from testbed import host_tools
            raise FileNotFoundError(f"{self.program} not found: {host_tools.install_hint(self.program)} (docs/secfn.md)")
        return self.program, ""


# -------------------------------------------------------------------------------------- runtimes

class RuntimeOptionError(ValueError):
    """A runtime option or placement it cannot honour (a usage error, exit 2); the message names
    the valid values."""


# What a runtime's driver library (RuntimePlugin.driver) defines; the drivers call only these to
# reach the engine (scripts/lib/stack.sh documents each beside its one caller):
DRIVER_FUNCTIONS = (
    "engine_require",         # the engine is reachable (not for DRY_RUN); dies naming what is missing
    "engine_check",           # EXPERIMENT: what this engine cannot run of it refused (exit 2), DRY_RUN too
    "engine_create",          # REL ARGS...: what exists before the first NF starts (Compose: containers)
    "engine_up",              # REL ARGS...: the stack up and ready; sets RENDER and DC (Compose's verbs)
    "engine_down",            # tear the stack of RENDER down
    "engine_pin",             # CPUSET_STACK: the stack's containers on those CPUs
    "engine_net_capture",     # NAME REL NODE NETWORK... -- ATTRS: whole packets where NODE is
    "engine_watch_start",     # SVC: the overlay watcher while SVC pings
    "engine_evidence",        # DIR [SVC...]: every container's log and state of a failed stack
    "engine_record",          # where the stack ran, into the run's manifest
    "engine_n6_server_start", # REL PORT ADDRESS -- CMD: a server where the n6 gateway ADDRESS is
    "engine_n6_server_stop",  # that server stopped, its output kept in REL
    "engine_cpu_read",        # SNAPS LABEL [TABLE]: host-wide CPU at one instant (and every container's)
)


class RuntimePlugin(Plugin):
    """How a rendered stack runs (ENGINE=<name>): the Compose files the core renders on one Docker
    host, or the same stack as the objects of another engine (Kubernetes). Both take the render
    dir the core wrote (the one catalogue, plug-ins, keys and privileges) and add their own files."""

    kind: ClassVar[str] = "runtime"
    variables: ClassVar[dict[str, str]] = {}
    """Its own variables (Make/environment, UPPER_CASE) -> help; `python -m testbed render` offers
    each as --<variable> and hands them to check_options and render as {VARIABLE: value}."""
    doctor: ClassVar[str | None] = None
    """File name, in the folder, of the script `make doctor ENGINE=<name>` runs (its exit status is
    the doctor's); None: scripts/doctor.sh's checks of the Docker host."""
    driver: ClassVar[str] = "driver.sh"
    """File name, in the folder, of the bash library the experiment drivers talk to the stack
    through (scripts/lib/stack.sh sources the one of ENGINE=): it defines every function of
    DRIVER_FUNCTIONS, so no driver and no core library names an engine. Its command lines are
    the plug-in's (Compose's wrapper scripts/lib/compose.sh; Kubernetes' testbed/runtime/k8s/stackctl.py)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.doctor and not (self.folder / self.doctor).is_file():
            out.append(f"{self.folder}: no {self.doctor} (its doctor)")
        lib = self.folder / self.driver
        if not lib.is_file():
            out.append(f"{self.folder}: no {self.driver} (the drivers' library)")
        else:
            text = lib.read_text(encoding="utf-8")
            out += [f"{lib}: defines no {f}() (RuntimePlugin.DRIVER_FUNCTIONS)" for f in DRIVER_FUNCTIONS
                    if f"\n{f}() {{" not in text]
        return out

    def check_options(self, placement: Placement, options: Mapping[str, str]) -> None:
        """Called once per render before anything is written: RuntimeOptionError for a placement
        (PLACEMENT=, testbed/placement.py) or an option it cannot honour."""

    def render(self, rendered: Rendered, placement: Placement, options: Mapping[str, str]) -> list[Path]:
        """Called once the core's render dir is written (compose.env, the Compose files, the NF,
        RAN and overlay configs): its own objects written into it; returns the files written.
        RuntimeOptionError for a placement naming what the render does not run."""
        return []

    def plan(self, rendered: Rendered, placement: Placement, options: Mapping[str, str]) -> list[str]:
        """Lines added to plan.txt (what `make render` prints) after render."""
        return []


BASES: dict[str, type[Plugin]] = {
    "overlay": OverlayPlugin, "ran": RanPlugin, "dimension": DimensionPlugin, "engine": EnginePlugin,
    "runtime": RuntimePlugin,
}
