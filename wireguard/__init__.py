"""The wireguard overlay plug-in (README.md; testbed/contract.py OverlayPlugin)."""
