"""The analysis package's shape (issue 19 item 6): its modules import one another without a
cycle, and none reaches for another module's private (underscore) names. Read from the source
with `ast`, every import counted, those inside functions too (a lazy import is still a cycle)."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = "analysis"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _target(module: str, name: str | None = None) -> str | None:
    """The analysis module an import names (`from a.b import c`: a.b.c when c is a module)."""
    if name is not None and f"{module}.{name}" in MODULES:
        return f"{module}.{name}"
    return module if module in MODULES else None


def _absolute(node: ast.ImportFrom, here: str) -> str:
    """The module a (possibly relative) `from ... import` names, seen from module `here`."""
    if not node.level:
        return node.module or ""
    package = here.split(".") if MODULES[here].name == "__init__.py" else here.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(here: str) -> tuple[set[str], list[str]]:
    """(the analysis modules `here` imports, its uses of another module's private names)."""
    tree = ast.parse(MODULES[here].read_text(encoding="utf-8"))
    deps: set[str] = set()
    private: list[str] = []
    aliases: dict[str, str] = {}          # local name -> the analysis module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in MODULES:
                    deps.add(a.name)
                    aliases[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, here)
            for a in node.names:
                target = _target(module, a.name)
                if target is None:
                    continue
                deps.add(target)
                if target == module and a.name.startswith("_"):
                    private.append(f"{here}: from {module} import {a.name}")
                if target != module:
                    aliases[a.asname or a.name] = target
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            private.append(f"{here}: {aliases[node.value.id]}.{node.attr}")
    deps.discard(here)
    return deps, private


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_checks_see_a_cycle_and_a_private_import() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    # the reader resolves `from analysis import x as y` and sees y._name
    deps, _ = imports("analysis.report")
    assert "analysis.markdown" in deps


def test_no_import_cycle_in_the_analysis_package() -> None:
    graph = {m: imports(m)[0] for m in MODULES}
    assert cycles(graph) == []


def test_no_module_imports_another_modules_private_names() -> None:
    found = [p for m in MODULES for p in imports(m)[1]]
    assert found == []


def _string_tuples(path: Path) -> list[tuple[int, set[str]]]:
    """Every tuple or list literal of two or more strings in a source file: (line, the strings)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) > 1 and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            out.append((node.lineno, {e.value for e in node.elts if isinstance(e, ast.Constant)}))
    return out


def test_the_analysis_keeps_no_copy_of_the_drivers_experiments() -> None:
    """The experiments are the drivers' (testbed/runparams.py EXPERIMENTS): the analysis imports
    them (a copy of its own fell behind when an experiment was added), plus its own 'crypto'."""
    from analysis import results, secfn
    from testbed import manifest, runparams
    assert set(results.EXPERIMENTS) == {*runparams.EXPERIMENTS, "crypto"}
    assert secfn.EXPERIMENTS == manifest.SECFN_EXPERIMENTS
    known = set(runparams.EXPERIMENTS)
    copies = [f"{m}:{line}" for m, path in MODULES.items() for line, names in _string_tuples(path)
              if len(names & known) >= 4]      # a selection of two or three is a choice, not a copy
    assert copies == []
