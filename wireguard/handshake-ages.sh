#!/usr/bin/env bash
# handshake-ages.sh: the time now (unix s) and every peer's latest handshake in this network
# namespace; run-sbi records it in every holder right before the warm UE (its sessions must be
# younger than WireGuard's 120 s rekey time: wireguard/run_checks.py). Docs: docs/overlays/wireguard.md.
set -euo pipefail
command -v wg >/dev/null || { echo "handshake-ages.sh: wg not found" >&2; exit 1; }
date +%s
wg show all latest-handshakes
