"""The IPsec overlay plug-in (strongSwan swanctl, IKEv2, ESP tunnel mode): what the core asks of
it, answered from this folder (README.md)."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ipsec import datapath, keylog, overhead, overlay, run_checks
from testbed import wire
from testbed.contract import Decryption, DoctorNotes, FolderOverlay, KeySource, RunCheck, Values
from testbed.profiles import Profile


class Ipsec(FolderOverlay):
    decode_as = tuple(overlay.NO_ESP_NULL_HEURISTIC)

    def compose_services(self, profile: Profile, plane: str, values: Values) -> dict[str, dict[str, Any]]:
        return overlay.compose_services(profile, plane, values, self.userspace_possible(values))

    def doctor_notes(self) -> DoctorNotes:
        return DoctorNotes(
            "xfrm ESP (kernel IPsec)", "ESP with AES-GCM works",
            "kernel-datapath IPsec: IPsec profiles fall back to strongSwan's kernel-libipsec (userspace ESP, in the "
            "tools image); they run, but their latencies are not comparable with the paper's (manifests record "
            "datapath.userspace=true)",
            "`sudo modprobe esp4 xfrm_user xfrm_interface` and the AEAD modules (`modprobe gcm aesni_intel`); "
            "kernels without CONFIG_INET_ESP need another kernel",
            "the kernel-libipsec fallback", "every IPsec profile (make run-n3 PROFILE=aes128gcm ..., the IPsec SBI profiles)",
            "`sudo modprobe esp4 xfrm_user` (kernel datapath) or `sudo modprobe tun` (userspace fallback)")

    def kernel_datapath(self) -> tuple[bool, str]:
        return datapath.probe_xfrm_esp()

    def userspace_datapath(self) -> str | None:
        return datapath.libipsec_plugin()

    def cannot_run(self, profile: Profile, datapath: str | None) -> str | None:
        if datapath == "libipsec":
            ok, why = overlay.libipsec_capable(profile)
            return None if ok else why
        return None

    def lab_environment(self, profiles: list[Profile]) -> dict[str, str]:
        return overlay.lab_environment(profiles)

    def versions(self) -> dict[str, str | None]:
        return {"strongswan": overlay.charon_version(), "strongswan_plugins": overlay.charon_plugins()}

    def image_versions(self) -> dict[str, tuple[str, str]]:
        # the compiled strongSwan of the tools image (images/tools/Dockerfile); an image from before
        # it recorded Debian's package
        return {"strongswan": ("tools", "strongswan|strongswan-charon"),
                "strongswan_plugins": ("tools", "strongswan_plugins")}

    def check_run(self, run_dir: Path, manifest: Mapping[str, Any], values: Values) -> list[RunCheck]:
        from testbed import profiles
        return run_checks.check_run(run_dir, manifest, profiles.get(manifest["profile"]), values)

    def key_sources(self) -> list[KeySource]:
        # charon logs every CHILD_SA's keys into the holder's tmpfs in every run (ipsec/overlay.py)
        return [KeySource("{node}-net", overlay.KEYS_LOG, "esp")]

    def decryption(self, key_files: list[Path]) -> Decryption | str:
        sas = [sa for p in key_files for sa in keylog.parse(p.read_text(encoding="utf-8", errors="replace").splitlines())]
        args, skipped = keylog.uat_args(sas)
        if not args:
            return "no usable ESP SA in the holders' key logs" + (f" ({'; '.join(skipped[:2])})" if skipped else "")
        note = f"{len(skipped)} SA(s) tshark cannot decrypt" if skipped else ""
        return Decryption(dict(keylog.PREFS), tuple(args), "esp", f"ESP, {len(args) // 2} SA(s)", note)

    def packet_overhead(self, profile: Profile, inner: int, pcap: Path | wire.Export | None = None) -> int | None:
        return overhead.packet_overhead(profile, inner, pcap)

    def handshake_records(self, pcap: Path, profile: Profile) -> list[dict[str, Any]]:
        from ipsec import ike_sas
        return [sa.record() for sa in ike_sas.read(pcap) if sa.complete]

    def classical_reference(self, profile: Profile) -> str | None:
        ref = profile.params.get("classical_reference")
        return str(ref) if ref else None

    def analytic_handshake_sizes(self) -> list[tuple[str, str, int, int]]:
        # RFC 7296 3.4: the KE payload carries the public value (X25519: 32 B; ML-KEM: the
        # encapsulation key one way, the ciphertext back), after an 8-byte payload header
        return [("IKEv2 KE payload, X25519", "request / response", 8 + 32, 8 + 32),
                ("IKEv2 KE payload, ML-KEM-768 (IKE_INTERMEDIATE)", "request / response", 8 + 1184, 8 + 1088),
                ("IKEv2 KE payload, ML-KEM-1024 (IKE_INTERMEDIATE)", "request / response", 8 + 1568, 8 + 1568)]
