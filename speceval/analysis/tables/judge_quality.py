"""A judge that is itself measured: leniency against the other judges, agreement with human labels, and
prediction-powered rates (PPI) that correct a judge's rate with a few human labels.

* Leniency (per spec, judge, candidate and variation): on the answers every judge judged, the judge's rate minus
  the mean of all judges' rates, with a paired interval clustered by input (stratified by statement: (K-1)/K of the
  MOVER interval of the judge against the other judges' mean, `speceval.analysis.statistics.paired`), and whether
  judge and candidate come from the same provider (self-preference, arXiv 2404.13076).
* Human agreement: accuracy and Cohen's kappa of a judge against human labels, on labelled answers it judged. A
  Likert judge's rating is read against the label by its canaries' rule (`speceval.judging.canaries.likert_agrees`:
  4-5 agrees with yes, 1-2 with no, 3 with neither); it has an accuracy but no kappa (`LIKERT_KAPPA_NOTE`) and no
  prediction-powered rate (`speceval.analysis.tables.ppi_table`).
* `ppi_mean`, `ppi_plus_plus` (classic PPI and PPI++ of a mean for users' own data) are in
  `speceval.analysis.statistics.ppi`; the report's `ppi.csv` follows the label sheet's design instead
  (`speceval.analysis.tables.ppi_table`).
* `LabelTally`: what agreement and PPI need of every judged verdict, as arrays.

The labels themselves (the sheet people fill in, the item id a label names, a filled sheet read back) are
`speceval.analysis.tables.human_labels`.
"""

from __future__ import annotations

import hashlib
from array import array
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
from pydantic import BaseModel, Field

from speceval.analysis.reading.column_rows import as_columns
from speceval.analysis.reading.columns import NO_VERDICT, VerdictColumns, grouped, local_clusters
from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.statistics.clustered import rate_interval
from speceval.analysis.statistics.codes import dense
from speceval.analysis.statistics.columns import Estimate
from speceval.analysis.statistics.paired import mover_difference
from speceval.analysis.statistics.ppi import design_weighted_share
from speceval.analysis.statistics.registry import LENIENCY, method
from speceval.analysis.tables.human_labels import item_id
from speceval.analysis.tables.panel import PANEL
from speceval.analysis.tables.rates import Agreement, judge_agreement
from speceval.defaults import Mode, model_family
from speceval.judging.canaries import LIKERT_RULE, likert_agrees

BINARY_RULE = "the judge's compliant or not is the label's yes or no"
"""How a yes/no judge's verdict is read against a label (`HumanAgreement.rule`)."""
LIKERT_KAPPA_NOTE = (
    "no kappa for a Likert judge: Cohen's kappa needs both raters to answer the same categories, and a 3 is one "
    "no label can give (dropping the 3s would score the judge on its easy answers; a third category only the judge "
    "uses makes chance agreement depend on how often it hedges, not comparable with a yes/no judge's kappa)"
)
"""Why a Likert judge's agreement with people has an accuracy but no kappa (the card's and the table's note)."""


def agreement_interval(
    agree: np.ndarray, inputs: np.ndarray, statements: np.ndarray
) -> tuple[float, float, str] | None:
    """95% interval of the share of labelled answers that agree with their labels (`agree`, 0/1 each): Wilson where
    every input has one labelled answer, else clustered by input and stratified by statement (`inputs`: input
    digests, `statements`: statement codes), since the labelled answers of one input (its candidates, runs, turns)
    are not independent (the coverage matrix's rate-pooled rows: Wilson over every one covered 0.873 at 30 inputs x
    5 runs, Beta(1.9, 0.1))."""
    clusters = inputs.tolist()
    return rate_interval(agree.astype(float).tolist(), clusters, dict(zip(clusters, statements.tolist(), strict=True)))


def tally_verdict(row: ComplianceRow) -> int | None:
    """What a `LabelTally` keeps of a judged verdict: a yes/no judge's 1 or 0, a Likert judge's rating 1-5; None
    for a verdict a label is not compared with (a panel's, a category, or none judged)."""
    if row.judge == PANEL or row.outcome != "judged":
        return None
    if row.mode == Mode.LIKERT:
        return None if row.rating is None else int(row.rating)
    return None if row.compliant is None else int(row.compliant)


class Leniency(BaseModel):
    """One judge's rate minus the judges' mean rate on the answers every judge judged."""

    spec: str
    judge: str
    candidate: str
    variation: str
    items: int
    rate: float
    mean_rate: float
    delta: float
    ci_low: float | None
    ci_high: float | None
    same_provider: bool | None
    ci_method: str = LENIENCY


def leniency(rows: list[ComplianceRow] | VerdictColumns) -> list[Leniency]:
    """Per (spec, candidate, variation) with two or more judges: each judge's delta with a paired interval."""
    c = as_columns(rows)
    judged = c.is_outcome("judged") & (c.compliant != NO_VERDICT)
    if PANEL in c.names("judge"):
        judged &= c.fact("judge") != c.code_of("judge", PANEL)
    results = []
    for (spec, candidate, variation), members in grouped(c, np.flatnonzero(judged), "spec", "model", "variation"):
        judges_here = grouped(c, members, "judge")
        if len(judges_here) < 2:
            continue  # one judge: no leniency (and no answer numbering to pay for)
        item = dense(c.runs(members), c.fact("statement_id", members), c.input[members], c.output[members])
        by_judge: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for (judge,), rows_of in judges_here:
            of = item[np.searchsorted(members, rows_of)]
            _, last_reversed = np.unique(of[::-1], return_index=True)  # one verdict per item: the last
            last = len(of) - 1 - last_reversed
            by_judge[judge] = of[last], rows_of[last]
        judges = sorted(by_judge)
        if len(judges) < 2:
            continue
        shared = by_judge[judges[0]][0]
        for judge in judges[1:]:
            shared = np.intersect1d(shared, by_judge[judge][0])
        if not len(shared):
            continue
        verdicts = np.array(
            [(c.compliant[by_judge[j][1][np.isin(by_judge[j][0], shared)]] == 1).astype(float) for j in judges]
        )
        means = verdicts.mean(axis=0)
        clusters, strata = local_clusters(c, by_judge[judges[0]][1][np.isin(by_judge[judges[0]][0], shared)])
        count, others = len(judges), (verdicts.sum(axis=0) - verdicts) / (len(judges) - 1)
        for index, judge in enumerate(judges):
            # The judge minus all judges' mean is (K-1)/K of the judge minus the others' mean: the paired MOVER
            # interval of the latter (two rates on the same answers), scaled, never [0, 0] when all agree.
            paired = mover_difference(
                verdicts[index],
                clusters,
                others[index],
                clusters,
                int(clusters.max()) + 1,
                strata,
                scale=(count - 1) / count,
            )
            results.append(
                Leniency(
                    spec=spec,
                    judge=judge,
                    candidate=candidate,
                    variation=variation,
                    items=len(shared),
                    rate=float(verdicts[index].mean()),
                    mean_rate=float(means.mean()),
                    delta=float(verdicts[index].mean() - means.mean()),
                    ci_low=paired.ci_low,
                    ci_high=paired.ci_high,
                    same_provider=_same_provider(judge, candidate),
                )
            )
    return results


def _same_provider(judge: str, candidate: str) -> bool | None:
    judge_family, candidate_family = model_family(judge), model_family(candidate)
    if judge_family is None or candidate_family is None:
        return None  # a model name no built-in family claims: unknown, not "different"
    return judge_family == candidate_family


class HumanAgreement(BaseModel):
    """A judge against human labels, on the labelled answers it judged (`candidate` 'all' pools candidates)."""

    spec: str
    judge: str
    candidate: str
    labelled: int
    agree: int
    accuracy: float | None
    kappa: float | None
    accuracy_ci_low: float | None = None
    accuracy_ci_high: float | None = None
    accuracy_ci_method: str | None = None
    kappa_ci_low: float | None = None
    kappa_ci_high: float | None = None
    kappa_ci_method: str | None = Field(default=None, description="the judge card's: a cluster bootstrap over inputs")
    rule: str = Field(default=BINARY_RULE, description="how the judge's verdict is read against a yes/no label")
    kappa_note: str | None = Field(default=None, description="why there is no kappa, when there is none")
    weighted_accuracy: float | None = Field(
        default=None,
        description="design-weighted: each statement's share at its weight N_h/N (the judge's accuracy over the "
        "answers it judged; the judge card's and its gate's where the sheet's design is known); none without a design",
    )
    weighted_ci_low: float | None = None
    weighted_ci_high: float | None = None
    weighted_ci_method: str | None = None
    weighted_note: str | None = Field(
        default=None, description="why there is no weighted accuracy, or the statements it leaves out"
    )


UNLABELLED = -1

TallyKey = tuple[str, str, str, str]
"""(spec, judge, candidate, variation) of a group of verdicts in a `LabelTally`."""


def input_digest(spec: str, statement_id: str, text: str) -> int:
    """An input (the cluster of its verdicts) as 8 bytes: the tally keeps no text per input."""
    key = "\x00".join([spec, statement_id, text]).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little", signed=True)


class TallyGroup(BaseModel):
    """One group's verdicts as arrays: verdict (1/0, or a Likert judge's rating 1-5: see `mode`), label (1, 0 or
    `UNLABELLED`), input and statement codes."""

    model_config = {"arbitrary_types_allowed": True}

    verdicts: np.ndarray
    labels: np.ndarray
    clusters: np.ndarray
    strata: np.ndarray
    guess: np.ndarray | None = None
    """Per stratum code: the judge's error share the sheet's design expected there (None: not every statement
    has one); stratified PPI's prior's covariate."""
    mode: str = Mode.BINARY
    """The judge's mode: binary (verdicts 1/0, a rate) or likert (ratings: no rate for PPI to correct)."""
    inputs: np.ndarray | None = None
    """Per verdict: its input's `input_digest`, the same in every group (`clusters` are this group's own codes)."""
    statements: np.ndarray | None = None
    """Per verdict: its (spec, statement)'s code, the same in every group."""

    def labelled_clusters(self, labelled: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(input digests, statement codes) of the verdicts where `labelled`: the clusters and strata of an
        agreement's interval pooled over groups (`agreement_interval`)."""
        if self.inputs is None or self.statements is None:
            raise ValueError("a TallyGroup made without its inputs and statements (LabelTally.group_arrays makes both)")
        return self.inputs[labelled], self.statements[labelled]

    def agreement(self, labelled: np.ndarray) -> np.ndarray:
        """Per verdict where `labelled` (a mask or indices): whether it agrees with the person's label (a yes/no:
        the same; a rating: `likert_agrees`, the canaries' rule)."""
        verdicts, labels = self.verdicts[labelled], self.labels[labelled]
        if self.mode == Mode.LIKERT:
            pairs = zip(verdicts.tolist(), labels.tolist(), strict=True)
            return np.array([likert_agrees(rating, bool(label)) for rating, label in pairs], dtype=bool)
        return np.asarray(verdicts == labels, dtype=bool)


class LabelTally:
    """Per (spec, judge, candidate, variation): its judged verdicts in file order, each as its verdict, its human
    label, its input (an 8-byte digest) and its statement (a code): what agreement and PPI need, without text."""

    def __init__(self, guides: dict[tuple[str, str], float] | None = None, designed: bool = False) -> None:
        self.designed = designed
        """Whether the labels came with their sheet's design (`<sheet>.design.json`): human accuracy is then weighed
        by it (`pooled_accuracy`), else the labelled sample's share."""
        self.groups: dict[TallyKey, tuple[array[int], array[int], array[int], array[int]]] = {}
        self.statements: dict[tuple[str, str], int] = {}
        self.guides = guides or {}
        """Per (spec, statement): the judge's error share the label sheet's design expected (Neyman's spreads)."""
        self.modes: dict[TallyKey, str] = {}
        """Per group: its judge's mode (a judge entry's name includes its mode, so a group has one)."""

    def add(
        self, key: TallyKey, verdict: int, label: bool | None, statement_id: str, digest: int, mode: str = Mode.BINARY
    ) -> None:
        """One verdict (`tally_verdict`: 1/0, or a rating under mode likert); `digest` is its input's
        `input_digest`."""
        verdicts, labels, inputs, statements = self.groups.setdefault(
            key, (array("b"), array("b"), array("q"), array("i"))
        )
        if self.modes.setdefault(key, mode) != mode:
            raise ValueError(f"judge {key[1]!r} has verdicts of modes {self.modes[key]} and {mode}")
        verdicts.append(verdict)
        labels.append(UNLABELLED if label is None else int(label))
        inputs.append(digest)
        statements.append(self.statements.setdefault((key[0], statement_id), len(self.statements)))

    @classmethod
    def of_rows(cls, rows: Iterable[ComplianceRow], labels: dict[str, bool]) -> LabelTally:
        tally = cls()
        for row in rows:
            verdict = tally_verdict(row)
            if verdict is not None:
                tally.add(
                    (row.spec, row.judge, row.model, row.variation),
                    verdict,
                    labels.get(item_id(row)) if labels else None,  # (no labels: no answer's id to hash)
                    row.statement_id,
                    input_digest(row.spec, row.statement_id, row.input),
                    row.mode,
                )
        return tally

    def labelled_on(self, spec: str, judge: str, statement_id: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(verdicts, human labels, inputs) of `judge`'s labelled verdicts on one statement, candidates and
        variations pooled (spec health's agreement with people, statement by statement); `inputs` are the answers'
        input digests, the clusters of its interval (runs and candidates of one input are not independent). A yes/no
        judge's only: spec health compares verdicts, and a rating is none."""
        code = self.statements.get((spec, statement_id))
        verdicts, human, inputs = [], [], []
        for key, (f, y, digests, statements) in sorted(self.groups.items()):
            if code is None or key[:2] != (spec, judge) or self.modes.get(key, Mode.BINARY) != Mode.BINARY:
                continue
            labels = np.frombuffer(y, dtype=np.int8)
            mine = (np.frombuffer(statements, dtype=np.int32) == code) & (labels != UNLABELLED)
            verdicts.append(np.frombuffer(f, dtype=np.int8)[mine])
            human.append(labels[mine])
            inputs.append(np.frombuffer(digests, dtype=np.int64)[mine])
        if not verdicts:
            return np.zeros(0, dtype=np.int8), np.zeros(0, dtype=np.int8), np.zeros(0, dtype=np.int64)
        return np.concatenate(verdicts), np.concatenate(human), np.concatenate(inputs)

    def guess_of(self, codes: np.ndarray) -> np.ndarray | None:
        """Per statement code of `codes` (the tally's own numbering): the judge's error share the design expected
        there; None unless every one has one (a Neyman sheet's)."""
        named = {code: key for key, code in self.statements.items()}
        guess = [self.guides.get(named[int(code)]) for code in codes]
        return None if not guess or None in guess else np.asarray(guess, dtype=float)

    def arrays(self) -> list[tuple[TallyKey, np.ndarray, np.ndarray]]:
        """(key, verdicts, labels) per group, in sorted order of the keys."""
        return [(key, group.verdicts, group.labels) for key, group in self.group_arrays()]

    def group_arrays(self) -> list[tuple[TallyKey, TallyGroup]]:
        """Every group's arrays, in sorted order of the keys; inputs and statements numbered 0..G-1 within it."""
        found = []
        named = {code: key for key, code in self.statements.items()}
        for key, (f, y, inputs, statements) in sorted(self.groups.items()):
            _, clusters = np.unique(np.frombuffer(inputs, dtype=np.int64), return_inverse=True)
            codes, strata = np.unique(np.frombuffer(statements, dtype=np.int32), return_inverse=True)
            guess = [self.guides.get(named[int(code)]) for code in codes]
            found.append(
                (
                    key,
                    TallyGroup(
                        verdicts=np.frombuffer(f, dtype=np.int8),
                        labels=np.frombuffer(y, dtype=np.int8),
                        clusters=clusters.reshape(-1),
                        strata=strata.reshape(-1),
                        guess=None if None in guess else np.asarray(guess, dtype=float),
                        mode=self.modes.get(key, Mode.BINARY),
                        inputs=np.frombuffer(inputs, dtype=np.int64),
                        statements=np.frombuffer(statements, dtype=np.int32),
                    ),
                )
            )
        return found


UNWEIGHTED_NOTE = (
    "no label-sheet design beside the labels (a sheet made before designs were written, or labels not from a sheet): "
    "the share over the labelled answers as drawn, unweighted"
)
"""What a human accuracy says when no design weighs it: the sample's share, which is the judge's only where the
labels were drawn in proportion to its answers."""


class PooledAccuracy(BaseModel):
    """A judge's agreement with the labels over several groups (candidates, variations): the labelled sample's k of n
    and its share, and the accuracy to report: the design-weighted one where the tally has a design, else the
    sample's."""

    labelled: int
    agree: int
    sample: Estimate = Field(description="the unweighted share over the labelled answers (`agreement_interval`)")
    accuracy: Estimate = Field(description="design-weighted where a design exists (`design_weighted_share`)")
    weighted: bool = Field(description="whether `accuracy` is weighed by the sheet's design")
    note: str | None = Field(default=None, description="no design; or statements left out of the weighted one")


def pooled_accuracy(tally: LabelTally, parts: Sequence[TallyGroup]) -> PooledAccuracy | None:
    """The agreement of one judge's `parts` (its groups, pooled) with the labels; None without a labelled verdict.
    With a design, Σ_h (N_h/N)·a_h over the statements with a label (`design_weighted_share`: N_h the judge's
    verdicts of statement h, labelled or not, in the groups that hold a label: the candidates and variations the
    sheet drew from, the one of an aimed sheet; clustered by input); a statement with verdicts and no label is left
    out and the note says so."""
    agreements, inputs, statements, labelled_parts = [], [], [], []
    for group in parts:
        labelled = group.labels != UNLABELLED
        if not labelled.any():
            continue  # a candidate or variation the sheet did not draw from (an aimed sheet): not its population
        if group.inputs is None or group.statements is None:
            raise ValueError("a TallyGroup made without its inputs and statements (LabelTally.group_arrays makes both)")
        agree = np.zeros(len(labelled), dtype=bool)
        agree[labelled] = group.agreement(labelled)
        agreements.append(agree)
        labelled_parts.append(labelled)
        inputs.append(group.inputs)
        statements.append(group.statements)
    if not agreements:
        return None
    agree, labelled = np.concatenate(agreements), np.concatenate(labelled_parts)
    n = int(labelled.sum())  # > 0: every group kept holds a label
    digests, codes = np.concatenate(inputs), np.concatenate(statements)
    sample = Estimate.of(
        float(agree[labelled].mean()), agreement_interval(agree[labelled], digests[labelled], codes[labelled])
    )
    unweighted = PooledAccuracy(
        labelled=n, agree=int(agree[labelled].sum()), sample=sample, accuracy=sample, weighted=False
    )
    if not tally.designed:
        return unweighted.model_copy(update={"note": UNWEIGHTED_NOTE})
    present, strata = np.unique(codes, return_inverse=True)
    _, clusters = np.unique(digests, return_inverse=True)
    found = design_weighted_share(agree, labelled, clusters.reshape(-1), strata.reshape(-1), tally.guess_of(present))
    if found.share is None:  # under 2 labels: nothing to weigh; the sample's share, and why
        return unweighted.model_copy(update={"note": f"{found.note}: the labelled sample's share, unweighted"})
    note = found.note
    if found.unlabelled_statements:
        note = (
            f"over the statements with a label ({found.statements}; {found.verdicts} verdicts); statements the "
            f"judge judged with none ({found.unlabelled_statements}; {found.unlabelled_verdicts} verdicts) cannot be "
            "estimated: not in it"
        ) + (f"; {note}" if note else "")
    interval = (
        None
        if found.ci_low is None or found.ci_high is None
        else (found.ci_low, found.ci_high, method("human_accuracy_weighted"))
    )
    accuracy = Estimate.of(found.share, interval)
    return unweighted.model_copy(update={"accuracy": accuracy, "weighted": True, "note": note})


def human_agreement(
    rows: list[ComplianceRow] | LabelTally, labels: dict[str, bool] | None = None
) -> list[HumanAgreement]:
    """Per spec and judge, pooled over candidates and per candidate (from rows and labels, or a `LabelTally`): the
    share of labelled answers that agree (`agreement_interval`), the design-weighted one as the card's (where the
    tally has a design: `pooled_accuracy`), and Cohen's kappa for a yes/no judge."""
    tally = rows if isinstance(rows, LabelTally) else LabelTally.of_rows(rows, labels or {})
    parts: dict[tuple[str, str, str], list[TallyGroup]] = defaultdict(list)
    judged: dict[tuple[str, str, str], list[tuple[str, str, TallyGroup, np.ndarray]]] = defaultdict(list)
    for (spec, judge, model, variation), group in tally.group_arrays():  # variations pooled
        for candidate in ("all", model):
            parts[(spec, judge, candidate)].append(group)
            judged[(spec, judge, candidate)].append(
                (model, variation, group, np.flatnonzero(group.labels != UNLABELLED))
            )
    found = []
    for (s, j, c), groups in sorted(parts.items()):
        pooled = pooled_accuracy(tally, groups)
        if pooled is None:
            continue
        likert = groups[0].mode == Mode.LIKERT
        kappa = None if likert else kappa_with_people(judged[(s, j, c)])  # the card's, with its interval
        found.append(
            HumanAgreement(
                spec=s,
                judge=j,
                candidate=c,
                labelled=pooled.labelled,
                agree=pooled.agree,
                accuracy=pooled.sample.value,
                kappa=None if kappa is None else kappa.kappa,
                accuracy_ci_low=pooled.sample.ci_low,
                accuracy_ci_high=pooled.sample.ci_high,
                accuracy_ci_method=pooled.sample.ci_method,
                kappa_ci_low=None if kappa is None else kappa.ci_low,
                kappa_ci_high=None if kappa is None else kappa.ci_high,
                kappa_ci_method=None if kappa is None else kappa.ci_method,
                rule=LIKERT_RULE if likert else BINARY_RULE,
                kappa_note=LIKERT_KAPPA_NOTE if likert else None,
                weighted_accuracy=pooled.accuracy.value if pooled.weighted else None,
                weighted_ci_low=pooled.accuracy.ci_low if pooled.weighted else None,
                weighted_ci_high=pooled.accuracy.ci_high if pooled.weighted else None,
                weighted_ci_method=pooled.accuracy.ci_method if pooled.weighted else None,
                weighted_note=pooled.note,
            )
        )
    return found


def kappa_with_people(labelled: Iterable[tuple[str, str, TallyGroup, np.ndarray]]) -> Agreement | None:
    """Cohen's kappa of a yes/no judge against the people (the person the second rater), with the agreement
    table's cluster bootstrap by input: `labelled` holds (candidate, variation, a group of the judge's verdicts,
    the indices of its labelled ones). Each labelled answer is its own item (a run's, a turn's), and an input is one
    cluster across candidates, variations and runs (their answers to it are not independent; the card clustered
    each candidate's apart)."""
    rows = []
    for candidate, variation, group, indices in labelled:
        inputs, statements = group.labelled_clusters(indices)
        for index, digest, statement in zip(indices.tolist(), inputs.tolist(), statements.tolist(), strict=True):
            answer = f"{candidate}\x00{variation}\x00{index}"
            for rater, value in (("judge", group.verdicts[index]), ("human", group.labels[index])):
                rows.append(_rater_row(rater, str(statement), str(digest), answer, bool(value)))
    return next(iter(judge_agreement(rows)), None) if rows else None


def _rater_row(rater: str, statement: str, cluster: str, answer: str, compliant: bool) -> ComplianceRow:
    return ComplianceRow(
        spec="labels",
        judge=rater,
        model="labels",
        statement_id=statement,
        mode="binary",
        prompt_version="labels",
        input=cluster,
        output=answer,
        outcome="judged",
        compliant=compliant,
        confidence=None,
        rating=None,
        source="labels",
    )
