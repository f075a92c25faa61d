"""The direction of imports inside reportgen (docs/architecture.md): parsers read inputs into the
model and know nothing of analyses or reports, and no module imports itself back through others.
Read from the source with ``ast`` (imports inside functions count too), nothing is imported."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "reportgen"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(path: Path) -> set[str]:
    """reportgen modules that ``path`` imports (``from pkg import sub`` names the submodule)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base)
    return {m for m in found if m in MODULES}


GRAPH = {name: imports_of(path) for name, path in MODULES.items()}


def test_the_module_list_is_complete():
    assert "reportgen.parsers.detect" in GRAPH and "reportgen.analysis.framework" in GRAPH
    # a relative import resolves like an absolute one
    assert "reportgen.model" in GRAPH["reportgen.parsers.chrome.build"]


def test_parsers_import_neither_analysis_nor_writers():
    assert _layer_imports("reportgen.parsers", ("reportgen.analysis", "reportgen.writers")) == {}


def _layer_imports(layer: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    bad = {name: sorted(m for m in deps if m.startswith(forbidden))
           for name, deps in GRAPH.items() if name.startswith(layer)}
    return {k: v for k, v in bad.items() if v}


def test_analysis_imports_neither_parsers_nor_writers():
    assert _layer_imports("reportgen.analysis", ("reportgen.parsers", "reportgen.writers")) == {}


def test_writers_import_no_parser():
    assert _layer_imports("reportgen.writers", ("reportgen.parsers",)) == {}


def import_cycles() -> set[frozenset[str]]:
    """Groups of modules that import each other, directly or through others (the strongly
    connected components of the import graph with more than one module)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = set()

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for dep in GRAPH[node]:
            if dep not in order:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in stack:
                low[node] = min(low[node], order[dep])
        if low[node] == order[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.add(frozenset(group))

    for name in sorted(GRAPH):
        if name not in order:
            visit(name)
    return cycles


def test_no_import_cycle():
    assert import_cycles() == set()


def test_cycle_finder_finds_a_cycle():
    GRAPH["reportgen.intervals"].add("reportgen.parsers.chrome.link")
    try:
        assert frozenset({"reportgen.intervals", "reportgen.parsers.chrome.link"}) in import_cycles()
    finally:
        GRAPH["reportgen.intervals"].discard("reportgen.parsers.chrome.link")
