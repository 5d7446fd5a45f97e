"""The TLS overlay plug-in: Open5GS's own https between the SBI NFs, one version and suite per
profile (patches/open5gs/0001-sbi-tls-knobs.patch); what the core asks of it, answered from
this folder (README.md)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from testbed import stack, wire
from testbed.contract import Decryption, FolderOverlay, KeySource, Values
from testbed.profiles import Profile
from testbed.verdict import Verdict
from tls import overhead, overlay, verify


class Tls(FolderOverlay):
    def render(self, profile: Profile, plane: str, values: Values, keys_dir: Path, out_dir: Path,
               nodes: list[str] | None = None) -> dict[str, Path]:
        return overlay.render(profile, plane, values, keys_dir, out_dir)

    def ensure_keys(self, root: Path, nodes: list[str], values: Values) -> None:
        overlay.ensure_mldsa_keys(root, nodes, values)

    def verify_capture(self, pcap: Path, profile: Profile, plane: str, values: Values) -> Verdict:
        return verify.verify_capture(pcap, profile, plane, values)

    def key_sources(self) -> list[KeySource]:
        return [KeySource("{node}", overlay.NF_KEYLOG, "tls", combined=True)]

    def key_environment(self, node: str, values: Values) -> dict[str, str]:
        return overlay.keylog_environment(node, values)

    def decryption(self, key_files: list[Path]) -> Decryption | str:
        if not key_files:
            return "no TLS key log among the run's key files"
        return Decryption({"tls.keylog_file": str(key_files[0])}, (), "tls", "TLS key log", carrier="tls")

    def packet_overhead(self, profile: Profile, inner: int, pcap: Path | wire.Export | None = None) -> int | None:
        return overhead.tls_record_overhead(profile.params["version"], profile.params["cipher"])

    def wire_fields(self, plane: str, values: Values) -> wire.Fields:
        return overhead.fields(stack.sbi_port(values))

    def handshakes(self, pcap: Path | wire.Export, plane: str, values: Values) -> wire.Handshakes | None:
        return overhead.tls_handshake(pcap, stack.sbi_port(values))

    def handshake_records(self, pcap: Path, profile: Profile) -> list[dict[str, Any]]:
        from tls import handshakes
        return handshakes.records(pcap, overlay.settings(profile))

    def post_quantum(self, profile: Profile) -> bool:
        return overlay.settings(profile).post_quantum

    def classical_reference(self, profile: Profile) -> str | None:
        return overlay.PQ_REFERENCE if self.post_quantum(profile) else None

    def analytic_handshake_sizes(self) -> list[tuple[str, str, int, int]]:
        # key_share entries (draft-ietf-tls-ecdhe-mlkem, RFC 8446 4.2.8): client / server share bytes
        return [("TLS key share X25519", "client / server", 32, 32),
                ("TLS key share X25519MLKEM768", "client / server", 1184 + 32, 1088 + 32),
                ("TLS key share SecP256r1MLKEM768", "client / server", 65 + 1184, 65 + 1088),
                ("TLS key share MLKEM768", "client / server", 1184, 1088),
                ("ML-DSA-65 public key / signature (FIPS 204)", "bytes", 1952, 3309)]
