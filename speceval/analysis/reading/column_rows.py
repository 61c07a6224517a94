"""Between the library's rows and the columns (split from `columns`): the functions that take a list of
`ComplianceRow` compute on columns made from it, and the few tables still computed from rows get rows back.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from speceval.analysis.reading.columns import NO_VERDICT, VerdictColumns
from speceval.analysis.reading.rows import ComplianceRow


def as_columns(rows: VerdictColumns | Iterable[ComplianceRow]) -> VerdictColumns:
    """The library's functions take rows (a list of `ComplianceRow`) or columns; they compute on columns."""
    return rows if isinstance(rows, VerdictColumns) else VerdictColumns.from_rows(rows)


def rows_of(c: VerdictColumns) -> list[ComplianceRow]:
    """The verdicts as rows whose input and answer are their digests (hex): for the few tables still computed
    from rows (categorical judges'), which compare texts but never show them."""
    return [
        ComplianceRow.model_construct(
            **c.facts[c.file[i]].model_dump(),
            input=f"{c.input[i]:x}",
            output=f"{c.output[i]:x}",
            outcome=c.outcomes[c.outcome[i]],
            compliant=None if c.compliant[i] == NO_VERDICT else bool(c.compliant[i]),
            confidence=None,
            rating=None if np.isnan(c.rating[i]) else float(c.rating[i]),
            category=None if c.category[i] == NO_VERDICT else c.categories[c.category[i]],
            score=None if np.isnan(c.score[i]) else float(c.score[i]),
            explanation=None,
            problem=None,
            detail=None,
        )
        for i in range(len(c))
    ]
