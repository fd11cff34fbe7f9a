"""No two modules of the packages import each other, directly or around a longer circle, counting the imports
inside functions too (a deferred import hides a circle from Python, not from a reader)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("hoi_bench", "hoi_sg_dataset", "haystack_dataset", "bongard_hoi", "sportshhi")


def import_graph() -> dict[str, set[str]]:
    """Module → the package modules it imports anywhere in its file (``from X import name`` counts as importing
    ``X.name`` when that is a module)."""
    imported: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            names: set[str] = set()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
                elif isinstance(node, ast.Import):
                    names |= {alias.name for alias in node.names}
            imported[module] = names
    return {module: {name for name in names if name in imported and name != module}
            for module, names in imported.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_finder_sees_a_circle_made_of_deferred_imports():
    graph = {"a.card": {"a.loop"}, "a.loop": {"a.card"}, "a.files": set()}
    assert circles(graph) == [["a.card", "a.loop"]]


def test_no_module_imports_itself_around_a_circle():
    graph = import_graph()
    assert "hoi_sg_dataset.predictions" in graph and "hoi_bench.training" in graph
    assert "hoi_sg_dataset.fast_json" in graph["hoi_sg_dataset.predictions"]  # the edge kept
    assert "hoi_bench.model_card" in graph["hoi_bench.training"]
    assert circles(graph) == []
