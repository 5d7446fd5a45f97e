"""How the core and the plug-ins are built (issue: one plug-in contract): no function longer than
about 60 lines, the environment read only at the command line's edge (testbed/cli/ and
testbed/environment.py), and the render library importing no plug-in."""
from __future__ import annotations

import ast
import re

from testbed import registry
from tests.conftest import ROOT

LIMIT = 60
PACKAGES = ["testbed", *sorted({p.folder.relative_to(ROOT).parts[0] for p in registry.overlays()})]


def _python_files() -> list:
    return [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]


def test_no_function_longer_than_the_limit() -> None:
    long = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > LIMIT:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    assert long == [], long


def test_the_environment_is_read_at_the_edge_only() -> None:
    allowed = {ROOT / "testbed" / "environment.py"}
    readers = [f"{p.relative_to(ROOT)}:{i}" for p in _python_files()
               if p not in allowed and "cli" not in p.relative_to(ROOT).parts[:2]
               for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
               if re.search(r"\bos\.(environ|getenv|putenv)\b", line)]
    assert readers == [], readers


def test_the_render_library_imports_no_plugin() -> None:
    plugins = {type(p).__module__.split(".")[0] for p in registry.overlays()}
    plugins |= {"testbed.registry", "testbed.ran.ueransim", "testbed.ran.oai", "testbed.secfn", "testbed.nas"}
    for path in sorted((ROOT / "testbed" / "render").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                  for a in n.names]
        bad = [m for m in names if any(m == p or m.startswith(p + ".") for p in plugins)]
        assert bad == [], f"{path.relative_to(ROOT)} imports {bad}"
