"""The package imports one way, layer by layer (docs/architecture.md draws the same map).

Every import counts — inside functions and under TYPE_CHECKING too: a lazy import still makes two packages that
cannot be understood apart. A unit is a package directly under speceval/ or a top-level module; inside
speceval/analysis/ the rooms are units of their own. A unit may import any unit of a lower layer, and within its
own layer only the units listed before it. A new package or top-level module must be given a place here.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO
from tests.unit.test_dependencies import import_graph, imports_parsed_once  # noqa: F401 - the autouse fixture

LAYERS: list[tuple[str, list[str]]] = [
    (
        "foundation",
        [
            "errors",
            "atomic",
            "json_keys",
            "redaction",
            "defaults",
            "paths",
            "ranges",
            "settings_checks",
            "spec",
            "spec_convert",
            "metric_spec",
            "endpoint_keys",
            "interrupts",
            "data",
        ],
    ),
    ("emulator", ["emulator", "offline"]),
    ("wire", ["wire"]),
    ("engines", ["batch", "providers", "realtime", "raydata", "engines"]),
    ("pipelines", ["inputs", "judging", "conversations", "operations", "pipelines", "inputgen"]),
    (
        "analysis",
        [
            "analysis.statistics",
            "analysis.reading",
            "analysis.tables",
            "analysis.rendering",
            "analysis.frames",
            "analysis.simulation",
            "analysis",
            "interop",
        ],
    ),
    ("studies", ["experiments"]),
    ("interfaces", ["cli", "__main__", ""]),
]
"""(layer, its units in order). "" is the package's own `__init__` (the public API: it may import anything)."""

RANK = {unit: (layer, position) for layer, (_, units) in enumerate(LAYERS) for position, unit in enumerate(units)}

KNOWN_AGAINST: set[str] = set()
KNOWN_CROWDED: set[str] = set()

TOP_LEVEL_LIMIT = 16
PACKAGE_LIMIT = 26
MODULE_LINES_LIMIT = 500


def unit_of(module: str) -> str:
    """`speceval.analysis.tables.rates` → `analysis.tables`; `speceval.batch.engine` → `batch`; `speceval` → ``."""
    parts = module.split(".")[1:]
    if parts[:1] == ["analysis"] and len(parts) > 1:
        return ".".join(parts[:2])
    return parts[0] if parts else ""


def allowed(importer: str, imported: str) -> bool:
    (layer_a, position_a), (layer_b, position_b) = RANK[importer], RANK[imported]
    return layer_b < layer_a or (layer_b == layer_a and position_b < position_a)


def test_every_unit_has_a_place_in_the_layers():
    units = {unit_of(module) for module in import_graph()}
    assert units - set(RANK) == set(), "give these a layer in LAYERS (and in docs/architecture.md)"


def imports_against_the_layers() -> set[str]:
    return {
        f"{importer} -> {imported}"
        for importer, targets in import_graph().items()
        for imported in targets
        if unit_of(importer) != unit_of(imported) and not allowed(unit_of(importer), unit_of(imported))
    }


def test_packages_import_one_way():
    against = sorted(imports_against_the_layers() - KNOWN_AGAINST)
    assert not against, "imports against the layers (docs/architecture.md):\n" + "\n".join(against)


def _modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.py"))


def test_the_top_level_holds_few_modules():
    top = [p.name for p in _modules(REPO / "speceval")]
    assert len(top) <= TOP_LEVEL_LIMIT, f"{len(top)} modules at speceval/ top level: {top}"


def test_no_package_folder_is_crowded():
    crowded = {
        str(folder.relative_to(REPO)): len(_modules(folder))
        for folder in (REPO / "speceval").rglob("*")
        if folder.is_dir()
        and len(_modules(folder)) > PACKAGE_LIMIT
        and str(folder.relative_to(REPO)) not in KNOWN_CROWDED
    }
    assert not crowded, f"package folders over {PACKAGE_LIMIT} modules (split them into rooms): {crowded}"


def test_no_module_is_over_500_lines():
    long = {
        str(path.relative_to(REPO)): lines
        for path in (REPO / "speceval").rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES_LIMIT
    }
    assert not long, f"modules over {MODULE_LINES_LIMIT} lines: {long}"


TRANSPORTS = ("providers", "realtime", "raydata", "emulator", "offline", "engines")
"""Units that talk to a provider or stand in for one: the analysis reads files and never needs them."""


def import_closure(starts: list[str], graph: dict[str, set[str]]) -> dict[str, str | None]:
    """Every module loaded by importing `starts`, each with the module that first imports it (None for a start).

    Importing `a.b.c` runs the `__init__` of `a.b` too, so a package's own imports count; the public API's
    `speceval/__init__.py` imports lazily and is left out (its TYPE_CHECKING names would pull in everything)."""
    first: dict[str, str | None] = dict.fromkeys(starts)
    todo = list(starts)
    while todo:
        module = todo.pop()
        parts = module.split(".")
        parents = [".".join(parts[:end]) for end in range(2, len(parts))]
        for target in sorted(graph.get(module, set())) + [p for p in parents if p in graph]:
            if target not in first and target != "speceval":
                first[target] = module
                todo.append(target)
    return first


def transports_read_by_the_analysis() -> list[str]:
    graph = import_graph()
    analysis = [m for m in graph if RANK[unit_of(m)][0] == RANK["analysis.rendering"][0]]
    first = import_closure(sorted(analysis), graph)
    chains = []
    for module in sorted(m for m in first if unit_of(m) in TRANSPORTS):
        chain = [module]
        while (parent := first[chain[-1]]) is not None:
            chain.append(parent)
        chains.append(" <- ".join(chain))
    return chains


def test_the_analysis_imports_no_transport():
    # A report reads files: run manifests, engine records, verdicts. Loading a provider, the realtime or Ray
    # engines, the emulator or the model factory to read them ties the report to every SDK and transport change.
    found = transports_read_by_the_analysis()
    assert not found, "the analysis layer (and the report) loads transport modules:\n" + "\n".join(found)


def test_the_layer_rule_refuses_an_import_back_up():
    # The rule itself, so a broken `allowed` cannot pass the test above by allowing everything.
    assert allowed("cli", "batch") and allowed("analysis.tables", "analysis.reading")
    assert not allowed("batch", "pipelines") and not allowed("analysis.reading", "analysis.tables")
    assert not allowed("providers", "judging") and not allowed("realtime", "raydata")


def test_known_exceptions_still_exist():
    assert imports_against_the_layers() >= KNOWN_AGAINST, "an exception was fixed: delete it from KNOWN_AGAINST"
    for folder in KNOWN_CROWDED:
        assert len(_modules(REPO / folder)) > PACKAGE_LIMIT, f"{folder} is no longer crowded: delete it"
