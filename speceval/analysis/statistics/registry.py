"""Every estimator the report prints, in one table: its method text (what the CSVs' `ci_method` columns and
summary.md say), its reference, and the coverage scenarios `benchmarks/coverage_matrix.py` simulates for it.

A statistic does not ship without its row here and its scenarios in the coverage matrix
(tests/analysis/test_coverage_matrix.py fails for an estimator whose scenarios the matrix does not run). The
tables read their method text from here, so the text a reader sees and the method the matrix measured are the same
entry. Pure data: imports nothing of `speceval.analysis`.
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic import BaseModel, Field

WILSON = "Wilson score interval with continuity correction (independent inputs, one run)"
CLUSTERED = (
    "Wilson at the cluster-robust effective sample size, t(G-H) (continuity-corrected on z when fewer than 10 "
    "effective verdicts are of the rarer kind, under 40 effective verdicts on the limit toward the rate's end only; "
    "at a rate of 0 or 1 the exact bound 0.025^(1/G), valid however alike an input's runs are), clusters = {unit}s"
)
PAIRED = (
    "MOVER difference of the two rates' own intervals on shared inputs, correlation from the inputs' totals, a "
    "positive one half a Fisher-z standard error down (Newcombe's hybrid score interval: Wilson limits at each "
    "side's effective size, clustered by input and "
    "stratified by statement over several runs on Korn-Graubard's z·t(G-H)/t(n-1) where the design effect exceeds "
    "1, else on z; continuity-corrected only where the rarer kind is at least 10 effective answers or 20%; a "
    "constant side takes the mid-p exact limit 1 - 0.05^(1/n), n its answers over the other side's design effect, "
    "no fewer than its inputs; both sides constant, n its inputs)"
)
PAIRED_SCORE = (
    "Tango's score interval for paired proportions on the answers' differences (positive parts the discordant "
    "count b, negative parts c) at their cluster-robust effective size (at most the count of answers), clustered by "
    "input and stratified by statement: t(G-H), or where fewer than 10 effective answers differ at most 4 an input "
    "on z; z at one answer an input; no answer told apart: the exact bound 1 - 0.025^(1/G) each way"
)
MEAN = (
    "hull of mean ± t(G-H) · cluster-robust SE (stratified by statement) and the bounded mean's interval over the "
    "range the values were seen over (no range declared; none when every value is alike)"
)
MEAN_RATING = (
    "Gaffke's bound on the scale 1-5: the mean under Dirichlet(1, ..., 1) weights on the ratings counted at the "
    "effective size n_eff = their variance / the cluster-robust SE² (stratified by statement; between the inputs G "
    "and the ratings n, G when every rating is alike) and one more rating at 1 for the lower limit (at 5 for the "
    "upper), its 2.5% and 97.5% quantiles read from the Beta of the same mean and variance (Clopper-Pearson on a "
    "0/1 scale; all 5s: 1 + 4·0.025^(1/G) .. 5)"
)
BOUNDED_MEAN = (
    "bounded mean: rescaled by its declared range {low:g}..{high:g} to [0, 1] and given the rate interval (Wilson "
    "where every value is 0 or 1 and one an input, else the clustered Wilson at the effective size p(1 - p) over the "
    "values' cluster-robust variance, no more than their count times p(1 - p) over their own variance), scaled back"
)
BRADLEY_TERRY = (
    "log-strength ± t(G-1) · SD over a bootstrap of inputs ({draws} draws, seed {seed}), "
    "hull with the percentile interval"
)
KAPPA = (
    "cluster bootstrap over inputs ({draws} draws, seed {seed}, percentile), hull with the kappa at the "
    "clustered Wilson limits of raw agreement"
)
LENIENCY = (
    "(K-1)/K × MOVER difference of the judge's rate and the other judges' mean rate on shared answers "
    "(Wilson limits at each side's effective size and the mid-p limit at a constant side, as for paired "
    "differences), clustered by input, stratified by statement"
)
PPI = (
    "stratified PPI (Angelopoulos et al. 2023), labels weighted N_h/n_h by statement: the judge's rate's clustered "
    "Wilson interval and the rectifier's t interval (cluster-robust by input, t on the labelled inputs' degrees of "
    "freedom; a statement whose labels show no "
    "judge error at its empirical-Bayes disagreement rate, a beta-binomial prior shared by the statements; from a "
    "Neyman sheet's design, the prior's mean a + b·e_h on the panel's error share per statement and every "
    "statement's variance at its empirical-Bayes rate) added in quadrature, clipped to [0, 1]"
)
HUMAN_WEIGHTED = (
    "design-weighted: each statement's share of labelled answers agreeing, at its weight N_h/N (its verdicts over "
    "those of the statements with a label); interval: stratified PPI's rectifier's, on the disagreement (labels "
    "weighted N_h/n_h, cluster-robust by input and stratified by statement, t on the labelled inputs' degrees of "
    "freedom less one per statement; a statement whose labels all agree at its empirical-Bayes disagreement rate, from"
    " a Neyman sheet's design on the panel's error share), clipped to [0, 1]; hull with Wilson's score interval at the"
    " design's Kish effective size (Σw)²/Σ_g[(1 - ρ)Σ_g w² + ρ(Σ_g w)²] around the same share (ρ: the labels' "
    "intra-input correlation, one-way ANOVA within statements, clipped to [0, 1]; 1 where every label agrees)"
)
ROGAN_GLADEN = (
    "Rogan–Gladen (p + q0 - 1)/(q0 + q1 - 1), q0, q1 from the labels weighted N_h/n_h, each one agreement and one "
    "disagreement further (Agresti–Coull; defined without a label of one class); interval: the 95% equal-tailed "
    "posterior of the rate in the double-sampling misclassification model (labels: Beta at their Kish size, Jeffreys "
    "on the rate, at most one per labelled input; sensitivity and specificity uniform; the verdicts of inputs with no "
    "label at their cluster-robust effective size), over {draws} draws of sensitivity and specificity (seed {seed})"
)
SURVIVAL = (
    "Kaplan–Meier, log-log pointwise interval with the cluster-robust (by input) variance of -log S and t(G-1); "
    "the exact binomial bound at G clusters before the first flip and once all have flipped; [0, 1] between them "
    "at one input; with fewer than 10 flips so far, widened to hold Wilson's continuity-corrected interval at the "
    "curve's effective size F(1-F)/Var F"
)
SELF_PREFERENCE = (
    "MOVER difference of the judge's mean leniency toward its own provider's candidates and toward the others' "
    "(each candidate's leniency interval as above; candidates independent)"
)


class Estimator(BaseModel):
    """One statistic the report prints."""

    name: str = Field(description="the key the coverage matrix and tests name it by")
    method: str = Field(description="the text of its `ci_method` column (placeholders filled by the table)")
    reference: str
    tables: tuple[str, ...] = Field(description="the report's files that print it")
    scenarios: tuple[str, ...] = Field(description="the coverage matrix's scenario families for it")


SPEARMAN = (
    "Spearman rank correlation across statements of their true shares (as with unlimited inputs): the observed rho "
    "and its Fisher-z limits (Bonett-Wright variance (1 + rho^2/2)/(n - 3)) corrected for the shares' binomial "
    "noise over each statement's inputs (Spearman's correction for attenuation, with the two shares' sampling "
    "covariance), clipped to [-1, 1]; given from 8 statements"
)

SPREAD = (
    "highest minus lowest candidate on their shared inputs, selection-aware: from the largest of every pair's MOVER "
    "lower limits at level 1 - 0.05/m (Bonferroni over the m pairs of candidates) to the largest of their 95% upper "
    "limits (the paired interval's), the lower end at least 0"
)

_MILLER = "E. Miller, Adding Error Bars to Evals, arXiv 2411.00640"
_NEWCOMBE = "R. G. Newcombe, Stat Med 17 (1998) 857-872 (method 4) and 2635-2650 (method 10)"
_MOVER = "G. Y. Zou & A. Donner, Stat Med 27 (2008) 1693-1702; " + _NEWCOMBE
_TANGO = (
    "T. Tango, Stat Med 17 (1998) 891-908 (the score interval for paired proportions); its effective size: " + _MILLER
)
_GAFFKE = (
    "N. Gaffke, Three test statistics for a nonparametric one-sided hypothesis on the mean of a nonnegative variable, "
    "Math Methods Stat 14 (2005); E. Learned-Miller & P. S. Thomas, A New Confidence Interval for the Mean of a "
    "Bounded Random Variable, arXiv 1905.06208; Miller 2024 for the clusters"
)
_KAPLAN_MEIER = (
    "E. L. Kaplan & P. Meier, JASA 53 (1958) 457-481; D. Y. Lin & L. J. Wei, JASA 84 (1989) 1074-1078 (robust "
    "variance, here by input); log-log interval (Kalbfleisch & Prentice)"
)
_BONETT_WRIGHT = (
    "D. G. Bonett & T. A. Wright, Psychometrika 65 (2000) 23-28; C. Spearman, Am J Psychol 15 (1904) 72-101 "
    "(correction for attenuation)"
)
_BRADLEY_TERRY = "R. A. Bradley & M. E. Terry, Biometrika 39 (1952); D. R. Hunter, Ann Stat 32 (2004)"
_COHEN = (
    "J. Cohen 1960; J. L. Fleiss 1971; A. R. Feinstein & D. V. Cicchetti, J Clin Epidemiol 43 (1990) 543-549 "
    "(kappa's paradox at high prevalence)"
)
_PPI = (
    "A. N. Angelopoulos et al., Science 382 (2023), arXiv 2301.09709; stratified estimator: W. G. Cochran, "
    "Sampling Techniques (1977), ch. 5"
)
_ROGAN_GLADEN = (
    "W. J. Rogan & B. Gladen, Am J Epidemiol 107 (1978) 71-76; A. Tenenbein, JASA 65 (1970) 1350-1361 (double "
    "sampling); Lee et al., How to correctly report LLM-as-a-judge evaluations, arXiv 2511.21140"
)


def _entry(name: str, method: str, reference: str, scenario: str, *tables: str) -> Estimator:
    """One row of the table: an estimator printed in `tables`, simulated by the matrix's `scenario` family."""
    return Estimator(name=name, method=method, reference=reference, tables=tables, scenarios=(scenario,))


class _Family(NamedTuple):
    """Estimators sharing a method text, its reference and (unless an entry names another) a coverage scenario:
    each entry states only what is its own (its name, tables and what its indicator is)."""

    method: str
    reference: str
    scenario: str

    def __call__(self, name: str, *tables: str, note: str = "", scenario: str = "") -> Estimator:
        reference = f"{self.reference}; {note}" if note else self.reference
        return _entry(name, self.method, reference, scenario or self.scenario, *tables)


_WILSON = _Family(WILSON, _NEWCOMBE + " (method 4)", "rate-one-run")
_CLUSTERED = _Family(CLUSTERED, _MILLER, "rate-pooled")
_PAIRED = _Family(PAIRED, _MOVER, "paired")
_BOUNDED_MEAN = _Family(BOUNDED_MEAN, _NEWCOMBE + " (method 4), on the rescaled mean", "bounded-mean")
_CARD = "judge_card.csv"
_HEALTH = "statement_health.csv"

ESTIMATORS: dict[str, Estimator] = {
    e.name: e
    for e in (
        _WILSON("rate", "compliance.csv", "variation_statistics.csv"),
        _CLUSTERED(
            "pooled_rate", "compliance.csv", "variation_statistics.csv", note="Wilson at the effective sample size"
        ),
        _PAIRED("paired_difference", "paired_comparisons.csv"),
        _entry("mean", MEAN, _MILLER, "mean", "metrics.csv"),
        _entry("mean_rating", MEAN_RATING, _GAFFKE, "mean", "compliance.csv", "turn_rates.csv"),
        _BOUNDED_MEAN("bounded_mean", "metrics.csv"),
        _CLUSTERED("category_share", "category_distribution.csv", scenario="category"),
        _PAIRED("category_difference", "category_differences.csv", scenario="category"),
        _CLUSTERED("turn_rate", "turn_rates.csv"),
        _CLUSTERED(
            "flips", "flips.csv", note="a flip is one indicator per conversation, clustered by input across runs"
        ),
        # A count from 0 to the judged turns - 1: the bounded mean's interval, as `flips._mean` computes it (the text
        # said "mean ± t" while the bounded interval was shown, issue 42).
        _BOUNDED_MEAN(
            "flips_per_conversation", "flips.csv", note="compliant → not compliant between consecutive judged turns"
        ),
        _entry("turn_of_first_flip", SURVIVAL, _KAPLAN_MEIER, "survival", "flip_survival.csv"),
        _CLUSTERED("elicitation", "elicitation.csv", note="a violation at any turn is one indicator per conversation"),
        _CLUSTERED("disagreement", _HEALTH, note="one indicator per answer judged by two or more judges"),
        _CLUSTERED(
            "pair_share",
            _HEALTH,
            note="one indicator per answer pair (both, one or neither statement complied with)",
        ),
        _WILSON("split_share", _HEALTH, note="the measure: arXiv 2510.07686"),
        _entry("spearman", SPEARMAN, _BONETT_WRIGHT, "spearman", _HEALTH),
        _entry(
            "candidate_spread",
            SPREAD,
            _MOVER + "; simultaneous limits: C. E. Bonferroni 1936, the range as the largest pairwise difference",
            "spread",
            _HEALTH,
        ),
        _CLUSTERED("win_rate", "win_rates.csv", note="ties as half a win", scenario="win-rate"),
        _entry("bradley_terry", BRADLEY_TERRY, _BRADLEY_TERRY, "bradley-terry", "bradley_terry.csv"),
        _entry("kappa", KAPPA, _COHEN, "kappa", "agreement.csv"),
        _entry("leniency", LENIENCY, _MOVER, "leniency", "judge_leniency.csv"),
        _entry("ppi", PPI, _PPI, "ppi", "ppi.csv"),
        _entry("bias_corrected_rate", ROGAN_GLADEN, _ROGAN_GLADEN, "ppi", "ppi.csv"),
        _WILSON("canary_accuracy", _CARD, note="each example response its own item"),
        _WILSON(
            "human_accuracy",
            _CARD,
            "human_agreement.csv",
            "statement_health_judges.csv",
            note="labelled answers drawn by the sheet, one an input",
        ),
        _CLUSTERED(
            "human_accuracy_pooled",
            _CARD,
            "human_agreement.csv",
            "statement_health_judges.csv",
            note="one agreement indicator per labelled answer, the labelled answers of one input (its candidates, "
            "runs and turns) one cluster",
        ),
        _entry(
            "human_accuracy_weighted",
            HUMAN_WEIGHTED,
            _PPI + "; the judge card's accuracy over the answers it judged where the label sheet's design is known",
            "human_accuracy_weighted",
            _CARD,
            "human_agreement.csv",
        ),
        _entry(
            "human_kappa",
            KAPPA,
            "J. Cohen 1960, the human as the second rater (the agreement table's estimator)",
            "kappa",
            _CARD,
        ),
        _CLUSTERED("retest_agreement", _CARD, note="one indicator per answer re-sent unchanged"),
        _CLUSTERED(
            "wording_flip_rate", _CARD, note="one indicator per answer and wording; the measure: arXiv 2605.06161"
        ),
        _entry(
            "wording_flip_excess",
            PAIRED_SCORE,
            _TANGO + "; per answer, its wording flip share minus its retest flip",
            "wording-excess",
            _CARD,
        ),
        _entry(
            "self_preference",
            SELF_PREFERENCE,
            _MOVER + "; self-preference: A. Panickssery et al., arXiv 2404.13076",
            "self-preference",
            _CARD,
        ),
        _WILSON(
            "position_consistency",
            _CARD,
            "position_consistency.csv",
            note="one indicator per comparison judged in both orders",
        ),
        _CLUSTERED(
            "position_consistency_pooled",
            "position_consistency.csv",
            _CARD,
            note="one indicator per comparison judged in both orders, every run and pair of an input one cluster "
            "(position_consistency.csv's pooled row, a run's row with several pairs; the judge card's row over every "
            "variation and run)",
        ),
    )
}


def method(name: str, **values: object) -> str:
    """The method text of estimator `name`, its placeholders filled (a KeyError names an unregistered one)."""
    text = ESTIMATORS[name].method
    return text.format(**values) if values else text
