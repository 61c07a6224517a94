"""The report's tables as data frames, by the name of the CSV `speceval report` writes for each."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from speceval.analysis.frames.columns import pandas
from speceval.analysis.rendering.data import compute
from speceval.analysis.rendering.experiment_options import report_settings
from speceval.analysis.rendering.report_tables import keyed_tables
from speceval.batch.costs import PriceTable


def report_tables(folder: str | Path | Sequence[str | Path]) -> dict[str, Any]:
    """Every table of the report on the verdicts at or below `folder` (or several folders), as pandas DataFrames
    keyed by table name (`compliance`, `win_rates`, `position_consistency`, ...: the CSV's name without `.csv`),
    with the CSV's columns in its order: the same numbers `speceval report` writes, intervals and `data` included
    (on an experiment, with the settings its own report was built with)."""
    pd = pandas()  # said before any file is read
    folders = [Path(folder)] if isinstance(folder, str | Path) else [Path(f) for f in folder]
    # An experiment's tables with its own report settings (its card's gate, health lines, metrics, labels), as the
    # CSVs its report wrote them.
    recorded, notes = report_settings(folders, {})
    for note in notes:
        warnings.warn(note, UserWarning, stacklevel=2)
    data = compute(folders, PriceTable.load(), **(recorded.options() if recorded else {}))
    frames = {}
    for table in keyed_tables(data):
        frame = pd.DataFrame(table.rows, columns=table.columns)
        for column in table.columns:
            # A column of whole numbers with gaps (position_consistency's `run`, empty on the pooled row) stays whole
            # numbers (pandas' nullable Int64), not floats with NaN.
            values = [row.get(column) for row in table.rows if row.get(column) is not None]
            if values and len(values) < len(table.rows) and all(type(v) is int for v in values):
                frame[column] = frame[column].astype("Int64")
        frames[table.name.removesuffix(".csv")] = frame
    return frames
