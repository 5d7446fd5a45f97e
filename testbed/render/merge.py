"""Deep merge of configuration dictionaries (overlay hooks into rendered NF configs)."""
from __future__ import annotations

import copy
from typing import Any


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """A new dict: `extra` merged into `base`. Dicts merge recursively; anything else
    (lists included) in `extra` replaces the value in `base`."""
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
