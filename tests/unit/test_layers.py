"""The floor plan holds: each package imports only the layers below it, and no module reaches
itself through its imports, not even through an import made for type checking only or inside a
function (docs/architecture.md, "Modules").

Read from the source, as a newcomer reads it: every `import` and `from … import` anywhere in a
module counts, and importing `a.b.c` counts as importing the packages `a` and `a.b` too, since
Python runs their `__init__` first (except the packages the importer itself sits in: those run
before it, whatever it imports).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# What each package may import besides itself. Processes sit on the shared layers; no layer
# imports a process, and no process imports another (the api plugs in search/, not worker/).
LAYERS: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "store": frozenset({"core"}),
    "search": frozenset({"core", "store"}),
    "worker": frozenset({"core", "store", "search"}),
    "app": frozenset({"core", "search"}),
    "encoder": frozenset({"core"}),
    "loader": frozenset(),
    "harness": frozenset(),
    "bench": frozenset({"core", "store", "search", "encoder", "harness", "loader"}),
}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in LAYERS:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _named(module: str, path: Path) -> Iterator[str]:
    """Every dotted name the module imports, resolved from relative imports."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                head = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*head, base] if base else head)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _known(name: str) -> str | None:
    """The first-party module a dotted name lands in (a name imported from a module is that
    module), or None for a third-party one."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str) -> set[str]:
    """The first-party modules `module` runs on import, their packages' `__init__`s included."""
    own = {".".join(module.split(".")[:depth]) for depth in range(1, module.count(".") + 2)}
    found: set[str] = set()
    for name in _named(module, MODULES[module]):
        target = _known(name)
        if target in own:  # named outright: `from core.lexical import x` in core.lexical.views
            found.add(target)
        while target and target not in own:
            found.add(target)
            target = _known(target.rpartition(".")[0])
    found.discard(module)
    return found


GRAPH = {module: imports(module) for module in MODULES}


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in GRAPH[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    return found


def test_the_graph_is_read() -> None:
    """The reader sees the imports that matter, so the checks below can fail."""
    assert "store.protocol" in GRAPH["search.querying"]
    assert {"search", "search.node"} <= GRAPH["app.__main__"]
    # Type-only and function-level imports count.
    assert "store.edge.store" in GRAPH["store.backends"]


def test_no_import_cycle() -> None:
    assert _cycles() == []


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_a_package_imports_only_the_layers_below_it(package: str) -> None:
    allowed = LAYERS[package] | {package}
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        if module.split(".")[0] == package
        for target in targets
        if target.split(".")[0] not in allowed
    )
    assert wrong == []


def test_the_architecture_modules_section_names_every_package() -> None:
    """docs/architecture.md's "Modules" section is where a newcomer finds the layout (the README
    links it): every package is on it."""
    text = (REPO / "docs" / "architecture.md").read_text()
    modules = text.split("\n## Modules\n", 1)[1].split("\n## ", 1)[0]
    missing = [package for package in LAYERS if f"`{package}/`" not in modules]
    assert missing == []
