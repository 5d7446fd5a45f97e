"""How tshark decrypts a run's own traffic for the per-operation breakdown (docs/analysis.md
"Decryption"): the key files a run exported (kind `keylog`, testbed/keylog/) -> tshark arguments.

- TLS: the iteration's NSS key log (`protocol: tls`; the NFs' logs concatenated by the driver)
  -> `tls.keylog_file`;
- IPsec: charon's key log of every holder (`protocol: esp`) -> the ESP SAs (testbed/keylog/esp.py)
  -> `esp_sa` records and `esp.enable_encryption_decode`;
- WireGuard, DTLS: nothing the tools can export here (docs/analysis.md says why): such a run's
  protected traffic stays unread and the breakdown says so.

Validity is never judged on decrypted traffic (testbed/validity.py reads the encrypted capture):
decryption only feeds the breakdown. Key files are opened by tshark, never copied into an output.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.parse.sbi_ops import CLEAR, Decode
from analysis.results import RawFile, Run
from testbed.keylog import KIND
from testbed.keylog import esp as esp_keys

# protocols whose SBI traffic is on the wire in the clear (nothing to decrypt)
CLEARTEXT = ("none",)
NOT_EXPORTABLE = {
    "wireguard": "WireGuard: tshark needs the peers' ephemeral private keys (wg.keylog_file); "
                 "wireguard-go's UAPI and the kernel expose only static keys (docs/analysis.md)",
    "dtls": "DTLS relay: socat and Debian's OpenSSL write no key log (docs/analysis.md)",
}


@dataclass(frozen=True)
class Plan:
    decode: Decode | None        # None: the traffic cannot be read
    status: str                  # cleartext | decrypted (tls|esp) | not decrypted: <why>


def key_files(run: Run, iteration: object) -> list[RawFile]:
    return [f for f in run.files(KIND) if f.attrs.get("iteration") == iteration]


def plan(run: Run, capture: RawFile) -> Plan:
    """How to read one SBI capture of a run."""
    protocol = run.protocol
    if protocol in CLEARTEXT:
        return Plan(CLEAR, "cleartext")
    plane = str(run.get("plane") or "sbi")
    if "sbi" not in plane.split(",") and plane != "all":
        return Plan(CLEAR, f"cleartext (the overlay covers {plane}, not the SBI)")
    if protocol in NOT_EXPORTABLE:
        return Plan(None, f"not decrypted: {NOT_EXPORTABLE[protocol]}")
    files = key_files(run, capture.attrs.get("iteration"))
    if not files:
        asked = (run.get("parameters") or {}).get("keys")
        return Plan(None, "not decrypted: the run exported no keys" + (
            " (KEYS=1 was set: see the run's log)" if str(asked) == "1" else " (run it with KEYS=1)"))
    missing = [f.path.name for f in files if not f.path.is_file()]
    if missing:
        return Plan(None, f"not decrypted: key file(s) missing: {', '.join(missing)}")
    if protocol == "tls":
        tls = [f.path for f in files if f.attrs.get("protocol") == "tls"]
        if not tls:
            return Plan(None, "not decrypted: no TLS key log among the run's key files")
        return Plan(Decode(prefs={"tls.keylog_file": str(tls[0])}, inputs=(tls[0],), label="tls"),
                    "decrypted (TLS key log)")
    if protocol == "ipsec":
        logs = [f.path for f in files if f.attrs.get("protocol") == "esp"]
        sas = [sa for p in logs for sa in esp_keys.parse(p.read_text(encoding="utf-8", errors="replace").splitlines())]
        args, skipped = esp_keys.uat_args(sas)
        if not args:
            return Plan(None, "not decrypted: no usable ESP SA in the holders' key logs"
                        + (f" ({'; '.join(skipped[:2])})" if skipped else ""))
        note = f"; {len(skipped)} SA(s) tshark cannot decrypt" if skipped else ""
        return Plan(Decode(prefs=esp_keys.PREFS, extra=tuple(args), inputs=tuple(logs), label="esp"),
                    f"decrypted (ESP, {len(args) // 2} SA(s){note})")
    return Plan(None, f"not decrypted: no decryption for protocol {protocol}")


def for_files(tls_keylog: Path | None = None, esp_logs: tuple[Path, ...] = ()) -> Decode:
    """The Decode of explicit key files (the sbi-ops command's --keylog / --esp-keys)."""
    prefs: dict[str, str] = {}
    extra: list[str] = []
    label = []
    if tls_keylog is not None:
        if not tls_keylog.is_file():
            raise FileNotFoundError(f"TLS key log {tls_keylog} does not exist")
        prefs["tls.keylog_file"] = str(tls_keylog)
        label.append("tls")
    if esp_logs:
        sas = []
        for p in esp_logs:
            sas += esp_keys.parse(p.read_text(encoding="utf-8", errors="replace").splitlines())
        args, skipped = esp_keys.uat_args(sas)
        if not args:
            raise ValueError(f"no ESP SA tshark can use in {', '.join(map(str, esp_logs))}"
                             + (f": {'; '.join(skipped)}" if skipped else " (expected charon's key log: "
                                "lines 'adding inbound ESP SA' with chd level 4)"))
        prefs.update(esp_keys.PREFS)
        extra += args
        label.append("esp")
    if not label:
        return CLEAR
    inputs = tuple(p for p in ((tls_keylog,) if tls_keylog else ()) + tuple(esp_logs))
    return Decode(prefs=prefs, extra=tuple(extra), inputs=inputs, label="+".join(label))
