"""Every verdict under some folders folded into compact columns as the files are read, one file at a time: what
`speceval report` computes from, in memory that grows by a few dozen bytes per verdict (issue 25) instead of a
row object with its texts. Pairwise comparisons are folded the same way, into their own columns
(`speceval.analysis.reading.ranking_columns`). The judges' checks on the spec's examples are kept as rows (small), and
so
are the verdicts of `scope: turn` judges, a few slots each (`speceval.analysis.reading.turn_verdicts`: per-turn rates,
flips and elicitation are computed from them); their columns are kept apart for the sample view."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from pydantic import ConfigDict

from speceval.analysis.reading.column_codes import facts_of
from speceval.analysis.reading.columns import ColumnsBuilder, VerdictColumns
from speceval.analysis.reading.load import walk
from speceval.analysis.reading.ranking_columns import RankingColumns, RankingColumnsBuilder
from speceval.analysis.reading.rows import DEFAULT_VARIATION, Found
from speceval.analysis.reading.settings import mixed_settings, settings_variation
from speceval.analysis.reading.turn_verdicts import TurnVerdict


class FoldedVerdicts(Found):
    """Compliance verdicts and comparisons as columns, and everything else `load_verdicts` finds (its `rankings`
    rows are left empty: `ranking_columns` holds the comparisons)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    columns: VerdictColumns
    turn_columns: VerdictColumns
    """Verdicts of `scope: turn` judges (one per assistant turn): never pooled with `columns`."""
    turn_rows: list[TurnVerdict]
    """The same verdicts for the per-turn tables (rates by turn, flips, elicitation): a few slots each, no text."""
    ranking_columns: RankingColumns
    """Every pairwise comparison, in the order `load_verdicts` lists them as rows."""


def fold_verdicts(paths: Iterable[Path]) -> FoldedVerdicts:
    """Read every results file at or below `paths`, keeping compliance verdicts and comparisons as columns only."""
    found = Found()
    builder, turns, rankings = ColumnsBuilder(), ColumnsBuilder(), RankingColumnsBuilder()
    turn_rows: list[TurnVerdict] = []
    for file, stream, offsets in walk(paths, found, keep=False, rankings=rankings.add_file):
        rows = iter(stream)
        first = next(rows, None)
        if first is None:
            continue
        rows = itertools.chain([first], rows)
        if first.turn is not None:  # a judge run's scope is one for all its files
            kept = list(rows)
            turns.add_file(file, kept, offsets)
            code = turns.facts_code(facts_of(first), file)  # (the code add_file gave the file)
            turn_rows.extend(TurnVerdict(turns.facts, code, row) for row in kept)
            del kept
        else:
            builder.add_file(file, rows, offsets)
    _separate_settings(builder)
    _separate_settings(turns)  # (the turn verdicts read their facts from `turns.facts`)
    return FoldedVerdicts(
        columns=builder.build(),
        turn_columns=turns.build(),
        turn_rows=turn_rows,
        ranking_columns=rankings.build(),
        **dict(found),
    )


def _separate_settings(builder: ColumnsBuilder) -> None:
    """As `load_verdicts` does for rows (see `mixed_settings`), on the facts every verdict of a file shares."""
    kinds: dict[tuple[str, str, str], set[str | None]] = defaultdict(set)
    for facts in builder.facts:
        if facts.variation == DEFAULT_VARIATION:
            kinds[(facts.spec, facts.judge, facts.model)].add(facts.candidate_settings)
    mixed = mixed_settings(kinds)
    for index, facts in enumerate(builder.facts):
        if facts.variation == DEFAULT_VARIATION and (facts.spec, facts.judge, facts.model) in mixed:
            builder.facts[index] = facts.model_copy(update={"variation": settings_variation(facts.candidate_settings)})
