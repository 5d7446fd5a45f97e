"""The MACsec overlay plug-in (IEEE 802.1AE on the N3 link, Linux macsec links, static SAKs):
what the core asks of it, answered from this folder (README.md)."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from macsec import overhead, overlay, run_checks, verdict
from macsec import datapath as probes
from testbed import programs, wire
from testbed.contract import DoctorNotes, FolderOverlay, RunCheck, Values
from testbed.profiles import Profile
from testbed.verdict import Verdict


class Macsec(FolderOverlay):
    def compose_services(self, profile: Profile, plane: str, values: Values) -> dict[str, dict[str, Any]]:
        return overlay.compose_services(plane, values)

    def host_needs(self, profile: Profile, plane: str) -> list[str]:
        return ["macsec kernel module (CONFIG_MACSEC)", "nftables egress hook (Linux >= 5.16)"]

    def doctor_notes(self) -> DoctorNotes:
        return DoctorNotes(
            "MACsec (kernel)", "a macsec link works",
            "the MACsec profiles cannot run here: Linux has no userspace MACsec (the other profiles are unaffected)",
            "`sudo modprobe macsec` (CONFIG_MACSEC; Debian's kernels build it as a module)",
            "MACsec (it has no userspace datapath)", "every MACsec profile", "`sudo modprobe macsec`")

    def kernel_datapath(self) -> tuple[bool, str]:
        return probes.probe_kernel()

    def cannot_run(self, profile: Profile, datapath: str | None) -> str | None:
        if datapath not in self.datapaths:
            return f"no kernel MACsec: {probes.probe_kernel()[1]}; Linux has no userspace MACsec to fall back to"
        if profile.params.get("xpn"):
            ok, why = probes.probe_xpn()
            if not ok:
                return f"{profile.params['cipher_label']} needs Linux >= 5.7 and an iproute2 that knows it: {why}"
        return None

    def versions(self) -> dict[str, str | None]:
        return {"iproute2": programs.program_version(["ip", "-V"], r"iproute2-(?:ss)?v?([\d.]+)")}

    def image_versions(self) -> dict[str, tuple[str, str]]:
        return {"iproute2": ("tools", "iproute2")}

    def verify_capture(self, pcap: Path, profile: Profile, plane: str, values: Values) -> Verdict:
        return verdict.verify_capture(pcap, profile, plane, values)

    def check_run(self, run_dir: Path, manifest: Mapping[str, Any], values: Values) -> list[RunCheck]:
        from testbed import profiles
        return [RunCheck(run_checks.check_run(run_dir, manifest, profiles.get(manifest["profile"]), values))]

    def packet_overhead(self, profile: Profile, inner: int, pcap: Path | wire.Export | None = None) -> int | None:
        return overhead.packet_overhead(profile, inner)

    # MACsec counts frames with its own display-filter pass (macsec/overhead.py): given the shared
    # export of a capture (testbed/wire.py Export) it reads the capture the export came from
    def handshakes(self, pcap: Path | wire.Export, plane: str, values: Values) -> wire.Handshakes | None:
        path = pcap.path if isinstance(pcap, wire.Export) else pcap
        return overhead.handshakes(path) if path is not None else None

    def protected_lengths(self, pcap: Path | wire.Export, src: str | None = None) -> list[int]:
        path = pcap.path if isinstance(pcap, wire.Export) else pcap
        return overhead.protected_lengths(path, src) if path is not None else []
