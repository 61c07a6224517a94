"""Every estimator the report prints, in one table: its method text (what the CSVs' `ci_method` columns and
summary.md say), its reference, and the coverage scenarios `benchmarks/coverage_matrix.py` simulates for it.

A statistic does not ship without its row here and its scenarios in the coverage matrix
(tests/analysis/test_coverage_matrix.py fails for an estimator whose scenarios the matrix does not run). The
tables read their method text from here, so the text a reader sees and the method the matrix measured are the same
entry. Pure data: imports nothing of `speceval.analysis`.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

WILSON = "Wilson score interval with continuity correction (independent inputs, one run)"
CLUSTERED = (
    "Wilson at the cluster-robust effective sample size (continuity-corrected when fewer than 10 effective "
    "verdicts are of the rarer kind), t(G-H), clusters = {unit}s"
)
PAIRED = (
    "MOVER difference of the two rates' own intervals on shared inputs, correlation from the inputs' totals "
    "(Newcombe's hybrid score interval: Wilson limits at each side's effective size, clustered by input and "
    "stratified by statement over several runs on Korn-Graubard's z·t(G-H)/t(n-1), a constant side at its count "
    "of answers; continuity-corrected only where the rarer kind is at least 10 effective answers or 20%)"
)
MEAN = (
    "hull of mean ± t(G-H) · cluster-robust SE (stratified by statement) and the bounded mean's interval over the "
    "range the values were seen over (no range declared; none when every value is alike)"
)
BOUNDED_MEAN = (
    "bounded mean: rescaled by its declared range {low:g}..{high:g} to [0, 1] and given the rate "
    "interval (Wilson, or clustered Wilson over several runs), scaled back"
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
    "(Wilson limits at each side's effective size as for paired differences), clustered by input, stratified "
    "by statement"
)
PPI = (
    "stratified PPI (Angelopoulos et al. 2023), labels weighted N_h/n_h by statement: the judge's rate's clustered "
    "Wilson interval and the rectifier's t interval (cluster-robust by input; a statement whose labels show no "
    "judge error at its empirical-Bayes disagreement rate, a beta-binomial prior shared by the statements; from a "
    "Neyman sheet's design, the prior's mean a + b·e_h on the panel's error share per statement and every "
    "statement's variance at its empirical-Bayes rate) added in quadrature, clipped to [0, 1]"
)
ROGAN_GLADEN = (
    "Rogan–Gladen (p + q0 - 1)/(q0 + q1 - 1), q0, q1 from the labels weighted N_h/n_h, each one agreement and one "
    "disagreement further (Agresti–Coull; defined without a label of one class); hull of a percentile "
    "bootstrap over inputs ({draws} draws, seed {seed}) of labels and verdicts together and a delta-method interval "
    "(Agresti–Coull-adjusted q0, q1), clipped to [0, 1]"
)
SURVIVAL = (
    "Kaplan–Meier, log-log pointwise interval with the cluster-robust (by input) variance of -log S and t(G-1); "
    "the exact binomial bound at G clusters before the first flip"
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

ESTIMATORS: dict[str, Estimator] = {
    e.name: e
    for e in (
        Estimator(
            name="rate",
            method=WILSON,
            reference=_NEWCOMBE + " (method 4)",
            tables=("compliance.csv", "variation_statistics.csv"),
            scenarios=("rate-one-run",),
        ),
        Estimator(
            name="pooled_rate",
            method=CLUSTERED,
            reference=_MILLER + "; Wilson at the effective sample size",
            tables=("compliance.csv", "variation_statistics.csv"),
            scenarios=("rate-pooled",),
        ),
        Estimator(
            name="paired_difference",
            method=PAIRED,
            reference=_MOVER,
            tables=("paired_comparisons.csv",),
            scenarios=("paired",),
        ),
        Estimator(
            name="mean", method=MEAN, reference=_MILLER, tables=("metrics.csv", "turn_rates.csv"), scenarios=("mean",)
        ),
        Estimator(
            name="bounded_mean",
            method=BOUNDED_MEAN,
            reference=_NEWCOMBE + " (method 4), on the rescaled mean",
            tables=("metrics.csv",),
            scenarios=("bounded-mean",),
        ),
        Estimator(
            name="category_share",
            method=CLUSTERED,
            reference=_MILLER,
            tables=("category_distribution.csv",),
            scenarios=("category",),
        ),
        Estimator(
            name="category_difference",
            method=PAIRED,
            reference=_MOVER,
            tables=("category_differences.csv",),
            scenarios=("category",),
        ),
        Estimator(
            name="turn_rate",
            method=CLUSTERED,
            reference=_MILLER,
            tables=("turn_rates.csv",),
            scenarios=("rate-pooled",),
        ),
        Estimator(
            name="flips",
            method=CLUSTERED,
            reference=_MILLER + "; a flip is one indicator per conversation, clustered by input across runs",
            tables=("flips.csv",),
            scenarios=("rate-pooled",),
        ),
        Estimator(
            name="flips_per_conversation",
            # A count from 0 to the judged turns - 1: the bounded mean's interval, as `flips._mean` computes it (the
            # text said "mean ± t" while the bounded interval was shown, issue 42).
            method=BOUNDED_MEAN,
            reference=_NEWCOMBE
            + " (method 4), on the rescaled mean; compliant → not compliant between consecutive judged turns",
            tables=("flips.csv",),
            scenarios=("bounded-mean",),
        ),
        Estimator(
            name="turn_of_first_flip",
            method=SURVIVAL,
            reference="E. L. Kaplan & P. Meier, JASA 53 (1958) 457-481; D. Y. Lin & L. J. Wei, JASA 84 (1989) "
            "1074-1078 (robust variance, here by input); log-log interval (Kalbfleisch & Prentice)",
            tables=("flip_survival.csv",),
            scenarios=("survival",),
        ),
        Estimator(
            name="elicitation",
            method=CLUSTERED,
            reference=_MILLER + "; a violation at any turn is one indicator per conversation",
            tables=("elicitation.csv",),
            scenarios=("rate-pooled",),
        ),
        Estimator(
            name="disagreement",
            method=CLUSTERED,
            reference=_MILLER + "; one indicator per answer judged by two or more judges",
            tables=("statement_health.csv",),
            scenarios=("rate-pooled",),
        ),
        Estimator(
            name="pair_share",
            method=CLUSTERED,
            reference=_MILLER + "; one indicator per answer pair (both, one or neither statement complied with)",
            tables=("statement_health.csv",),
            scenarios=("rate-pooled",),
        ),
        Estimator(
            name="split_share",
            method=WILSON,
            reference=_NEWCOMBE + " (method 4); the measure: arXiv 2510.07686",
            tables=("statement_health.csv",),
            scenarios=("rate-one-run",),
        ),
        Estimator(
            name="spearman",
            method=SPEARMAN,
            reference="D. G. Bonett & T. A. Wright, Psychometrika 65 (2000) 23-28; C. Spearman, Am J Psychol 15 (1904) "
            "72-101 (correction for attenuation)",
            tables=("statement_health.csv",),
            scenarios=("spearman",),
        ),
        Estimator(
            name="candidate_spread",
            method=SPREAD,
            reference=_MOVER + "; simultaneous limits: C. E. Bonferroni 1936, the range as the largest pairwise "
            "difference",
            tables=("statement_health.csv",),
            scenarios=("spread",),
        ),
        Estimator(
            name="win_rate",
            method=CLUSTERED,
            reference=_MILLER + "; ties as half a win",
            tables=("win_rates.csv",),
            scenarios=("win-rate",),
        ),
        Estimator(
            name="bradley_terry",
            method=BRADLEY_TERRY,
            reference="R. A. Bradley & M. E. Terry, Biometrika 39 (1952); D. R. Hunter, Ann Stat 32 (2004)",
            tables=("bradley_terry.csv",),
            scenarios=("bradley-terry",),
        ),
        Estimator(
            name="kappa",
            method=KAPPA,
            reference="J. Cohen 1960; J. L. Fleiss 1971; A. R. Feinstein & D. V. "
            "Cicchetti, J Clin Epidemiol 43 (1990) 543-549 (kappa's paradox at high prevalence)",
            tables=("agreement.csv",),
            scenarios=("kappa",),
        ),
        Estimator(
            name="leniency", method=LENIENCY, reference=_MOVER, tables=("judge_leniency.csv",), scenarios=("leniency",)
        ),
        Estimator(
            name="ppi",
            method=PPI,
            reference="A. N. Angelopoulos et al., Science 382 (2023), arXiv 2301.09709; "
            "stratified estimator: W. G. Cochran, Sampling Techniques (1977), ch. 5",
            tables=("ppi.csv",),
            scenarios=("ppi",),
        ),
        Estimator(
            name="bias_corrected_rate",
            method=ROGAN_GLADEN,
            reference="W. J. Rogan & B. Gladen, Am J Epidemiol 107 (1978) 71-76; Lee et al., How to correctly "
            "report LLM-as-a-judge evaluations, arXiv 2511.21140",
            tables=("ppi.csv",),
            scenarios=("ppi",),
        ),
        Estimator(
            name="canary_accuracy",
            method=WILSON,
            reference=_NEWCOMBE + " (method 4); each example response its own item",
            tables=("judge_card.csv",),
            scenarios=("rate-one-run",),
        ),
        Estimator(
            name="human_accuracy",
            method=WILSON,
            reference=_NEWCOMBE + " (method 4); labelled answers drawn by the sheet",
            tables=("judge_card.csv",),
            scenarios=("rate-one-run",),
        ),
        Estimator(
            name="human_kappa",
            method=KAPPA,
            reference="J. Cohen 1960, the human as the second rater (the agreement table's estimator)",
            tables=("judge_card.csv",),
            scenarios=("kappa",),
        ),
        Estimator(
            name="retest_agreement",
            method=CLUSTERED,
            reference=_MILLER + "; one indicator per answer re-sent unchanged",
            tables=("judge_card.csv",),
            scenarios=("rate-pooled",),
        ),
        Estimator(
            name="wording_flip_rate",
            method=CLUSTERED,
            reference=_MILLER + "; one indicator per answer and wording; the measure: arXiv 2605.06161",
            tables=("judge_card.csv",),
            scenarios=("rate-pooled",),
        ),
        Estimator(
            name="wording_flip_excess",
            method=PAIRED,
            reference=_MOVER + "; per answer, its wording flip share minus its retest flip",
            tables=("judge_card.csv",),
            scenarios=("wording-excess",),
        ),
        Estimator(
            name="self_preference",
            method=SELF_PREFERENCE,
            reference=_MOVER + "; self-preference: A. Panickssery et al., arXiv 2404.13076",
            tables=("judge_card.csv",),
            scenarios=("self-preference",),
        ),
        Estimator(
            name="position_consistency",
            method=WILSON,
            reference=_NEWCOMBE + " (method 4); one indicator per comparison judged in both orders",
            tables=("judge_card.csv", "position_consistency.csv"),
            scenarios=("rate-one-run",),
        ),
        Estimator(
            name="position_consistency_pooled",
            method=CLUSTERED,
            reference=_MILLER + "; one indicator per comparison judged in both orders, every run and pair of an "
            "input one cluster (position_consistency.csv's pooled row, a run's row with several pairs; the judge "
            "card's row over every variation and run)",
            tables=("position_consistency.csv", "judge_card.csv"),
            scenarios=("rate-pooled",),
        ),
    )
}


def method(name: str, **values: object) -> str:
    """The method text of estimator `name`, its placeholders filled (a KeyError names an unregistered one)."""
    text = ESTIMATORS[name].method
    return text.format(**values) if values else text
