"""ENGINE=k8s renders (testbed/runtime/k8s/): every profile's objects against the Kubernetes API
schemas (tests/data/k8s-schemas/, offline), each container against the Compose service it comes
from (capabilities, read-only root, privileges) and nf-configs/privileges.yaml, secrets never in a
ConfigMap, the Multus attachments, the holders as sidecars, the start order, the chart's values."""
from __future__ import annotations

import ipaddress
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed import privileges, profiles
from testbed.check import compose_model as cm
from testbed.contract import RuntimeOptionError
from testbed.placement import PlacementError
from testbed.render import compose_env as cenv
from testbed.render import Rendered, layout
from testbed.runtime.k8s import data as k8s_data, networks, pods, plugin as k8s_plugin, render as k8s_render
from tests.conftest import ROOT
from tests.testbed.render.helpers import keys_root, plane_sets, render_to
from tests.testbed.runtime import k8s_schemas
from tests.testbed.runtime.helpers import by_kind, containers, objects, render_k8s

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
CHART = ROOT / "testbed" / "runtime" / "k8s" / "chart"


def _compose(render_dir: Path) -> cm.ComposeModel:
    """The render's Compose services as `make up` would start them (images aside)."""
    env = cenv.parse_env((render_dir / layout.COMPOSE_ENV).read_text())
    env |= {k: "img" for k in ("OPEN5GS_IMAGE", "UERANSIM_IMAGE", "TOOLS_IMAGE", "MONGO_IMAGE", "OAI_IMAGE",
                               "SNORT_IMAGE", "FERRETDB_IMAGE") if k not in env}
    files = [Path(f) for f in (render_dir / layout.COMPOSE_FILES).read_text().split()]
    return cm.load(files, env)


def _all_objects(render_dir: Path) -> list[dict[str, Any]]:
    out = k8s_render.load_objects(render_dir)
    for f in sorted((render_dir / k8s_render.ON_DEMAND).glob("*.yaml")):
        out += k8s_render.load_all(f)
    return out


def problems_of(render_dir: Path, objs: list[dict[str, Any]] | None = None) -> list[str]:
    """Everything wrong with one render's objects (as written, or `objs` as built): schema, names,
    and each container against its Compose service and its role."""
    objs = _all_objects(render_dir) if objs is None else objs
    out = [e for o in objs for e in k8s_schemas.errors(o)]
    for o in objs:
        meta = o["metadata"]
        if not DNS_LABEL.fullmatch(meta["name"]) or len(meta["name"]) > 63:
            out.append(f"{o['kind']} {meta['name']}: not a DNS-1123 label")
        out += [f"{o['kind']} {meta['name']}: label {k}={v}" for k, v in (meta.get("labels") or {}).items()
                if not LABEL_VALUE.fullmatch(v) or len(v) > 63]
    model = _compose(render_dir)
    seen: list[str] = []
    for pod in (o for o in objs if o["kind"] == "Pod"):
        out += gate_problems(pod)
        for name, c in containers(pod).items():
            if name == pods.GATE:                   # no Compose service: gate_problems judges it
                continue
            seen.append(name)
            svc = model.services[name]
            ctx = c["securityContext"]
            want = sorted(privileges.normalise_capability(x) for x in svc.get("cap_add") or ())
            role = privileges.role(svc["labels"][privileges.ROLE_LABEL])
            if sorted(ctx["capabilities"].get("add", [])) != want:
                out.append(f"{name}: capabilities {ctx['capabilities'].get('add')} != Compose's cap_add {want}")
            if not set(want) <= set(role.capabilities):
                out.append(f"{name}: {want} beyond its role {role.name}")
            if ctx["capabilities"]["drop"] != ["ALL"] or svc.get("cap_drop") != ["ALL"]:
                out.append(f"{name}: does not drop ALL")
            if ctx["readOnlyRootFilesystem"] != bool(svc.get("read_only")) or ctx["readOnlyRootFilesystem"] != role.read_only:
                out.append(f"{name}: readOnlyRootFilesystem {ctx['readOnlyRootFilesystem']} differs from Compose/role")
            if ctx["allowPrivilegeEscalation"] is not False or ctx.get("privileged"):
                out.append(f"{name}: may gain privileges")
            if svc.get("healthcheck") and "readinessProbe" not in c:
                out.append(f"{name}: Compose has a health check, the pod no readiness probe")
    # every Compose service is a container, but a namespace's owner: the pod's sandbox holds it
    want = sorted(n for n, svc in model.services.items() if svc["labels"][privileges.ROLE_LABEL] != "netns")
    if sorted(seen) != want:
        out.append(f"containers {sorted(seen)} != Compose services {want} (owners of namespaces aside)")
    out += [f"{o['kind']} {o['metadata']['name']}: {n} B stored, over {k8s_data.LIMIT}"
            for o in objs if o["kind"] in ("ConfigMap", "Secret") and (n := stored_bytes(o)) > k8s_data.LIMIT]
    for cmap in (o for o in objs if o["kind"] == "ConfigMap"):
        out += [f"ConfigMap {cmap['metadata']['name']}: {k} holds a private key"
                for k, v in cmap.get("data", {}).items() if "PRIVATE KEY" in v]
    return out


def gate_problems(pod: dict[str, Any]) -> list[str]:
    """A pod has a start gate exactly when it has a holder: right after the holder's sidecar (so
    before the programs), holding nothing (its role), with the annotation that says how to open it."""
    name, init = pod["metadata"]["name"], [c["name"] for c in pod["spec"].get("initContainers", [])]
    holders = [c for c in init if c.endswith(pods.HOLDER_SUFFIX)]
    annotated = pods.GATE_ANNOTATION in pod["metadata"]["annotations"]
    if not holders:
        return [f"pod {name}: a start gate without a holder"] if pods.GATE in init or annotated else []
    out: list[str] = []
    if init[init.index(holders[0]) + 1:] != [pods.GATE] or not annotated:
        out.append(f"pod {name}: init containers {init}: the start gate (annotated) not last, after the holder")
    gate = containers(pod).get(pods.GATE, {})
    ctx, role = gate.get("securityContext", {}), privileges.role(pods.GATE)
    if ctx.get("capabilities") != {"drop": ["ALL"]} or role.capabilities:
        out.append(f"pod {name}: the start gate holds capabilities {ctx.get('capabilities')}")
    if ctx.get("readOnlyRootFilesystem") is not True or ctx.get("allowPrivilegeEscalation") is not False \
            or ctx.get("runAsUser") != pods.NOBODY or "restartPolicy" in gate:
        out.append(f"pod {name}: the start gate is not a read-only regular init container of nobody's")
    return out


def stored_bytes(obj: dict[str, Any]) -> int:
    """A ConfigMap's or Secret's data as the API server stores it (keys and values, base64 as given)."""
    return sum(len(k) + len(v) for field in ("data", "binaryData") for k, v in (obj.get(field) or {}).items())


def missing_keys(p: profiles.Profile) -> str | None:
    """Why the keys of a profile are absent here: material only newer tools make (the render stops
    naming it; tests/testbed/render/test_render.py skips them alike), else None."""
    if p.params.get("cert") == "mldsa65" and not (keys_root() / "ca" / "ca-mldsa65.crt").is_file():
        return "no ML-DSA-65 certificates: `make keys` with OpenSSL >= 3.5 (Debian 13)"
    if p.params.get("rosenpass") and not (keys_root() / "rosenpass").is_dir():
        return "no Rosenpass keys: `make keys` with rosenpass on PATH (`make rosenpass`)"
    return None


def _newer_keys(p: profiles.Profile) -> bool:
    return p.params.get("cert") == "mldsa65" or bool(p.params.get("rosenpass"))


def test_every_profile_renders_to_objects_the_api_schemas_accept(tmp_path: Path) -> None:
    """Every profile of the catalogue on its first plane (those whose keys need newer tools below):
    the objects validate, and each container carries exactly its Compose service's capabilities
    (one render each: the suite's time)."""
    found: list[str] = []
    images = k8s_plugin._images({})
    for p in (p for p in profiles.load().values() if not p.refused and not _newer_keys(p)):
        out = tmp_path / p.id
        r = render_to(p.id, p.planes[0], out)        # the core's render, then the objects in memory:
        built = k8s_render.build(r, {}, {}, images)  # writing them is the other tests' (and costs time)
        objs = built.ordered + [o for pods_ in built.on_demand.values() for o in pods_]
        found += [f"{p.id}: {e}" for e in problems_of(r.dir, objs)]
        shutil.rmtree(out)
    assert found == []


def test_the_written_objects_are_the_built_ones(ipsec_render: Rendered) -> None:
    from testbed.placement import parse
    built = k8s_render.build(ipsec_render, parse("upf:edge gnb:site=ran"), {}, k8s_plugin._images({}))
    assert objects(ipsec_render) == built.ordered


@pytest.mark.parametrize("profile", [p.id for p in profiles.load().values() if _newer_keys(p) and not p.refused])
def test_every_profile_with_newer_keys_renders_valid_objects(profile: str, tmp_path: Path) -> None:
    why = missing_keys(profiles.get(profile))
    if why:
        pytest.skip(why)
    assert problems_of(render_k8s(profile, None, tmp_path / "r").dir) == []


# A Rosenpass public key is 524,160 B (Classic McEliece 460896): a WireGuard + Rosenpass holder's
# overlay dir holds its own secret key and two public keys, more than one ConfigMap or Secret takes
ROSENPASS_PUBLIC = 524_160


def test_a_directory_over_one_object_is_split_public_and_private_into_one_projected_volume(tmp_path: Path) -> None:
    """Without rosenpass here (the profile test above skips): the same directory, files of the real
    sizes and modes. Each part validates, stays under the limit, the private key only in a Secret."""
    d = tmp_path / "overlay" / "upf"
    (d / "peers").mkdir(parents=True)
    (d / "rp.pk").write_bytes(b"\x01" * ROSENPASS_PUBLIC)
    (d / "peers" / "gnb.rp.pk").write_bytes(b"\x02" * ROSENPASS_PUBLIC)
    (d / "rp.sk").write_bytes(b"\x03" * 13_608)
    (d / "wg.conf").write_text("[Interface]\n")
    for f, mode in ((d / "rp.pk", 0o644), (d / "peers" / "gnb.rp.pk", 0o644), (d / "rp.sk", 0o600),
                    (d / "wg.conf", 0o600)):
        f.chmod(mode)
    store = k8s_data.Store({"render": tmp_path})
    vols = pods.Volumes(tmp_path, store)
    mount = vols._bind(f"{d}:/etc/overlay:ro", "upf-net")
    assert mount == {"name": "v-0", "mountPath": "/etc/overlay", "readOnly": True}
    sources = vols.volumes[0]["projected"]["sources"]
    made = store.manifests("g5tb", {})
    assert [k8s_schemas.errors(o) for o in made] == [[]] * len(made)
    assert all(stored_bytes(o) <= k8s_data.LIMIT for o in made) and len(made) == 3
    kinds = {o["metadata"]["name"]: o["kind"] for o in made}
    paths = {item["path"]: kinds[next(iter(src.values()))["name"]] for src in sources
             for item in next(iter(src.values()))["items"]}
    assert paths == {"rp.pk": "ConfigMap", "peers/gnb.rp.pk": "ConfigMap", "rp.sk": "Secret", "wg.conf": "Secret"}
    # a key of control characters is binaryData, not six JSON bytes each (the guest's API server
    # refused the request); kubectl apply --server-side keeps no 256 KiB last-applied copy
    assert all(set(o.get("binaryData", {})) and not o.get("data") for o in made if o["kind"] == "ConfigMap")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "upf"},
           "spec": {"containers": [{"name": "c", "image": "i", "volumeMounts": [mount]}], "volumes": vols.volumes}}
    assert k8s_schemas.errors(pod) == []


def test_one_file_over_one_object_is_refused_naming_it(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"\0" * k8s_data.LIMIT)
    with pytest.raises(RuntimeOptionError, match=r"services.x: .*big.bin holds 1048576 bytes, more than one"):
        k8s_data.Store({}).add(big, "x")


def variants() -> list[tuple[str, str, dict[str, Any]]]:
    """The other forms of a stack: every plane set of one profile per protocol, the SCP, the OAI
    RANs, the UPF's security function, the pod network."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    seen: set[str] = set()
    for p in profiles.load().values():
        if p.protocol not in seen and not p.refused and not _newer_keys(p):
            seen.add(p.protocol)
            out += [(p.id, plane, {"ran": "split"} if set(plane.split(",")) & {"f1c", "f1u", "e1"} else {})
                    for plane in plane_sets(p)[1:]]
    return out + [("baseline", "sbi", {"scp": True}), ("baseline", "n3", {"ran": "oai"}),
                  ("baseline", "n3", {"ran": "split"}),
                  ("baseline", "n3", {"dim_options": {"SECFN": "ips-nat", "IDS": "suricata"}}),
                  ("aes256gcm", "n3", {"options": {"MULTUS": "0"}})]


@pytest.mark.parametrize("profile,plane,kw", variants(), ids=lambda x: str(x))
def test_each_form_of_the_stack_renders_valid_objects(profile: str, plane: str, kw: dict[str, Any],
                                                      tmp_path: Path) -> None:
    assert problems_of(render_k8s(profile, plane, tmp_path / "r", **kw).dir) == []


@pytest.fixture(scope="module")
def ipsec_render(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return render_k8s("aes256gcm", "n3", tmp_path_factory.mktemp("k8s") / "r", place="upf:edge gnb:site=ran")


@pytest.fixture(scope="module")
def ipsec(ipsec_render: Rendered) -> list[dict[str, Any]]:
    return objects(ipsec_render)


def test_a_pod_is_an_nf_with_its_holder_as_a_sidecar_that_starts_first(ipsec: list[dict[str, Any]]) -> None:
    upf = by_kind(ipsec, "Pod")["upf"]
    init, gate = upf["spec"]["initContainers"]            # the gate: the next test
    assert init["name"] == "upf-net" and init["restartPolicy"] == "Always" and gate["name"] == pods.GATE
    assert init["startupProbe"]["exec"]["command"] == ["test", "-f", "/run/testbed/overlay-ready"]
    assert [c["name"] for c in upf["spec"]["containers"]] == ["upf"]
    assert upf["spec"]["restartPolicy"] == "Never"         # a failed NF fails the boot, as in Compose
    assert {"name": "net.ipv4.ip_forward", "value": "1"} in upf["spec"]["securityContext"]["sysctls"]
    roles = json.loads(upf["metadata"]["annotations"][pods.ROLES_ANNOTATION])
    assert roles == {"upf": "upf", "upf-net": "holder-ipsec"}


def test_the_ipsec_n3_ends_start_their_nf_behind_a_gate_after_the_holder(ipsec: list[dict[str, Any]]) -> None:
    """aes256gcm: IPsec on N3 between the gNB and the UPF, whose holders wait for each other while
    Compose's depends_on puts the gNB's pod three waves after the UPF's. Both pods' holders run
    from the start (k8s.sh up); a gate after each holder holds its NF back until its wave."""
    p = by_kind(ipsec, "Pod")
    for nf in ("upf", "gnb"):
        pod = p[nf]
        init = pod["spec"]["initContainers"]
        assert [c["name"] for c in init] == [f"{nf}-net", pods.GATE]     # holder, then gate
        assert [c["name"] for c in pod["spec"]["containers"]] == [nf]    # then the NF
        holder, gate = init
        assert holder["restartPolicy"] == "Always" and "restartPolicy" not in gate   # a gate ends
        assert gate["image"] == holder["image"]                                   # the tools image
        assert gate["command"][:2] == ["/bin/sh", "-c"] and f"until [ -e {pods.GATE_FILE} ]" in gate["command"][2]
        assert "sleep 1;" in gate["command"][2]
        mount, = gate["volumeMounts"]
        assert mount["mountPath"] == pods.GATE_MOUNT and mount["mountPath"] not in {
            m["mountPath"] for c in (holder, *pod["spec"]["containers"]) for m in c.get("volumeMounts", [])}
        volume = next(v for v in pod["spec"]["volumes"] if v["name"] == mount["name"])
        assert volume == {"name": mount["name"], "emptyDir": {"medium": "Memory"}}
        assert gate["securityContext"] == {"capabilities": {"drop": ["ALL"]}, "allowPrivilegeEscalation": False,
                                           "readOnlyRootFilesystem": True, "privileged": False,
                                           "runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534}
        assert json.loads(pod["metadata"]["annotations"][pods.GATE_ANNOTATION]) == {
            "container": pods.GATE, "open": ["touch", pods.GATE_FILE]}
        assert gate_problems(pod) == [] and k8s_schemas.errors(pod) == []


def test_a_pod_without_a_holder_has_no_gate(ipsec: list[dict[str, Any]]) -> None:
    p = by_kind(ipsec, "Pod")
    for name in ("mongo", "provision", "ue1"):
        assert "initContainers" not in p[name]["spec"], name
        assert pods.GATE_ANNOTATION not in p[name]["metadata"]["annotations"], name
    # every pod with a holder has one
    assert {n for n, o in p.items() if pods.GATE_ANNOTATION in o["metadata"]["annotations"]} == \
        {n for n, o in p.items() if o["spec"].get("initContainers")}


def test_a_compose_service_named_like_the_gate_is_refused(tmp_path: Path) -> None:
    model = cm.ComposeModel(services={"x-net": {"image": "t"}, pods.GATE: {"image": "i", "network_mode": "service:x-net"}},
                            networks={}, origin={}, files=[], problems=[])
    pod = pods.Pod("x", ["x-net", pods.GATE])
    with pytest.raises(RuntimeOptionError, match=f"services.{pods.GATE}: the name of the pods' start gate"):
        pods.pod_object(model, pod, pods.Settings("g5tb", False, "g5tb"), {}, k8s_data.Store({}), tmp_path)


def test_each_interface_is_a_network_attachment_with_the_catalogue_address(ipsec_render: Rendered,
                                                                          ipsec: list[dict[str, Any]]) -> None:
    nads = by_kind(ipsec, "NetworkAttachmentDefinition")
    pods_ = by_kind(ipsec, "Pod")
    wanted = json.loads(pods_["upf"]["metadata"]["annotations"][networks.ANNOTATION])
    env = ipsec_render.env
    assert {w["interface"]: w["ips"] for w in wanted} == {
        net: [f"{env[f'UPF_{net.upper()}_IP']}/{ipaddress.ip_network(env[f'NET_{net.upper()}_SUBNET']).prefixlen}"]
        for net in ("n3", "n4", "n6")}
    for pod in pods_.values():
        for w in json.loads(pod["metadata"]["annotations"].get(networks.ANNOTATION, "[]")):
            assert w["name"] in nads, (pod["metadata"]["name"], w)
            assert ipaddress.ip_interface(w["ips"][0])
    conf = json.loads(nads["g5tb-n3"]["spec"]["config"])
    plugin, = conf["plugins"]
    assert plugin["type"] == "bridge" and plugin["ipam"] == {"type": "static"} and plugin["capabilities"] == {"ips": True}
    # the node's bridge holds the gateway address Compose's bridge has (the UE's ping target on n6)
    n6 = json.loads(nads["g5tb-n6"]["spec"]["config"])["plugins"][0]
    assert n6["isGateway"] is True and ipsec_render.env["PING_TARGET"] == ipsec_render.env["NET_N6_GATEWAY"] \
        == str(next(ipaddress.ip_network(ipsec_render.env["NET_N6_SUBNET"]).hosts()))
    # the gNB resolves the UPF's name at its N3 address, as Compose's DNS answers on n3
    gnb_hosts = {h: a["ip"] for a in pods_["gnb"]["spec"]["hostAliases"] for h in a["hostnames"]}
    assert gnb_hosts["upf"] == env["UPF_N3_IP"]


def test_macvlan_needs_the_link_interface_and_uses_it(tmp_path: Path) -> None:
    with pytest.raises(RuntimeOptionError, match="K8S_MASTER"):
        render_k8s("baseline", "n3", tmp_path / "a", options={"K8S_CNI": "macvlan"})
    r = render_k8s("baseline", "n3", tmp_path / "b", options={"K8S_CNI": "macvlan", "K8S_MASTER": "eth1"})
    conf = json.loads(by_kind(objects(r), "NetworkAttachmentDefinition")["g5tb-n3"]["spec"]["config"])
    assert conf["plugins"][0]["master"] == "eth1"


def test_pod_network_without_multus(tmp_path: Path) -> None:
    objs = objects(render_k8s("baseline", "n3", tmp_path / "r", options={"MULTUS": "0"}))
    assert not by_kind(objs, "NetworkAttachmentDefinition")
    assert all(networks.ANNOTATION not in p["metadata"]["annotations"] for p in by_kind(objs, "Pod").values())


def test_keys_and_sim_secrets_are_secrets(ipsec: list[dict[str, Any]]) -> None:
    secrets = by_kind(ipsec, "Secret")
    assert {"render-overlay-upf", "render-overlay-gnb", "render-ueransim-ue1-yaml",
            "render-provision-subscribers-json"} <= set(secrets)
    assert "private__upf.key" in secrets["render-overlay-upf"]["data"]
    assert not any("ue1" in n or "overlay" in n for n in by_kind(ipsec, "ConfigMap"))


def test_placement_is_a_node_selector_on_the_nf_pod(ipsec: list[dict[str, Any]]) -> None:
    p = by_kind(ipsec, "Pod")
    assert p["upf"]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "edge"}
    assert p["gnb"]["spec"]["nodeSelector"] == {"site": "ran"}
    assert "nodeSelector" not in p["amf"]["spec"]


def test_an_unknown_nf_or_a_holder_is_refused_naming_the_nfs(tmp_path: Path) -> None:
    with pytest.raises(PlacementError, match=r"upf-net is a container of the upf pod.*; bogus is not an NF.*NFs: amf"):
        render_k8s("aes256gcm", "n3", tmp_path / "r", place="upf-net:edge bogus:x")
    assert not (tmp_path / "r" / k8s_render.OBJECTS).exists()


def test_compose_refuses_a_placement(tmp_path: Path) -> None:
    from testbed import orchestrate, registry
    from testbed.placement import parse
    with pytest.raises(RuntimeOptionError, match="ENGINE=k8s"):
        orchestrate.select("baseline", "n3", runtime=registry.runtime("compose"), placement=parse("upf:edge"))
    with pytest.raises(RuntimeOptionError, match="ENGINE=k8s"):          # no ENGINE: the default, compose
        orchestrate.select("baseline", "n3", placement=parse("upf:edge"))


def test_the_start_order_follows_compose_depends_on(tmp_path: Path) -> None:
    r = render_k8s("baseline", "n3", tmp_path / "r")
    waves = [dict(e.split("=") for e in line.split()) for line in (r.dir / k8s_render.WAVES).read_text().splitlines()]
    at = {p: i for i, w in enumerate(waves) for p in w}
    assert at["mongo"] < at["provision"] < at["udr"] and at["nrf"] < at["amf"] < at["gnb"] < at["ue1"]
    assert waves[at["provision"]]["provision"] == "succeeded" and waves[at["amf"]]["amf"] == "ready"
    pods_ = by_kind(objects(r), "Pod")
    assert sorted(at) == sorted(pods_)
    on_demand = {f.stem for f in (r.dir / k8s_render.ON_DEMAND).glob("*.yaml")}
    assert on_demand == {"ue2", "scale"}


def test_the_chart_values_are_the_objects_and_helm_renders_them(ipsec: list[dict[str, Any]], tmp_path: Path) -> None:
    r = render_k8s("baseline", "n3", tmp_path / "r")
    values = yaml.safe_load((r.dir / k8s_render.VALUES).read_text())
    assert values["objects"] == objects(r)
    assert "range .Values.objects" in (CHART / "templates" / "objects.yaml").read_text()
    helm = shutil.which("helm")
    if helm is None:
        pytest.skip("helm not installed: `helm template` of the chart not compared (docs/kubernetes.md)")
    out = subprocess.run([helm, "template", "g5tb", str(CHART), "-f", str(r.dir / k8s_render.VALUES)],
                         capture_output=True, text=True, check=True).stdout
    def key(o: dict[str, Any]) -> tuple[str, str]:
        return o["kind"], o["metadata"]["name"]
    # the same objects; Helm orders them its own way (kinds it knows first, by name)
    assert sorted((o for o in yaml.safe_load_all(out) if o), key=key) == sorted(objects(r), key=key)
    lint = subprocess.run([helm, "lint", str(CHART), "-f", str(r.dir / k8s_render.VALUES)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_bad_options_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    for opts, what in (({"MULTUS": "yes"}, "MULTUS=yes"), ({"K8S_NAMESPACE": "Bad_NS"}, "K8S_NAMESPACE"),
                       ({"K8S_CNI": "calico"}, "K8S_CNI=calico")):
        with pytest.raises(RuntimeOptionError, match=what):
            render_k8s("baseline", "n3", tmp_path / "r", options=opts)


def test_compose_is_the_default_runtime_and_k8s_is_registered() -> None:
    from testbed import registry
    assert registry.runtime(None).name == registry.runtime("").name == "compose"
    assert [r.name for r in registry.runtimes()] == ["compose", "k8s"]
    assert registry.runtime("k8s").doctor == "doctor.sh"


def test_a_compose_key_without_a_kubernetes_form_stops_the_render(tmp_path: Path) -> None:
    store = pods.data.Store({})
    vols = pods.Volumes(tmp_path, store)
    with pytest.raises(RuntimeOptionError, match=r"services.x: ulimits has no Kubernetes form"):
        pods.container("x", {"image": "i", "ulimits": {"nofile": 1024}}, vols)
    with pytest.raises(RuntimeOptionError, match=r"security_opt \['seccomp:unconfined'\]"):
        pods.container("x", {"image": "i", "security_opt": ["seccomp:unconfined"]}, vols)


def test_the_upf_security_function_is_a_container_of_the_upf_pod(tmp_path: Path) -> None:
    r = render_k8s("baseline", "n3", tmp_path / "r", place="upf:edge",
                   dim_options={"SECFN": "ips-nat", "IDS": "suricata"})
    upf = by_kind(objects(r), "Pod")["upf"]
    assert upf["spec"]["initContainers"][0]["name"] == "upf-net"
    assert {"upf", "secfn"} <= {c["name"] for c in upf["spec"]["containers"]}
    assert upf["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "edge"}      # it goes where the UPF goes
    with pytest.raises(PlacementError, match="secfn is a container of the upf pod: place upf"):
        render_k8s("baseline", "n3", tmp_path / "s", place="secfn:edge",
                   dim_options={"SECFN": "ips-nat", "IDS": "suricata"})


def test_star_puts_every_pod_on_place_even_the_on_demand_ones(tmp_path: Path) -> None:
    r = render_k8s("baseline", "n3", tmp_path / "r", place="*:pool=a upf:edge")
    pods = by_kind(objects(r), "Pod")
    on_demand = [o for f in sorted((r.dir / k8s_render.ON_DEMAND).glob("*.yaml")) for o in k8s_render.load_all(f)]
    assert pods["upf"]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "edge"}
    assert on_demand and all(p["spec"]["nodeSelector"] == {"pool": "a"}
                             for p in [*on_demand, *(v for k, v in pods.items() if k != "upf")])


def test_the_images_are_the_tags_make_build_gives_with_the_same_build_knobs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A base image override (DEBIAN_IMAGE, as the guest imports its bases) is in the tags' hash:
    the render names what `make build` built, not the tags of the default bases."""
    from testbed import images
    monkeypatch.setenv("DEBIAN_IMAGE", "debian:bookworm-slim-local")
    monkeypatch.delenv("OPEN5GS_IMAGE", raising=False)
    monkeypatch.delenv("TOOLS_IMAGE", raising=False)
    built = images.resolve()
    named = k8s_plugin._images({})
    assert named["TOOLS_IMAGE"] == built["TOOLS_IMAGE"]
    monkeypatch.delenv("DEBIAN_IMAGE")
    assert images.resolve()["TOOLS_IMAGE"] != named["TOOLS_IMAGE"]     # the knob is in the hash
    assert k8s_plugin._images({"TOOLS_IMAGE": "me/tools:dev"})["TOOLS_IMAGE"] == "me/tools:dev"
