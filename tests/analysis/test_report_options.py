"""`build_report` and `compute` take the options of `ReportOptions` as keywords: a misspelled one is refused before
anything is read or written, as a misspelled parameter would be."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from speceval.analysis.rendering.data import ReportOptions, compute
from speceval.analysis.rendering.report import build_report
from speceval.batch.costs import PriceTable


def test_a_misspelled_option_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    misspelled: dict[str, Any] = {"min_canary_acuracy": 0.9}
    with pytest.raises(TypeError, match="min_canary_acuracy"):
        build_report([tmp_path / "nothing-here"], tmp_path / "report", **misspelled)
    assert not (tmp_path / "report").exists()
    with pytest.raises(TypeError, match="min_canary_acuracy"):
        compute([tmp_path], PriceTable.load(), **misspelled)


def test_every_option_is_accepted_by_name(tmp_path: Path) -> None:
    # An empty folder gets as far as reading verdicts (none): every option name passed the check.
    given: dict[str, Any] = dict.fromkeys(ReportOptions.__optional_keys__)
    given["likert_drop"] = 2
    with pytest.raises(Exception, match="no compliance or ranking results"):
        compute([tmp_path], PriceTable.load(), **given)
