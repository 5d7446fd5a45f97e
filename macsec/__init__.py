"""The macsec overlay plug-in (README.md; testbed/contract.py OverlayPlugin)."""
