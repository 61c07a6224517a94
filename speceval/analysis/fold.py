"""Every verdict under some folders folded into compact columns as the files are read, one file at a time: what
`speceval report` computes from, in memory that grows by a few dozen bytes per verdict (issue 25) instead of a
row object with its texts. Rankings and the judges' checks on the spec's examples are kept as rows (small)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from pydantic import ConfigDict

from speceval.analysis.columns import ColumnsBuilder, VerdictColumns
from speceval.analysis.load import DEFAULT_VARIATION, Found, mixed_settings, settings_variation, walk


class FoldedVerdicts(Found):
    """Compliance verdicts as columns, and everything else `load_verdicts` finds."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    columns: VerdictColumns


def fold_verdicts(paths: Iterable[Path]) -> FoldedVerdicts:
    """Read every results file at or below `paths`, keeping compliance verdicts as columns only."""
    found = Found()
    builder = ColumnsBuilder()
    for file, rows in walk(paths, found, keep=False):
        builder.add_file(file, rows)
    _separate_settings(builder)
    return FoldedVerdicts(columns=builder.build(), **dict(found))


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
