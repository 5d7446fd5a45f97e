"""Published values to set beside our measurements (data, with their source).

Transcribed from ``tests/data/reference/published-values.md`` (the project's digest of the papers'
printed values; docs/methodology.md cites each paper). Each entry names the paper and section, the quantity, the value and unit, the
paper's own words, and ``match``: which of our summary-table rows measure the same thing
(columns of ``analysis.tables``; a tuple value matches any of its items; ``cipher_contains``
matches a substring of the cipher). N3 figures also match the ``overlay`` experiment, the
same ping through the same overlay between two network namespaces (``make run-overlay``); the
report never sets those beside the papers' figures (analysis/report.py).

Like for like: each reference matches only the profiles of the paper's own configurations
(the 2025 paper's four TLS profiles, the 2024 paper's fourteen suites, the IPsec modes the paper
ran: start and trap), and ``aggregate`` says whether the paper's number is a mean over them or
its slowest (max) or fastest (min) configuration. ``tls12-aes128gcm`` and
``tls12-ecdsa-aes128gcm`` (and the other three pairs) are the same settings under each paper's
name: each paper's rows use its own.
Hosts differ from the papers' (i7-13700, kernel 6.5, AES-NI), so compare overheads and
orderings, not absolute times.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

WISEC2025 = "Michaelides et al., WiSec 2025"
WISEC2024 = "Zeidler et al., WiSec 2024"
N3 = ("n3", "overlay")
TLS2025 = ("tls12-aes128gcm", "tls12-aes256gcm", "tls13-aes128gcm", "tls13-aes256gcm")
TLS2024 = ("tls12-ecdsa-aes128ccm", "tls12-ecdsa-aes128gcm", "tls12-ecdsa-aes256ccm", "tls12-ecdsa-aes256gcm",
           "tls12-ecdsa-chacha20", "tls12-rsa-aes128gcm", "tls12-rsa-aes256gcm", "tls12-rsa-chacha20",
           "tls13-ecdsa-aes128gcm", "tls13-ecdsa-aes256gcm", "tls13-ecdsa-chacha20", "tls13-rsa-aes128gcm",
           "tls13-rsa-aes256gcm", "tls13-rsa-chacha20")
PAPER_MODES = ("start", "trap")          # the IPsec modes the 2025 paper ran
THROUGHPUT_SRC = "IPsec throughput over 1 Gbit/s (iperf3, strongSwan 5.3.5, ESP tunnel)"


@dataclass(frozen=True)
class Reference:
    key: str
    source: str                 # paper
    section: str                # where in the paper / REFERENCE.md
    table: str                  # analysis.tables name the measured value comes from
    quantity: str               # column of that table: overhead, overhead_pct, mean, cpu_s_per_ue
    value: float | None         # None: the paper states it only qualitatively
    unit: str
    text: str                   # the paper's statement
    match: dict[str, Any] = field(default_factory=dict)
    scale: float = 1.0          # measured * scale is in ``unit`` (ms -> us: 1000)
    range: tuple[float, float] | None = None   # when the paper gives a range instead of one value
    aggregate: str = "mean"     # the paper's number over its configurations: mean | max (slowest) | min (fastest)
    paper_ci: str = "not printed"   # the paper's own interval, where it prints one

    def paper_value(self) -> str:
        if self.range is not None:
            return f"{self.range[0]:g} to {self.range[1]:g} {self.unit}"
        if self.value is None:
            return "(qualitative)"
        return f"{self.value:g} {self.unit}"


# The 2024 paper's Sec. 5 breakdown of its fourteen suites: (key, its words, the suites of the
# group, cold %, warm %), each a cold and a warm row.
TLS2024_GROUPS: tuple[tuple[str, str, dict[str, str], float, float], ...] = (
    ("tls12", "TLS 1.2", {"version": "1.2"}, 29.06, 0.64),
    ("tls13", "TLS 1.3", {"version": "1.3"}, 33.58, 0.83),
    ("tls-ecdsa", "ECDSA", {"cert": "ecdsa"}, 28.01, 0.70),
    ("tls-rsa", "RSA-2048", {"cert": "rsa"}, 34.63, 0.78),
    ("tls-gcm", "AES-GCM", {"cipher_contains": "GCM"}, 31.27, 0.74),
    ("tls-chacha", "ChaCha20-Poly1305", {"cipher_contains": "CHACHA20"}, 31.41, 0.75),
)
# The throughput source's iperf3 means: (key, its words, what of ours matches, TCP, UDP in Mbit/s).
THROUGHPUTS: tuple[tuple[str, str, dict[str, str], float, float], ...] = (
    ("baseline", "no IPsec", {"protocol": "none"}, 935, 951),
    ("aes128gcm", "AES128-GCM16", {"profile": "aes128gcm"}, 899, 942),
    ("aes128cbc", "AES128 + SHA256", {"profile": "aes128cbc"}, 710, 835),
)


def _tls2024_groups() -> list[Reference]:
    return [Reference(f"{key}-{role}", WISEC2024, "Sec. 5", "attach", "overhead_pct", value, "%",
                      f"{words}: {value:.2f} % {role}",
                      {"experiment": "sbi", "profile": TLS2024, **group, "role": role})
            for key, words, group, cold, warm in TLS2024_GROUPS
            for role, value in (("cold", cold), ("warm", warm))]


def _throughput() -> list[Reference]:
    return [Reference(f"tp-{key}-{transport}", THROUGHPUT_SRC, f"IPv4 {transport.upper()}", "throughput", "mean",
                      value, "Mbit/s", f"{words} {value:g} Mbit/s ({transport.upper()})", {**match, "transport": transport})
            for key, words, match, tcp, udp in THROUGHPUTS
            for transport, value in (("tcp", tcp), ("udp", udp))]


REFERENCES: tuple[Reference, ...] = (
    # --- N3 RTT (Figure 2) ---
    Reference("n3-ipsec-64", WISEC2025, "Sec. 4, N3 (Fig. 2)", "rtt", "overhead", 55, "us",
              "all six ESP configurations: mean overhead 55 us (sd +-7 us across configurations), about +5 %",
              {"experiment": N3, "protocol": "ipsec", "size": 64}, 1000.0),
    Reference("n3-ipsec-64-pct", WISEC2025, "Sec. 4, N3 (Fig. 2)", "rtt", "overhead_pct", 5, "%",
              "IPsec about +5 % over the baseline RTT", {"experiment": N3, "protocol": "ipsec", "size": 64}),
    Reference("n3-ipsec-1024", WISEC2025, "Sec. 4, N3 (Fig. 2)", "rtt", "overhead", 55, "us",
              "overheads stay about constant from 64 B to 1,024 B",
              {"experiment": N3, "protocol": "ipsec", "size": 1024}, 1000.0),
    Reference("n3-wireguard-64", WISEC2025, "Sec. 4, N3 (Fig. 2)", "rtt", "overhead", 260, "us",
              "WireGuard +260 us, 17.2 % slower than the fastest IPsec configuration",
              {"experiment": N3, "protocol": "wireguard", "size": 64}, 1000.0),
    # --- SBI attach time (Figure 3) ---
    Reference("sbi-baseline-attach", WISEC2025, "Sec. 4, SBI (Fig. 3)", "attach", "mean", None, "ms",
              "implied baseline attach time roughly 200-250 ms on their host",
              {"experiment": "sbi", "protocol": "none"}, range=(200, 250)),
    Reference("sbi-warm-tls", WISEC2025, "Sec. 4, SBI warm", "attach", "overhead", 0.8, "ms",
              "warm: TLS +0.8 ms (~0.4 %)", {"experiment": "sbi", "profile": TLS2025, "role": "warm"}),
    Reference("sbi-warm-ipsec", WISEC2025, "Sec. 4, SBI warm", "attach", "overhead", 1.2, "ms",
              "warm: IPsec +1.2 ms (~0.55 %) on average", {"experiment": "sbi", "protocol": "ipsec", "mode": PAPER_MODES, "role": "warm"}),
    Reference("sbi-warm-wireguard", WISEC2025, "Sec. 4, SBI warm", "attach", "overhead", 2.4, "ms",
              "warm: WireGuard about twice the IPsec overhead (2 x 1.2 ms), ~1 % slower than the best IPsec",
              {"experiment": "sbi", "protocol": "wireguard", "role": "warm"}),
    Reference("sbi-cold-tls", WISEC2025, "Sec. 4, SBI cold", "attach", "overhead", 23, "ms",
              "cold: slowest TLS configuration ~23 ms overhead", {"experiment": "sbi", "profile": TLS2025, "role": "cold"},
              aggregate="max"),
    Reference("sbi-cold-ipsec-psk-trap", WISEC2025, "Sec. 4, SBI cold", "attach", "overhead", 24, "ms",
              "cold: fastest IPsec PSK trap configuration ~24 ms overhead (PSK faster than certificates)",
              {"experiment": "sbi", "protocol": "ipsec", "auth": "psk", "mode": "trap", "role": "cold"},
              aggregate="min"),
    Reference("sbi-cold-ipsec-start", WISEC2025, "Sec. 4, SBI cold", "attach", "overhead", 1, "ms",
              "cold: IPsec start mode about +-1 ms (~0.4 %), 22 ms faster than TLS",
              {"experiment": "sbi", "protocol": "ipsec", "mode": "start", "role": "cold"}),
    Reference("sbi-cold-wireguard", WISEC2025, "Sec. 4, SBI cold", "attach", "overhead", 6, "ms",
              "cold: WireGuard +6 ms (~2.5 %)", {"experiment": "sbi", "protocol": "wireguard", "role": "cold"}),
    # --- CPU (Figure 4) ---
    Reference("cpu-linear", WISEC2025, "Sec. 4, CPU (Fig. 4)", "cpu_slopes", "cpu_s_per_ue", None, "s/UE",
              "IPsec (ECDSA, AES256-GCM) vs TLS 1.3 (ECDSA, AES256-GCM) vs WireGuard: all linear, WireGuard lowest",
              {"profile": ("aes256gcm", "tls13-aes256gcm", "wireguard")}),
    # --- TLS suites (Zeidler et al. 2024), overhead = TLS/noTLS - 1 ---
    Reference("tls-cold-range", WISEC2024, "Sec. 5, cold", "attach", "overhead_pct", None, "%",
              "cold: 28.01 % to 34.63 % over the 14 suites", {"experiment": "sbi", "profile": TLS2024, "role": "cold"},
              range=(28.01, 34.63)),
    Reference("tls-warm-range", WISEC2024, "Sec. 5, warm", "attach", "overhead_pct", None, "%",
              "warm: 0.64 % to 0.83 %", {"experiment": "sbi", "profile": TLS2024, "role": "warm"},
              range=(0.64, 0.83)),
    *_tls2024_groups(),
    # --- throughput (REFERENCE.md, other source) ---
    *_throughput(),
)


def by_key(key: str) -> Reference:
    """A published value by key, from REFERENCES or RAN_REFERENCES."""
    every = REFERENCES + RAN_REFERENCES
    for r in every:
        if r.key == key:
            return r
    raise KeyError(f"no reference {key!r}; valid: {', '.join(r.key for r in every)}")


# --- RAN interfaces (Michaelides et al., WiSec 2026): matched by analysis/ran_report.py onto the
# RAN summary tables (analysis/ran_tables.py SUMMARY_COLUMNS: ours and the authors' data alike).
# Overheads are against the same interface's no-security runs; the paper's six ESP
# configurations are our start-mode certificate profiles; DTLS figures are printed net of the
# relay's own cost (DTLS minus the relay-only run: ``relay`` = ``net``).
WISEC2026 = "Michaelides et al., WiSec 2026"
ESP_SIX = ("aes128gcm", "aes256gcm", "aes128cbc", "aes256cbc", "nullsha256", "nullgmac")
RAN_REFERENCES: tuple[Reference, ...] = (
    Reference("f1u-ipsec", WISEC2026, "Sec. 5.2, user plane (Fig. 2)", "ran", "overhead", 120, "us",
              "F1-U: all IPsec configurations combined add on average ~120 us RTT (~60 us one way), "
              "differences between suites indistinguishable",
              {"interface": "f1u", "ran": "split", "protocol": "ipsec", "profile": ESP_SIX}, 1000.0),
    Reference("f1c-ipsec", WISEC2026, "Sec. 5.2, control plane (Fig. 2)", "ran", "overhead", 120, "us",
              "F1-C: all IPsec configurations add on average ~120 us to UE context setup",
              {"interface": "f1c", "protocol": "ipsec", "profile": ESP_SIX}, 1000.0),
    Reference("f1c-ipsec-fastest", WISEC2026, "Sec. 5.2, control plane (Fig. 2)", "ran", "overhead", 40, "us",
              "F1-C: the fastest IPsec configuration (AES256-HMAC) adds only ~40 us",
              {"interface": "f1c", "protocol": "ipsec", "profile": ESP_SIX}, 1000.0, aggregate="min"),
    Reference("f1c-dtls", WISEC2026, "Sec. 5.2, control plane (Fig. 2)", "ran", "overhead", 430, "us",
              "F1-C: DTLS ~430 us (printed net of the socat relay's own cost)",
              {"interface": "f1c", "protocol": "dtls", "relay": "net"}, 1000.0),
    Reference("e1-ipsec", WISEC2026, "Sec. 5.2, control plane (Fig. 2)", "ran", "overhead", 80, "us",
              "E1: IPsec configurations introduce on average ~80 us of overhead",
              {"interface": "e1", "protocol": "ipsec", "profile": ESP_SIX}, 1000.0),
    Reference("e1-ipsec-aes128gcm", WISEC2026, "Sec. 5.2, control plane (Fig. 2)", "ran", "overhead", 10, "us",
              "E1: IPsec with AES128-GCM performs best, adding only ~10 us",
              {"interface": "e1", "profile": "aes128gcm"}, 1000.0),
    Reference("e1-dtls", WISEC2026, "Sec. 5.2, control plane (Fig. 2)", "ran", "overhead", 300, "us",
              "E1: DTLS adds ~300 us (printed net of the socat relay's own cost)",
              {"interface": "e1", "protocol": "dtls", "relay": "net"}, 1000.0),
    Reference("e2e-split-baseline", WISEC2026, "Sec. 6.2 (Fig. 3)", "ran", "mean", 11, "ms",
              "end-to-end (1,024 B pings UE -> UPF): disaggregated baseline 11 ms",
              {"interface": "e2e", "ran": "split", "protocol": "none"}),
    Reference("e2e-oai-baseline", WISEC2026, "Sec. 6.2 (Fig. 3)", "ran", "mean", 12, "ms",
              "end-to-end: monolithic baseline 12 ms", {"interface": "e2e", "ran": "oai", "protocol": "none"}),
    Reference("e2e-split-overhead", WISEC2026, "Sec. 6.2 (Fig. 3)", "ran", "overhead", 1.3, "ms",
              "end-to-end, disaggregated: security on Uu, F1-U and N3 adds ~1.3 ms",
              {"interface": "e2e", "ran": "split", "protocol": "ipsec"}),
    Reference("e2e-oai-overhead", WISEC2026, "Sec. 6.2 (Fig. 3)", "ran", "overhead", 1, "ms",
              "end-to-end, monolithic: security on Uu and N3 adds ~1 ms",
              {"interface": "e2e", "ran": "oai", "protocol": "ipsec"}),
)

