"""`ppi.csv`: a judge's compliance rate corrected by human labels, per spec, judge, candidate and variation, by the
label sheet's stratified design (`speceval.analysis.statistics.ppi`), with the Rogan–Gladen bias-corrected rate
beside it.

PPI++ (the power-tuned weight) is not reported: on the label sheet's own draws it covered 0.78-0.92, and 0.42 at a
0.97 rate with 20 labels (its weight goes to 0 when every label is compliant and the interval to [1, 1]).
`speceval.analysis.statistics.ppi.ppi_plus_plus` stays for users who want it on their own data.

A Likert judge has no row. PPI corrects the rate the judge reports with the labels' disagreement with it; a Likert
judge reports a mean rating, and the labels say yes or no, not a rating, so nothing here corrects its mean. A row
would have to cut its ratings into a yes/no first (where would a 3 go?) and print a "judge rate" the judge never
reported, corrected to the people's rate, which the labels alone and a yes/no judge's row estimate already. Its
labels still count where they belong: an answer it judged that a yes/no judge judged too is that judge's labelled
answer (a label names the answer, not the judge), weighed by that judge's own N_h/n_h.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.statistics.clustered import BOOTSTRAP_DRAWS, BOOTSTRAP_SEED
from speceval.analysis.statistics.ppi import stratified_ppi
from speceval.analysis.statistics.registry import method
from speceval.analysis.statistics.rogan_gladen import rogan_gladen
from speceval.analysis.tables.judge_quality import UNLABELLED, LabelTally
from speceval.defaults import Mode


class PpiRate(BaseModel):
    """A judge's compliance rate corrected by human labels (95%), two ways."""

    spec: str
    judge: str
    candidate: str
    variation: str
    labelled: int = Field(description="judged verdicts with a human label")
    unlabelled: int
    judge_rate: float | None
    ppi_rate: float | None = Field(description="stratified PPI, clipped to [0, 1]")
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    ppi_note: str | None = Field(default=None, description="why there is no PPI rate or interval, when there is none")
    bias_corrected_rate: float | None = Field(description="Rogan–Gladen: (p + q0 - 1)/(q0 + q1 - 1), clipped")
    bias_corrected_low: float | None
    bias_corrected_high: float | None
    bias_corrected_method: str
    bias_corrected_note: str | None = Field(default=None, description="why it is undefined, when it is")


def ppi_rates(rows: list[ComplianceRow] | LabelTally, labels: dict[str, bool] | None = None) -> list[PpiRate]:
    """Per spec, judge, candidate and variation of a yes/no judge (the judge's verdicts as f, the labels as y; from
    rows and labels, or a `LabelTally`)."""
    tally = rows if isinstance(rows, LabelTally) else LabelTally.of_rows(rows, labels or {})
    results = []
    ppi_method = method("ppi")
    corrected_method = method("bias_corrected_rate", draws=BOOTSTRAP_DRAWS, seed=BOOTSTRAP_SEED)
    for (spec, judge, candidate, variation), group in tally.group_arrays():
        if group.mode != Mode.BINARY:
            continue  # a rating is no rate to correct (the module's docstring)
        f = group.verdicts.astype(float)
        labelled = group.labels != UNLABELLED
        y = group.labels.astype(float)
        ppi = stratified_ppi(f, y, labelled, group.clusters, group.strata, group.guess)
        corrected = rogan_gladen(f, y, labelled, group.clusters, group.strata)
        results.append(
            PpiRate(
                spec=spec,
                judge=judge,
                candidate=candidate,
                variation=variation,
                labelled=int(labelled.sum()),
                unlabelled=int((~labelled).sum()),
                judge_rate=float(f.mean()) if len(f) else None,
                ppi_rate=ppi.rate,
                ci_low=ppi.ci_low,
                ci_high=ppi.ci_high,
                ci_method=ppi_method,
                ppi_note=ppi.note,
                bias_corrected_rate=corrected.rate,
                bias_corrected_low=corrected.ci_low,
                bias_corrected_high=corrected.ci_high,
                bias_corrected_method=corrected_method,
                bias_corrected_note=corrected.note,
            )
        )
    return results
