"""Key export for decryption (docs/analysis.md "Decryption"): what a run that asks for it
(run-sbi KEYS=1) collects so that the analysis can read its own encrypted traffic.

- TLS on the SBI: every Open5GS NF writes an NSS key log (patches/open5gs/0003-sbi-tls-keylog.patch,
  `OGS_SBI_TLS_KEYLOG`), set by the render dimension `testbed/keylog/dimension.py`;
- IPsec: charon logs each CHILD_SA's ESP keys and SPIs (testbed/overlays/ipsec.py strongswan_conf,
  file `KEYS_LOG` there); `testbed/keylog/esp.py` turns that log into tshark's `esp_sa` table.

Every collected file is a secret: mode 0600 in the run directory, listed in the manifest with
kind `keylog`, never read into a report.
"""
from __future__ import annotations

# the NFs' key log inside their containers (tmpfs /run/open5gs, compose/base.yaml)
NF_KEYLOG = "/run/open5gs/tls-keys.log"
# manifest file kind of every exported key file
KIND = "keylog"
