"""The records of spec health (issue 38): the thresholds the flags are drawn at, each flag's rule as the docs and
the report quote it, and the rows of `statement_health.csv` and `statement_health_judges.csv` (computed by
`speceval.analysis.tables.health`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict

from speceval.analysis.statistics.columns import Columns, Estimate, FlatRecord
from speceval.analysis.tables.candidate_split import HealthAssociation
from speceval.analysis.tables.tension import PairCompliance

FLAGS = ("judges_disagree", "all_fail", "all_pass", "judge_unreliable", "model_dependent", "not_judged")
RULES = {
    "judges_disagree": "the 95% interval of the judges' disagreement lies wholly above the disagreement threshold",
    "all_fail": "two or more candidates, and every candidate's 95% interval lies wholly below the fail threshold",
    "all_pass": "two or more candidates, and every candidate's 95% interval lies wholly above the pass threshold",
    "judge_unreliable": "some judge got less than --min-canary-accuracy of this statement's own example responses "
    "right (never set without --min-canary-accuracy)",
    "model_dependent": "two or more candidates, and the 95% interval of the highest minus the lowest candidate's "
    "rate (paired on shared inputs) lies wholly above the spread threshold",
    "not_judged": "no answer on this statement has a yes/no verdict: every one failed at generation or at judging "
    "(answers_not_judged counts them), so nothing else here can be read; resume or re-run them",
}


Share = Annotated[float, Strict(), Field(ge=0, le=1)]
"""A line between 0 and 1: strict, so YAML's `true` is refused instead of read as 1."""


class HealthThresholds(BaseModel):
    """The lines the flags are drawn at (report flags `--health-*`, experiment key `health:`)."""

    model_config = ConfigDict(extra="forbid")

    disagreement: Share = Field(default=0.2, description="judges_disagree: the disagreement's interval is above this")
    fail_below: Share = Field(
        default=0.5, description="all_fail: every candidate's interval is below this compliance rate"
    )
    pass_above: Share = Field(
        default=0.9, description="all_pass: every candidate's interval is above this compliance rate"
    )
    spread: Share = Field(
        default=0.0,
        description="model_dependent: the interval of the highest minus the lowest candidate's rate is above this",
    )
    split: Annotated[float, Strict()] = Field(  # a Share, at most one half (the SD of 0/1 values is)
        default=0.4,
        ge=0,
        le=0.5,
        description="an input splits the candidates when the SD of their compliance on it is at least this",
    )


class StatementHealth(BaseModel):
    """One statement of one spec: what its verdicts say about the statement (see the module docstring)."""

    spec: str
    statement_id: str
    flags: list[str]
    flag_count: int
    judges: int
    answers_multi_judged: int = Field(description="answers judged (binary verdict) by two or more judges")
    disagreement: float | None = Field(description="share of those answers on which the judges' verdicts differ")
    disagreement_ci_low: float | None
    disagreement_ci_high: float | None
    disagreement_ci_method: str | None
    kappa: float | None = Field(
        default=None, description="agreement beyond chance on the answers every judge judged (None: undefined)"
    )
    kappa_kind: str | None = None
    kappa_ci_low: float | None = None
    kappa_ci_high: float | None = None
    kappa_ci_method: str | None = None
    kappa_informative: bool | None = Field(
        default=None,
        description="False where the rarer verdict is under 10% of the compared ones (prevalence 0.9-0.99 and beyond):"
        " kappa is uninformative there; read disagreement and its interval (1 - raw agreement for two judges)",
    )
    kappa_items: int
    candidates: int = Field(description="distinct candidate models with verdicts here (variations are not candidates)")
    candidate_cells: int = Field(default=0, description="candidate × variation rates compared (lowest, highest)")
    lowest_candidate: str | None = Field(description="the candidate (model) with the lowest rate here")
    lowest_variation: str | None
    lowest_rate: float | None
    lowest_ci_low: float | None
    lowest_ci_high: float | None
    highest_candidate: str | None
    highest_variation: str | None
    highest_rate: float | None
    highest_ci_low: float | None
    highest_ci_high: float | None
    rate_ci_method: str | None = Field(
        description="every candidate's rate: all judges' verdicts pooled, clustered by input"
    )
    all_below: bool = Field(description="every candidate's interval is below the fail threshold")
    all_above: bool = Field(description="every candidate's interval is above the pass threshold")
    spread: float | None = Field(description="highest minus lowest candidate's rate on their shared inputs")
    spread_ci_low: float | None
    spread_ci_high: float | None
    spread_ci_method: str | None
    min_canary_accuracy: float | None = Field(description="the lowest judge's accuracy on this statement's examples")
    unreliable_judges: list[str]
    max_abs_leniency: float | None = Field(description="the largest |judge's rate − the judges' mean| here")
    split_inputs: int = Field(description="inputs answered by three or more candidate models")
    split_share: float | None = Field(
        default=None,
        description="share of them on which the candidates split (the SD of their compliance ≥ the split threshold)",
    )
    split_ci_low: float | None = None
    split_ci_high: float | None = None
    all_fail_share: float | None = Field(
        default=None, description="share of them every candidate fails (each one's mean compliance on it < 1/2)"
    )
    all_fail_ci_low: float | None = None
    all_fail_ci_high: float | None = None
    split_ci_method: str | None = None
    answers_not_judged: int = Field(
        default=0,
        description="the candidates' answers here without any yes/no verdict: their generation failed (each candidate "
        "and variation once), or every judge's verdict on them failed (unparsed, errored)",
    )


class JudgeOnStatement(FlatRecord):
    """One judge on one statement: its accuracy on the statement's own examples and its leniency there (each measure
    written as its own columns, named by `Columns`)."""

    spec: str
    statement_id: str
    judge: str
    canary_judged: int
    canary_correct: int
    canary: Annotated[Estimate, Columns("canary_accuracy", "canary")]
    below_minimum: bool
    leniency_items: int = Field(description="answers every judge judged")
    leniency: Annotated[Estimate, Columns("leniency")] = Field(
        description="this judge's rate minus the judges' mean rate on those answers"
    )
    human_labelled: int = Field(default=0, description="this judge's verdicts on answers a person labelled (--labels)")
    human_agree: int = 0
    human_accuracy: Annotated[Estimate, Columns("human_accuracy", "human")] = Estimate()
    human_kappa: Annotated[Estimate, Columns("human_kappa")] = Field(
        default=Estimate(), description="Cohen's kappa, judge against the labels"
    )
    human_kappa_informative: bool | None = Field(
        default=None, description="False where one label is under a tenth of the answers: read agreement instead"
    )


class Health(BaseModel):
    """Every statement's health, each judge on each statement, and the pairs of statements in tension."""

    statements: list[StatementHealth] = Field(default_factory=list)
    judges: list[JudgeOnStatement] = Field(default_factory=list)
    association: list[HealthAssociation] = Field(default_factory=list)
    pairs: list[PairCompliance] = Field(default_factory=list)
    thresholds: HealthThresholds = Field(default_factory=HealthThresholds)
    min_canary_accuracy: float | None = None
