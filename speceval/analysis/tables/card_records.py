"""The records of the judge card (issue 44): the settings and lines of `judge_card:` and one row of `judge_card.csv`
(computed by `speceval.analysis.tables.judge_card`).

The lines' defaults, and why (docs/judging-and-statistics.md#the-judge-card quotes them):

* `min_canary_accuracy` 0.8: the spec's examples are written as clear cases; a judge that misses one in five of them
  is wrong on the easy answers, so its rates on the hard ones are not worth quoting.
* `min_retest_agreement` 0.9: the same request sent twice should get the same verdict; below 0.9, one verdict in
  ten is noise before anything about the answer is measured.
* `max_wording_excess` 0.1: rewording a statement without changing its meaning flips up to 9.1% of an LLM judge's
  verdicts in the literature (arXiv 2605.06161); more than 10 points above the judge's own retest noise means the
  verdicts follow the wording, not the rule.
* `min_human_kappa` 0.4: Landis & Koch's "moderate" agreement; below it the judge agrees with people little beyond
  chance.

A line is checked only where its measure exists (a check without data is listed as `not measured`, never passed
silently: see `JudgeCardRow.unmeasured`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from speceval.analysis.statistics.columns import Columns, Estimate, FlatRecord

DEFAULT_MIN_CANARY_ACCURACY = 0.8
DEFAULT_MIN_RETEST_AGREEMENT = 0.9
DEFAULT_MAX_WORDING_EXCESS = 0.1
DEFAULT_MIN_HUMAN_KAPPA = 0.4


class JudgeCardLines(BaseModel):
    """The lines a judge entry's card is checked against (`judge_card:` keys; report flags `--card-*`)."""

    model_config = ConfigDict(extra="forbid")

    min_canary_accuracy: float = Field(
        default=DEFAULT_MIN_CANARY_ACCURACY, ge=0, le=2, description="the share of the spec's examples judged right"
    )
    min_retest_agreement: float = Field(
        default=DEFAULT_MIN_RETEST_AGREEMENT,
        ge=0,
        le=2,
        description="the share of re-sent requests with the same verdict",
    )
    max_wording_excess: float = Field(
        default=DEFAULT_MAX_WORDING_EXCESS,
        ge=-1,
        le=1,
        description="the wording flip rate minus the retest flip rate, at most",
    )
    min_human_kappa: float = Field(
        default=DEFAULT_MIN_HUMAN_KAPPA, ge=-1, le=2, description="Cohen's kappa against human labels, at least"
    )
    min_human_accuracy: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="the judge's human accuracy, at least: weighed by the label sheet's design where it is beside the "
        "labels, else the labelled answers' share (none: not checked; the only human line a Likert judge can be held "
        "to, which has no kappa)",
    )


class JudgeCardSettings(JudgeCardLines):
    """`judge_card:` in an experiment file: what the card re-sends, and its lines.

    Without the block the card is still written from what costs nothing more (canaries, labels, the panel, the
    rankings), and nothing is kept out of the headline unless `min_canary_accuracy` is set at the top level."""

    retest: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="the share of each judge's answers re-sent unchanged (the card's sample; 0: no retest)",
    )
    paraphrases: int = Field(
        default=0,
        ge=0,
        le=10,
        strict=True,
        description="rewordings of each statement; the card's sample is re-judged under each",
    )
    paraphraser: str | None = Field(
        default=None, description="the model that rewords the statements (default: the first judge's model)"
    )
    paraphraser_org: str | None = None
    paraphrases_file: Path | None = Field(
        default=None,
        description="your own rewordings instead: a JSON object statement id → list of `paraphrases` texts "
        "(relative to the experiment file)",
    )
    seed: int = Field(default=44, description="draws the card's sample")

    @model_validator(mode="after")
    def _wordings_need_a_sample(self) -> JudgeCardSettings:
        if self.paraphrases and not self.retest:
            raise ValueError("paraphrases re-judge the card's sample, and retest 0 draws none: set retest above 0")
        if self.paraphrases_file is not None and not self.paraphrases:
            raise ValueError("paraphrases_file is given but paraphrases is 0: say how many wordings it holds")
        return self

    def lines(self) -> JudgeCardLines:
        """The lines alone."""
        return JudgeCardLines.model_validate(self.model_dump(include=set(JudgeCardLines.model_fields)))


class JudgeCardRow(FlatRecord):
    """One judge entry (spec × judge name, which is model × scope × mode) on its card; every rate with its 95%
    interval and the registry's method text (each written as its own columns, named by `Columns`)."""

    spec: str
    judge: str
    canary_judged: int = 0
    canary: Annotated[Estimate, Columns("canary_accuracy", "canary")] = Estimate()
    canary_shared_from: str | None = Field(
        default=None, description="the judge entry whose canary verdicts these are (same model and mode)"
    )
    human_labelled: int = 0
    human_agree: int = Field(default=0, description="labelled answers the judge agrees with: the sample's k of n")
    human_accuracy: Annotated[Estimate, Columns("human_accuracy")] = Estimate()
    human_accuracy_weighted: bool | None = Field(
        default=None,
        description="True: human_accuracy is weighed by the label sheet's design (each statement at N_h/N, the "
        "judge's accuracy over the answers it judged); False: no design, the labelled sample's share",
    )
    human_accuracy_note: str | None = Field(
        default=None, description="no design (the sample's share); or the statements with no label, left out"
    )
    human_kappa: Annotated[Estimate, Columns("human_kappa")] = Estimate()
    human_kappa_informative: bool | None = Field(
        default=None, description="False where the rarer verdict is under 10%: read human_accuracy instead of kappa"
    )
    human_kappa_note: str | None = Field(
        default=None, description="why a judge with human labels has no kappa (a Likert judge's ratings)"
    )
    retest_items: int = 0
    retest: Annotated[Estimate, Columns("retest_agreement", "retest")] = Estimate()
    retest_note: str | None = Field(default=None, description="what the retest measures at the judge's temperature")
    wordings: int = 0
    wording_flip: Annotated[Estimate, Columns("wording_flip_rate", "wording_flip")] = Estimate()
    wording_excess: Annotated[Estimate, Columns("wording_flip_excess", "wording_excess")] = Estimate()
    self_preference: Annotated[Estimate, Columns("self_preference")] = Estimate()
    position: Annotated[Estimate, Columns("position_consistency", "position", then="position_compared")] = Estimate()
    position_compared: int = 0
    passes: bool | None = Field(description="None: no line was checked (no `judge_card:` and no minimum)")
    failed_checks: list[str] = Field(default_factory=list)
    unmeasured: list[str] = Field(default_factory=list, description="lines set whose measure has no data here")
