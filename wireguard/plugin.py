"""The WireGuard overlay plug-in (one configuration by design; kernel module or wireguard-go):
what the core asks of it, answered from this folder (README.md)."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testbed import programs, wire
from testbed.contract import Decryption, DoctorNotes, FolderOverlay, RunCheck, Values
from testbed.profiles import Profile
from wireguard import datapath, overhead, overlay, rosenpass, run_checks


class WireGuard(FolderOverlay):
    decode_as = ("-d", f"udp.port=={overlay.LISTEN_PORT},wg")

    def compose_services(self, profile: Profile, plane: str, values: Values) -> dict[str, dict[str, Any]]:
        return overlay.compose_services(profile, plane, values, self.userspace_possible(values))

    def holder_commands(self, moment: str) -> list[tuple[str, tuple[str, ...]]]:
        # cold: no session may exist when the cold UE starts, whatever time passed since the holders'
        # start-up handshakes; warm: every session must be younger than the 120 s rekey time
        where = f"/opt/testbed/{self.name}"
        steps: dict[str, list[tuple[str, tuple[str, ...]]]] = {
            "before-cold": [("wg-reset", ("bash", f"{where}/reset-sessions.sh"))],
            "before-warm": [("wg-before-warm", ("bash", f"{where}/handshake-ages.sh"))]}
        return steps.get(moment, [])

    def doctor_notes(self) -> DoctorNotes:
        return DoctorNotes(
            "WireGuard (kernel)", "available",
            "kernel-datapath WireGuard: the WireGuard profiles fall back to wireguard-go (userspace, in the tools "
            "image); manifests record datapath.userspace=true",
            "`sudo modprobe wireguard` (in mainline since Linux 5.6; older kernels: wireguard-dkms)",
            "wireguard-go", "every WireGuard profile", "`sudo modprobe wireguard` or `sudo modprobe tun`")

    def kernel_datapath(self) -> tuple[bool, str]:
        return datapath.probe_kernel()

    def userspace_datapath(self) -> str | None:
        return datapath.wireguard_go()

    def versions(self) -> dict[str, str | None]:
        return {"wireguard_tools": programs.program_version(["wg", "--version"], r"v([\d.]+)"),
                "wireguard_go": programs.program_version(["wireguard-go", "--version"], r"v([\d.]+)"),
                "rosenpass": programs.program_version(["rosenpass", "--version"], r"rosenpass ([\d.]+)")}

    def image_versions(self) -> dict[str, tuple[str, str]]:
        return {"wireguard_tools": ("tools", "wireguard-tools"), "wireguard_go": ("tools", "wireguard-go"),
                "rosenpass": ("tools", "rosenpass")}

    def check_run(self, run_dir: Path, manifest: Mapping[str, Any], values: Values) -> list[RunCheck]:
        return run_checks.check_run(run_dir, manifest, overlay.LISTEN_PORT)

    def decryption(self, key_files: list[Path]) -> Decryption | str:
        return ("WireGuard: tshark needs the peers' ephemeral private keys (wg.keylog_file); "
                "wireguard-go's UAPI and the kernel expose only static keys (docs/analysis.md)")

    def packet_overhead(self, profile: Profile, inner: int, pcap: Path | wire.Export | None = None) -> int | None:
        return overhead.wireguard_overhead(inner)

    def handshake_records(self, pcap: Path, profile: Profile) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = list(overhead.handshake_records(pcap))
        return rows + (rosenpass.records(pcap) if profile.params.get("rosenpass") else [])

    def classical_reference(self, profile: Profile) -> str | None:
        return "wireguard" if profile.params.get("rosenpass") else None

    def analytic_handshake_sizes(self) -> list[tuple[str, str, int, int]]:
        return rosenpass.ANALYTIC_SIZES
