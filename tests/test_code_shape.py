"""The developers' guide's shape rules, checked on the whole package: no function over 80 lines
and no import cycle between modules (issue 27).

Lengths are ``end_lineno - lineno + 1`` of each ``def`` (its decorators not counted, its
docstring and nested functions counted). Cycles are the strongly connected components of
grimp's module graph of ``placement_numa`` (every import, function-local ones included).
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

import placement_numa

PACKAGE = Path(placement_numa.__file__).parent
MAX_FUNCTION_LINES = 80


def _long_functions() -> dict[str, int]:
    """``"path:name"`` -> lines, for every function of the package over the limit."""
    found: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found[f"{path.relative_to(PACKAGE).as_posix()}:{node.name}"] = lines
    return found


def _cycles() -> list[frozenset[str]]:
    """The strongly connected components (more than one module) of the package's imports."""
    graph = grimp.build_graph("placement_numa", cache_dir=None)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[frozenset[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm (the package is a few hundred modules)
        order[module] = low[module] = len(order)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                components.append(frozenset(component))

    for module in sorted(graph.modules):
        if module not in order:
            visit(module)
    return components


def test_no_function_over_80_lines() -> None:
    offenders = _long_functions()
    assert not offenders, "functions over 80 lines: " + ", ".join(
        f"{name} ({lines})" for name, lines in sorted(offenders.items())
    )


def test_no_import_cycle() -> None:
    cycles = [sorted(c) for c in _cycles()]
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)
