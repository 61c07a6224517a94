"""The report's tables as data frames, by the name of the CSV `speceval report` writes for each."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from speceval.analysis.frames.columns import pandas
from speceval.analysis.rendering.data import compute
from speceval.analysis.rendering.report_tables import keyed_tables
from speceval.batch.costs import PriceTable


def report_tables(folder: str | Path | Sequence[str | Path]) -> dict[str, Any]:
    """Every table of the report on the verdicts at or below `folder` (or several folders), as pandas DataFrames
    keyed by table name (`compliance`, `win_rates`, `position_consistency`, ...: the CSV's name without `.csv`),
    with the CSV's columns in its order: the same numbers `speceval report` writes, intervals and `data` included."""
    pd = pandas()  # said before any file is read
    folders = [Path(folder)] if isinstance(folder, str | Path) else [Path(f) for f in folder]
    data = compute(folders, PriceTable.load())
    return {
        table.name.removesuffix(".csv"): pd.DataFrame(table.rows, columns=table.columns) for table in keyed_tables(data)
    }
