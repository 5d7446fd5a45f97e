"""The Kubernetes runtime: the render's Compose stack as Kubernetes objects (render.py)."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from testbed import environment, images
from testbed.contract import RuntimePlugin
from testbed.placement import Placement, as_record
from testbed.render import Rendered
from testbed.runtime.k8s import render


def _images(options: Mapping[str, str]) -> dict[str, str]:
    """The image references the Compose stack uses (the options' *_IMAGE win, as the environment's
    do for scripts/lib/compose.sh); none when images/defaults.env cannot be read. The environment's
    build knobs (DEBIAN_IMAGE, APPLY_PATCHES, ...) go into the tags' hash as for `make build`: without
    them the guest's render named tags no image had (`make k8s-images`: reference does not exist)."""
    try:
        return images.resolve({**environment.mapping(), **{k: v for k, v in options.items() if k.endswith("_IMAGE")}})
    except images.ImageError:
        return {}


class Kubernetes(RuntimePlugin):
    def check_options(self, placement: Placement, options: Mapping[str, str]) -> None:
        render.settings(options)

    def render(self, rendered: Rendered, placement: Placement, options: Mapping[str, str]) -> list[Path]:
        return render.write(rendered, placement, options, _images(options))

    def plan(self, rendered: Rendered, placement: Placement, options: Mapping[str, str]) -> list[str]:
        s = render.settings(options)
        waves = (rendered.dir / render.WAVES).read_text(encoding="utf-8").split("\n")
        where = ", ".join(f"{nf} on {node}" for nf, node in as_record(placement).items()) or "where the scheduler puts them"
        nets_file = rendered.dir / render.NETWORKS
        chosen = yaml.safe_load(nets_file.read_text(encoding="utf-8")) or {} if nets_file.is_file() else {}
        by_cni: dict[str, list[str]] = {}
        for net, cni in sorted((chosen.get("cni") or {}).items()):
            by_cni.setdefault(cni, []).append(net)
        master = f" on {chosen['master']}" if chosen.get("master") else ""
        each = "; ".join(f"{cni}{master if cni == 'macvlan' else ''}: {' '.join(n)}" for cni, n in sorted(by_cni.items()))
        nets = (f"Multus attachments ({each or 'none'}), fixed addresses" if s.multus
                else "the pod network (no fixed addresses: MULTUS=0)")
        return [f"engine    k8s: namespace {s.namespace}, {render.OBJECTS} (make k8s-up applies it)",
                f"networks  {nets}",
                *(f"warning   {w}" for w in chosen.get("warnings") or ()),
                f"placement {where}",
                f"order     {len([w for w in waves if w])} waves ({render.WAVES})"]
