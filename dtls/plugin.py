"""The DTLS relay overlay plug-in (socat OPENSSL-DTLS carrying an SCTP link, as the RAN study ran
it): what the core asks of it, answered from this folder (README.md)."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from dtls import overhead, overlay
from testbed import wire
from testbed.contract import Decryption, FolderOverlay, Values
from testbed.profiles import Profile
from testbed.render import compose_env


class Dtls(FolderOverlay):
    def render(self, profile: Profile, plane: str, values: Values, keys_dir: Path, out_dir: Path,
               nodes: list[str] | None = None) -> dict[str, Path]:
        return overlay.render(profile, plane, values, keys_dir, out_dir)

    def plaintext_tap(self, plane: str, values: Values) -> dict[str, str]:
        return overlay.plaintext_tap(plane, values)

    def relay_link(self, plane: str, values: Values) -> Any:
        return overlay.links(values).get(plane)

    def relay_target(self, overlay_dir: Path, link: Any) -> tuple[Path, str, list[str] | None]:
        """(the server end's rendered env file, DTLS_RELAYS, its relay line for the link's plane or
        None): the relay line's 5th field is the address the server's relay connects to."""
        env_file = overlay_dir / link.server / "overlay.env"
        relays = (compose_env.parse_env(env_file.read_text(encoding="utf-8")).get("DTLS_RELAYS", "")
                  if env_file.is_file() else "")
        lines = [f for f in (r.split() for r in relays.strip("'\"").split(";")) if len(f) >= 6]
        return env_file, "DTLS_RELAYS", next((f for f in lines if f[0] == "server" and f[1] == link.plane), None)

    def kernel_datapath(self) -> tuple[bool, str]:
        return False, "the DTLS relay is socat in userspace, always"

    def userspace_datapath(self) -> str | None:
        return shutil.which("socat")

    def datapath(self, kernel: bool, userspace: str | None) -> str | None:
        return "socat"

    def decryption(self, key_files: list[Path]) -> Decryption | str:
        return "DTLS relay: socat and Debian's OpenSSL write no key log (docs/analysis.md)"

    def packet_overhead(self, profile: Profile, inner: int, pcap: Path | wire.Export | None = None) -> int | None:
        version, cipher = profile.params.get("version"), profile.params.get("cipher")
        return overhead.dtls_record_overhead(version, cipher) if version and cipher else 0

    def handshakes(self, pcap: Path | wire.Export, plane: str, values: Values) -> wire.Handshakes | None:
        lk = overlay.links(values).get(plane)
        return None if lk is None else overhead.dtls_handshake(pcap, lk.relay_port)

    def wire_fields(self, plane: str, values: Values) -> wire.Fields:
        lk = overlay.links(values).get(plane)
        return wire.Fields() if lk is None else overhead.fields(lk.relay_port)
