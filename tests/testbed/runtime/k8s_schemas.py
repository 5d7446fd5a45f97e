"""The Kubernetes API schemas of tests/data/k8s-schemas/ as validators, strict like kubeconform's
-strict (an object schema listing its properties allows no other): a misspelt field fails here."""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jsonschema import Draft7Validator

from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "k8s-schemas"
CORE = {("v1", "Pod"): "io.k8s.api.core.v1.Pod", ("v1", "Secret"): "io.k8s.api.core.v1.Secret",
        ("v1", "ConfigMap"): "io.k8s.api.core.v1.ConfigMap", ("v1", "Namespace"): "io.k8s.api.core.v1.Namespace"}


def _strict(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _strict(v) for k, v in node.items()}
        if "properties" in out and "additionalProperties" not in out \
                and not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


@lru_cache(maxsize=1)
def validators() -> dict[tuple[str, str], Draft7Validator]:
    core = json.loads((DATA / "core-v1.json").read_text())
    components = _strict(core["components"])
    out = {key: Draft7Validator({"$ref": f"#/components/schemas/{name}", "components": components})
           for key, name in CORE.items()}
    nad = json.loads((DATA / "network-attachment-definition.json").read_text())
    out[(nad["apiVersion"], nad["kind"])] = Draft7Validator(_strict(nad["schema"]))
    return out


def errors(obj: dict[str, Any]) -> list[str]:
    """Every way the object breaks its kind's schema (an unknown kind is one error)."""
    v = validators().get((obj.get("apiVersion", ""), obj.get("kind", "")))
    if v is None:
        return [f"no schema for {obj.get('apiVersion')} {obj.get('kind')}"]
    name = obj.get("metadata", {}).get("name")
    return [f"{obj['kind']} {name}: {'.'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(obj)]
