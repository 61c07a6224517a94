"""Statistics and reports over judged runs.

The statistics are pure functions you can call on your own data (every interval names its method):

>>> from speceval.analysis import rate_interval, paired_difference, wilson_interval
>>> low, high, method = rate_interval([1, 1, 0, 1, 1, 0], clusters=["q1", "q1", "q2", "q2", "q3", "q3"])
>>> wilson_interval(10, 10)[1]
1.0

* rates: `wilson_interval` (one run, independent inputs), `rate_interval` (clustered by input, the report's),
  `rating_interval` (a mean Likert rating 1-5, the report's), `mean_interval` (a metric's mean; `range=(low,
  high)` for a bounded value), `paired_difference` (two candidates on the same inputs, a MOVER interval);
* rankings: `win_rates`, `strengths` (Bradley–Terry with bootstrap intervals), `position_consistency`;
* agreement: `cohen_kappa`, `fleiss_kappa`, `krippendorff_alpha_ordinal`, `judge_agreement`;
* the judge measured: `leniency`, `ppi_mean`, `ppi_rates` (stratified PPI and the bias-corrected rate),
  `human_agreement`, `label_sheet`;
* data: `load_verdicts` (every verdict under some folders, ours or the original SpecEval's), `build_report`.

Methods and references: docs/judging-and-statistics.md; every estimator's method text, reference and coverage
scenarios: `speceval.analysis.statistics.registry.ESTIMATORS`.
"""

from __future__ import annotations

from speceval.analysis.reading.load import load_verdicts
from speceval.analysis.rendering.report import build_report
from speceval.analysis.statistics.clustered import mean_interval, rate_interval
from speceval.analysis.statistics.paired import paired_difference
from speceval.analysis.statistics.ppi import ppi_mean
from speceval.analysis.statistics.rating import rating_interval
from speceval.analysis.statistics.stats import cohen_kappa, fleiss_kappa, krippendorff_alpha_ordinal, wilson_interval
from speceval.analysis.tables.human_labels import label_sheet
from speceval.analysis.tables.judge_quality import human_agreement, leniency
from speceval.analysis.tables.ppi_table import ppi_rates
from speceval.analysis.tables.rankings import position_consistency, strengths, win_rates
from speceval.analysis.tables.rates import judge_agreement

__all__ = [
    "build_report",
    "cohen_kappa",
    "fleiss_kappa",
    "human_agreement",
    "judge_agreement",
    "krippendorff_alpha_ordinal",
    "label_sheet",
    "leniency",
    "load_verdicts",
    "mean_interval",
    "paired_difference",
    "position_consistency",
    "ppi_mean",
    "ppi_rates",
    "rate_interval",
    "rating_interval",
    "strengths",
    "wilson_interval",
    "win_rates",
]
