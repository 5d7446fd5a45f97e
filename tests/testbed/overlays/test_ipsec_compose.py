"""compose/overlay-ipsec-{n3,sbi}.yaml: exactly the endpoints' holders, the entrypoint, the
mounts of docs/contracts.md, the capabilities and the sysctl the compose_env hook fills."""
from __future__ import annotations

import re

import pytest
import yaml

from testbed import ROOT, profiles, stack
from testbed.overlays import ipsec
from tests.testbed.render.helpers import compose_services

VALUES = stack.load()


@pytest.mark.parametrize("plane", ["n3", "sbi"])
def test_fragment_overrides_exactly_the_endpoint_holders(plane: str) -> None:
    path = ROOT / "compose" / f"overlay-ipsec-{plane}.yaml"
    text = path.read_text()
    doc = yaml.safe_load(text)
    assert sorted(doc["services"]) == sorted(f"{n}-net" for n in ipsec.endpoints(plane, VALUES))
    base = compose_services()
    for name, svc in doc["services"].items():
        assert name in base, f"{name} is not a holder of compose/base.yaml or the rendered RAN"
        assert svc["command"] == ["/opt/testbed/ipsec/entrypoint.sh", "/etc/testbed/overlay"]
        assert "NET_ADMIN" in svc["cap_add"] and "/dev/net/tun:/dev/net/tun" in svc["devices"]
        node = name.removesuffix("-net")
        assert "../ipsec:/opt/testbed/ipsec:ro" in svc["volumes"]
        assert any(re.fullmatch(rf"\$\{{OVERLAY_DIR:\?[^}}]*\}}/{node}:/etc/testbed/overlay:ro", v)
                   for v in svc["volumes"]), svc["volumes"]
        assert svc["sysctls"]["net.core.xfrm_larval_drop"] == "${IPSEC_XFRM_LARVAL_DROP:-1}"
    # the variable the fragment interpolates is the one the hook provides
    assert set(ipsec.compose_env(profiles.get("aes128gcm-trap-queue"), "sbi", VALUES)) == {"IPSEC_XFRM_LARVAL_DROP"}
    assert (ROOT / "ipsec" / "entrypoint.sh").stat().st_mode & 0o111
