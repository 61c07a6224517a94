"""Every runtime dependency declared in pyproject.toml is imported by the package (a declared, unused dependency
costs every user an install for nothing), and no module of speceval/ is part of an import cycle."""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.once import built_once

IMPORT_NAMES = {"google-genai": "google.genai", "pyyaml": "yaml"}
"""Distributions whose import name is not their own name."""


def parse_imports() -> dict[Path, list[ast.Import | ast.ImportFrom]]:
    """Every import statement of every module of speceval/."""
    return {
        path: [
            node
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Import | ast.ImportFrom)
        ]
        for path in (REPO / "speceval").rglob("*.py")
    }


_parsed: dict[Path, list[ast.Import | ast.ImportFrom]] = {}


def import_nodes() -> dict[Path, list[ast.Import | ast.ImportFrom]]:
    """`parse_imports()`, parsed once for all the tests that read them (parsing the package was most of each test's
    time) and, under pytest-xdist, once for all the workers (`imports_parsed_once`)."""
    if not _parsed:
        _parsed.update(parse_imports())
    return _parsed


@pytest.fixture(scope="module", autouse=True)
def imports_parsed_once(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> None:
    """The package parsed by the first worker that runs a test of this module or of tests/unit/test_layers.py
    (1.3 s of CPU), its import statements pickled for the others (tests/once.py). The files do not change during
    a session."""
    if not _parsed:
        _parsed.update(built_once(tmp_path_factory, worker_id, "speceval-import-nodes", lambda _root: parse_imports()))


def imported_modules() -> set[str]:
    found: set[str] = set()
    for nodes in import_nodes().values():
        for node in nodes:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_every_runtime_dependency_is_imported_by_the_package():
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    modules = imported_modules()
    unused = []
    for requirement in declared:
        name = re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower()
        module = IMPORT_NAMES.get(name, name.replace("-", "_"))
        if not any(m == module or m.startswith(module + ".") for m in modules):
            unused.append(name)
    assert not unused, f"declared in pyproject.toml but imported nowhere in speceval/: {unused}"


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """speceval module → the speceval modules it imports, counting every import (inside functions and under
    TYPE_CHECKING too: a cycle there is still two modules that cannot be understood apart)."""
    modules = {}
    for path in import_nodes():
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        found = set()
        for node in import_nodes()[path]:
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rsplit(".", 1)[0] if "." in target else ""
                if target and target != name and not (path.name == "__init__.py" and target.startswith(name + ".")):
                    found.add(target)
        graph[name] = found
    return graph


def test_no_import_cycles_in_the_package():
    graph = import_graph()
    cycles = []
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = [0]

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not cycles, f"import cycles: {cycles}"
