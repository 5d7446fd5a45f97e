"""Key export for decryption (docs/analysis.md "Decryption"): a run that asks for it (run-sbi KEYS=1)
keeps the session keys of its own traffic so that the analysis can read it. Each overlay plug-in
says where its keys are (`key_sources`), what makes its programs write them (`key_environment`)
and how tshark uses them (`decryption`); this dimension (plugin.py) switches it on.

Every collected file is a secret: mode 0600 in the run directory, listed in the manifest with
kind `keylog`, never read into a report.
"""
from __future__ import annotations

# manifest file kind of every exported key file
KIND = "keylog"
