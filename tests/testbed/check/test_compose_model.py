"""The checker's model of compose files: interpolation and override merging."""
from __future__ import annotations

from pathlib import Path

from testbed.check import compose_model as cm


def test_interpolation_forms() -> None:
    errors: list[str] = []
    env = {"A": "1", "EMPTY": ""}
    out = cm.interpolate("${A}-${EMPTY:-d1}-${EMPTY-d2}-${MISSING:-x y}-$$A-$A-${R:?needs R}", env, errors.append)
    assert out == "1-d1--x y-$A-1-"
    assert errors == ["required variable R is not set (needs R)"]


def test_a_kept_variable_stays_as_written_for_a_later_interpolation() -> None:
    """keep=: a Kubernetes pod's probe timing is interpolated at `up`, not at the render
    (testbed/runtime/k8s/probetiming.py); every other variable as before, `$$` included."""
    errors: list[str] = []
    out = cm.interpolate("${T:-30s} ${A} ${E:-${T:-1s}} $$T", {"A": "1", "T": "9s"}, errors.append, keep=frozenset({"T"}))
    assert out == "${T:-30s} 1 ${T:-1s} $T" and not errors
    assert cm.interpolate(out.rsplit(" ", 1)[0], {"T": "9s"}, errors.append) == "9s 1 9s"


def test_override_files_merge_like_compose(tmp_path: Path) -> None:
    base = tmp_path / "base.yaml"
    over = tmp_path / "over.yaml"
    base.write_text("""
x-anchor: &a {image: img}
services:
  gnb-net:
    <<: *a
    command: [holder]
    cap_add: [NET_RAW]
    volumes: ["./e:/opt/e:ro", "${D}/x:/etc/x:ro"]
    sysctls: {net.ipv4.ip_forward: "1"}
    networks: {n3: {ipv4_address: "${IP}"}}
  gnb:
    network_mode: service:gnb-net
    depends_on: {gnb-net: {condition: service_healthy}}
networks:
  n3: {ipam: {config: [{subnet: 10.0.3.0/24}]}}
""")
    over.write_text("""
services:
  gnb-net:
    command: [overlay]
    cap_add: [NET_ADMIN]
    volumes: ["${D}/y:/etc/x:ro", "../ipsec:/opt/ipsec:ro"]
    sysctls: {net.core.xfrm_larval_drop: "0"}
""")
    m = cm.load([base, over], {"D": "/r", "IP": "10.0.3.50"})
    svc = m.services["gnb-net"]
    assert svc["image"] == "img" and svc["command"] == ["overlay"]
    assert svc["cap_add"] == ["NET_RAW", "NET_ADMIN"]
    assert svc["volumes"] == ["./e:/opt/e:ro", "/r/y:/etc/x:ro", "../ipsec:/opt/ipsec:ro"]
    assert svc["sysctls"] == {"net.ipv4.ip_forward": "1", "net.core.xfrm_larval_drop": "0"}
    assert m.file_of("services", "gnb-net", "command") == over
    assert m.file_of("services", "gnb-net", "networks") == base
    assert cm.service_networks(svc) == {"n3": {"ipv4_address": "10.0.3.50"}}
    assert cm.netns_owner(m.services, "gnb") == "gnb-net"
    assert cm.depends_on(m.services["gnb"]) == ["gnb-net"]
    assert "x-anchor" not in m.services and m.problems == []
