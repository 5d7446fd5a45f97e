"""Trim Kubernetes' published OpenAPI v3 spec to the schemas the k8s engine renders (README.md here).

    python tests/data/k8s-schemas/trim.py <k8s.io/kubernetes module dir> > tests/data/k8s-schemas/core-v1.json

Keeps the component schemas reachable from the kinds below, without descriptions (the spec is
Apache-2.0 data; the provenance is in README.md). Run by hand when the pinned version changes.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SPEC = "api/openapi-spec/v3/api__v1_openapi.json"
ROOTS = ("io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.Secret", "io.k8s.api.core.v1.ConfigMap",
         "io.k8s.api.core.v1.Namespace")
PREFIX = "#/components/schemas/"


def _strip(node: Any, refs: set[str]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            refs.add(node["$ref"].removeprefix(PREFIX))
        return {k: _strip(v, refs) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_strip(v, refs) for v in node]
    return node


def trim(module_dir: Path) -> dict[str, Any]:
    spec = json.loads((module_dir / SPEC).read_text(encoding="utf-8"))
    schemas = spec["components"]["schemas"]
    out: dict[str, Any] = {}
    todo = list(ROOTS)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        refs: set[str] = set()
        out[name] = _strip(schemas[name], refs)
        todo += sorted(refs - set(out))
    return {"source": f"k8s.io/kubernetes {module_dir.name.partition('@')[2]} {SPEC}",
            "roots": list(ROOTS), "components": {"schemas": dict(sorted(out.items()))}}


if __name__ == "__main__":
    json.dump(trim(Path(sys.argv[1])), sys.stdout, indent=None, separators=(",", ":"), sort_keys=False)
    sys.stdout.write("\n")
