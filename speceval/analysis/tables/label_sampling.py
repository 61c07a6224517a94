"""`speceval label-sheet` over a million verdicts: the same sample as `human_labels.label_sheet`, drawn without
holding the verdicts. The verdicts stream by twice (`speceval.analysis.reading.streamed`): first each distinct
answer's item (8 bytes of it) is noted per statement, then, once the sample is drawn, the texts of the answers
drawn are kept as they pass."""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.reading.streamed import Survey, streamed_verdicts, survey
from speceval.analysis.tables.human_labels import item_id, labellable, pick_items, sheet_row
from speceval.analysis.tables.label_allocation import allocate, pick_allocated, shrunk_spread
from speceval.analysis.tables.label_design import SheetFilter
from speceval.errors import ConfigError


def streamed_label_sheet(
    paths: Sequence[Path],
    n: int,
    seed: int,
    statement_texts: dict[tuple[str, str], str] | None = None,
    aim: SheetFilter | None = None,
    allocation: str = "equal",
    spreads: dict[tuple[str, str], float] | None = None,
) -> tuple[list[dict[str, str]], dict[tuple[str, str], int]]:
    """`n` distinct answers under `paths`, drawn as `label_sheet` draws them from the same verdicts (of the verdicts
    `aim` selects: a judge entry, scope, candidate, variation), and the distinct answers per (spec, statement) they
    were drawn from (the sheet's design)."""
    aim = aim or SheetFilter()
    if n < 1:
        raise ConfigError("--n must be at least 1")
    plan = survey(paths)
    if not plan.compliance_files:
        folders = ", ".join(str(path) for path in paths)
        raise ConfigError(
            f"no compliance results found under {folders}: nothing to label (give the folders a "
            "compliance judge wrote, e.g. an experiment's output_dir)"
        )
    items: dict[tuple[str, str], array[int]] = defaultdict(lambda: array("Q"))
    seen: dict[str, set[str]] = defaultdict(set)
    for row in _answers(paths, plan):
        for name, value in (("judge", row.judge), ("candidate", row.model), ("variation", row.variation)):
            seen[name].add(value)
        if aim.matches(row):
            items[(row.spec, row.statement_id)].append(int(item_id(row), 16))
    if not items and aim.given():
        asked = ", ".join(f"--{name} {value}" for name, value in aim.given().items())
        known = "; ".join(f"{name}s: {', '.join(sorted(values))}" for name, values in sorted(seen.items()))
        raise ConfigError(
            f"no answer to label matches {asked} (under these folders: {known}; scopes: turn, conversation)"
        )
    # An item is 16 hex digits: as numbers they sort as the strings do, and hold 8 bytes each instead of ~70.
    by_statement = {key: np.unique(np.frombuffer(found, dtype=np.uint64)) for key, found in items.items()}
    del items
    population = {key: len(found) for key, found in by_statement.items()}
    if allocation == "equal":
        chosen = pick_items(by_statement, n, seed)
    else:  # proportional, or neyman with the error spreads given (`statement_spreads`)
        counts = allocate(population, n, spreads if allocation == "neyman" else None)
        chosen = pick_allocated(by_statement, counts, seed)
    picked = [f"{int(item):016x}" for item in chosen]
    wanted = set(picked)
    kept: dict[str, ComplianceRow] = {}
    for row in _answers(paths, plan):
        item = item_id(row)
        if item in wanted and item not in kept and aim.matches(row):
            kept[item] = row
            if len(kept) == len(wanted):
                break
    texts = statement_texts or {}
    return [sheet_row(item, kept[item], texts) for item in picked], population


def _answers(paths: Sequence[Path], plan: Survey) -> Iterator[ComplianceRow]:
    return (
        row
        for row in streamed_verdicts(paths, plan, rankings=False)
        if isinstance(row, ComplianceRow) and labellable(row)
    )


def statement_spreads(
    paths: Sequence[Path], aim: SheetFilter | None = None, pilot: dict[str, bool] | None = None
) -> dict[tuple[str, str], float]:
    """Per (spec, statement): the spread of the judge's errors there, for Neyman's allocation
    (`speceval.analysis.tables.label_allocation`): from the `pilot` labels (item → human verdict) where given, the
    share of the aimed verdicts that disagree with them; else the share of answers the judges disagree on."""
    aim = aim or SheetFilter()
    plan = survey(paths)
    wrong: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    panel: dict[tuple[str, str], dict[str, set[bool]]] = defaultdict(lambda: defaultdict(set))
    judges: set[str] = set()
    for row in _answers(paths, plan):
        if row.outcome != "judged" or row.compliant is None:
            continue
        key, item = (row.spec, row.statement_id), item_id(row)
        judges.add(row.judge)
        if pilot is not None:
            if item in pilot and aim.matches(row):
                wrong[key][0] += row.compliant != pilot[item]
                wrong[key][1] += 1
        else:
            panel[key][item].add(bool(row.compliant))
    if pilot is None:
        if len(judges) < 2:
            raise ConfigError("--allocation neyman needs a pilot of labels (--pilot SHEET) or two or more judges")
        for key, verdicts in panel.items():
            wrong[key] = [sum(len(v) > 1 for v in verdicts.values()), len(verdicts)]
    elif not wrong:
        raise ConfigError("--pilot: none of its labels names an answer of the verdicts aimed at here")
    return {key: shrunk_spread(k, m) for key, (k, m) in wrong.items()}
