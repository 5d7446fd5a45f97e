"""The files a Compose service mounts read-only, as ConfigMaps and Secrets.

A mounted file or directory is one object. It is a Secret when any file in it is private (mode
0600/0700: keys, certificates' keys, PSKs, the UE configs holding K and OPc; `make keys` and the
render write them so, docs/contracts.md "State and secrets"), else a ConfigMap. Keys of such an
object cannot hold `/`, so every file is one key (its path, flattened) mapped back to its path
with `items`, keeping its mode (the entrypoint scripts stay executable).

A directory more than one object takes (LIMIT; a WireGuard + Rosenpass holder's overlay dir holds
two Rosenpass public keys of 524,160 B each) is split into parts, each at most LIMIT as the API
server stores it (base64): its public files in ConfigMaps (a public key is not secret), its private
ones in Secrets, mounted together as one projected volume (pods.py). A single file over LIMIT is
refused.
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import re
from pathlib import Path
from typing import Any

from testbed.contract import RuntimeOptionError

LIMIT = 1024 * 1024          # the API server's size limit of one ConfigMap or Secret


@dataclasses.dataclass
class DataObject:
    name: str
    source: Path
    secret: bool
    files: dict[str, tuple[Path, int]]          # key -> (path inside the mount, mode)
    payload: dict[str, bytes]                   # key -> content

    @property
    def kind_key(self) -> str:
        return "secret" if self.secret else "configMap"

    @property
    def name_key(self) -> str:
        return "secretName" if self.secret else "name"

    def items(self) -> list[dict[str, Any]]:
        return [{"key": k, "path": p.as_posix(), "mode": mode} for k, (p, mode) in sorted(self.files.items())]

    def manifest(self, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
        meta = {"name": self.name, "namespace": namespace, "labels": labels,
                "annotations": {"testbed/source": str(self.source)}}
        if self.secret:
            return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
                    "data": {k: base64.b64encode(v).decode() for k, v in sorted(self.payload.items())}}
        text, binary = {}, {}
        for k, v in sorted(self.payload.items()):
            if is_text(v):
                text[k] = v.decode("utf-8")
            else:
                binary[k] = base64.b64encode(v).decode()
        out: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": text}
        if binary:
            out["binaryData"] = binary
        return out


def is_text(content: bytes) -> bool:
    """UTF-8 without control characters but tab and newlines: a ConfigMap's `data`. Anything else
    goes into `binaryData` (base64): a control character is six bytes in the JSON request (the
    guest's API server refused a 512 KiB key of them as too large a request)."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return not _CONTROL.search(text)


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def object_name(source: Path, roots: dict[str, Path]) -> str:
    """A DNS-1123 name from the path below the first root holding it (render/open5gs/nrf.yaml ->
    render-open5gs-nrf-yaml), shortened with a hash where it is too long."""
    for label, root in roots.items():
        if source == root or root in source.parents:
            text = f"{label}-{source.relative_to(root).as_posix()}" if source != root else label
            break
    else:
        text = source.as_posix()
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if len(name) > 63:
        name = f"{name[:52].rstrip('-')}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"
    return name


def _key(rel: Path) -> str:
    return re.sub(r"[^-._a-zA-Z0-9]", "_", rel.as_posix().replace("/", "__")) or "file"


@dataclasses.dataclass
class Store:
    """Every data object of a render, one per mounted source."""
    roots: dict[str, Path]                      # name prefix -> directory (render, repo, keys)
    objects: dict[Path, DataObject] = dataclasses.field(default_factory=dict)
    parts: dict[Path, list[DataObject]] = dataclasses.field(default_factory=dict)

    def add(self, source: Path, service: str) -> DataObject:
        if source in self.objects:
            return self.objects[source]
        if not source.exists():
            raise RuntimeOptionError(f"services.{service}: mounts {source}, which does not exist "
                                     "(render again: `make render`)")
        paths = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
        files: dict[str, tuple[Path, int]] = {}
        payload: dict[str, bytes] = {}
        private = False
        for p in paths:
            rel = Path(p.name) if p == source else p.relative_to(source)
            key = _key(rel)
            mode = p.stat().st_mode & 0o777
            private |= not mode & 0o044 or any(not d.stat().st_mode & 0o044 for d in p.parents if d != source
                                               and source in d.parents)
            files[key] = (rel, mode)
            payload[key] = p.read_bytes()
        name = object_name(source, self.roots)
        if any(o.name == name for o in self.all_objects()):
            name = f"{name[:52]}-{hashlib.sha256(str(source).encode()).hexdigest()[:10]}"
        obj = DataObject(name, source, private, files, payload)
        self.objects[source] = obj
        if stored_size(payload) > LIMIT:
            self.parts[source] = self._split(obj, service)
        return obj

    def _split(self, whole: DataObject, service: str) -> list[DataObject]:
        """A directory's files in parts of at most LIMIT each (stored size), public and private apart;
        a file over LIMIT alone is refused."""
        groups: list[tuple[bool, list[str]]] = []
        for key in sorted(whole.payload, key=lambda k: (-len(whole.payload[k]), k)):
            rel, mode = whole.files[key]
            if stored_size({key: whole.payload[key]}) > LIMIT:
                raise RuntimeOptionError(f"services.{service}: {whole.source / rel} holds "
                                         f"{len(whole.payload[key])} bytes, more than one ConfigMap/Secret "
                                         f"takes ({LIMIT} as stored, base64)")
            secret = not mode & 0o044
            fit = next((g for g in groups if g[0] == secret and stored_size(
                {k: whole.payload[k] for k in [*g[1], key]}) <= LIMIT), None)
            if fit is None:
                groups.append((secret, [key]))
            else:
                fit[1].append(key)
        return [DataObject(f"{whole.name[:58]}-p{n}", whole.source, secret,
                           {k: whole.files[k] for k in keys}, {k: whole.payload[k] for k in keys})
                for n, (secret, keys) in enumerate(groups)]

    def parts_of(self, obj: DataObject) -> list[DataObject]:
        """The objects that carry obj: itself, or the parts of a directory over LIMIT."""
        return self.parts.get(obj.source, [obj])

    def all_objects(self) -> list[DataObject]:
        return [p for o in self.objects.values() for p in self.parts_of(o)]

    def manifests(self, namespace: str, labels: dict[str, str]) -> list[dict[str, Any]]:
        return [o.manifest(namespace, labels) for o in sorted(self.all_objects(), key=lambda o: o.name)]


def stored_size(payload: dict[str, bytes]) -> int:
    """The bytes the API server stores for these files (ConfigMap binaryData and Secret data are
    base64), the upper bound both kinds are checked against."""
    return sum(4 * -(-len(v) // 3) + len(k) for k, v in payload.items())
