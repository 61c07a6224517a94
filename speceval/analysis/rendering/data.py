"""What the report shows (`ReportData`), computed from every verdict and run manifest under some folders.

The page (`speceval.analysis.rendering.html.page`) and `summary.md` (`speceval.analysis.rendering.markdown.summary`)
render it; `speceval.analysis.rendering.report` writes them and the CSVs. This module sits below all three, so none
of them imports another to get the data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, TypedDict, Unpack

import numpy as np
from pydantic import BaseModel, Field

from speceval.analysis.reading.card_verdicts import card_verdicts, paraphrase_sets
from speceval.analysis.reading.checks import distinct_roots
from speceval.analysis.reading.column_rows import rows_of
from speceval.analysis.reading.declared_categories import declared_categories
from speceval.analysis.reading.fold import fold_verdicts
from speceval.analysis.reading.pairs import pair_inputs
from speceval.analysis.reading.rows import DEFAULT_VARIATION, UNKNOWN
from speceval.analysis.reading.skipped_answers import skipped_answers, with_never_judged, with_skipped
from speceval.analysis.rendering.samples.sample_record import SampleRecord
from speceval.analysis.rendering.samples.samples import ranking_samples, sample_records
from speceval.analysis.rendering.sources import JUDGE_KINDS, manifest_sources, relative, verdict_sources
from speceval.analysis.tables.card_records import JudgeCardLines, JudgeCardRow
from speceval.analysis.tables.categories import (
    MODE as CATEGORIES,
)
from speceval.analysis.tables.categories import (
    CategoryAgreement,
    CategoryDifference,
    CategoryShare,
    category_agreement,
    category_differences,
    category_distribution,
)
from speceval.analysis.tables.elicitation import Elicitation, elicitation
from speceval.analysis.tables.flip_survival import FlipSurvival, flip_survival
from speceval.analysis.tables.flips import DEFAULT_LIKERT_DROP, Flip, Survivors, flips, survivors
from speceval.analysis.tables.health import generation_failures, statement_health
from speceval.analysis.tables.health_records import Health, HealthThresholds
from speceval.analysis.tables.inputs_report import InputsRow, KeptInput, inputs_tables
from speceval.analysis.tables.judge_card import card_lines, judge_card
from speceval.analysis.tables.judge_checks import JudgeAccuracy, JudgeCheck, judge_accuracy, judge_checks
from speceval.analysis.tables.judge_quality import HumanAgreement, LabelTally, Leniency, human_agreement, leniency
from speceval.analysis.tables.keys import DataKinds, Source
from speceval.analysis.tables.labelled import labelled_tally
from speceval.analysis.tables.metrics import MetricRow, metric_table
from speceval.analysis.tables.panel import PANEL, PanelCounts, panel_verdicts
from speceval.analysis.tables.ppi_table import PpiRate, ppi_rates
from speceval.analysis.tables.rankings import (
    Consistency,
    Strength,
    WinRate,
    judge_position_consistency,
    position_consistency,
    strengths,
    win_rates,
)
from speceval.analysis.tables.rates import Agreement, ComplianceRate, compliance_rates, judge_agreement
from speceval.analysis.tables.tension import pair_compliance
from speceval.analysis.tables.turns import TurnRate, turn_rates
from speceval.analysis.tables.variations import (
    Breakdown,
    PairedComparison,
    VariationStatistics,
    breakdown,
    paired_comparisons,
    variation_statistics,
)
from speceval.batch.costs import PriceTable
from speceval.batch.manifest import RunManifest
from speceval.defaults import Mode
from speceval.errors import InputError
from speceval.judging.card_files import Paraphrases
from speceval.metric_spec import MetricSpec
from speceval.operations.costs import RunCost, run_costs
from speceval.operations.run_stages import ASSEMBLED, INPUTS_ROUNDS, KIND_STAGES, ROUND_KIND, ROUNDS, stage_of
from speceval.operations.runs import find_run_dirs


class SentSettings(BaseModel):
    """The sampling settings one stage's requests to one model actually carried (from each run's `run.json`)."""

    stage: str
    model: str
    variation: str
    sent: str = Field(description="setting = value, or 'not sent: why' for one asked for but left out")
    role: str = Field(
        default="",
        description="what the model did: candidate, simulated user or judge (a model "
        "can be both candidate and simulated user)",
    )


class ReportCost(RunCost):
    """A run's spend as the report's `costs.csv` keys it: the spec, and the model as the judge (a judge run) or
    the candidate (a generation run); `model` stays the model the run called, whatever its role."""

    spec: str
    judge: str | None = None
    candidate: str | None = None
    variation: str = DEFAULT_VARIATION


class StageCounts(BaseModel):
    """Requests of one stage (generation, compliance, ranking) and their final outcomes, from the run manifests."""

    stage: str
    runs: int
    requests: int
    outcomes: dict[str, int]
    cost_usd: float | None = Field(description="None when a price is unknown for any run of the stage")


class ReportData(BaseModel):
    """Everything the report shows; the HTML page and summary.md are both rendered from it."""

    samples: list[SampleRecord] = Field(
        default_factory=list, description="verdicts embedded in the page (a bounded seeded stratified sample)"
    )
    sample_total: int = Field(default=0, description="verdicts in all (the judges' and the panel's)")
    unknown_statement_types: list[str] = Field(
        default_factory=list, description="judge run folders whose statements' type and authority are unknown"
    )
    variations: list[VariationStatistics]
    compliance: list[ComplianceRate]
    per_statement: list[ComplianceRate]
    by_type: list[Breakdown]
    by_authority: list[Breakdown]
    paired: list[PairedComparison]
    panel: list[PanelCounts]
    win_rates: list[WinRate]
    bradley_terry: list[Strength]
    position_consistency: list[Consistency]
    agreement: list[Agreement]
    costs: list[ReportCost]
    stages: list[StageCounts]
    settings: dict[str, dict[str, object]]
    prompt_versions: dict[str, list[str]] = Field(description="judge → prompt template ids it used")
    sent: list[SentSettings] = Field(default_factory=list, description="settings as the requests carried them")
    leniency: list[Leniency] = Field(default_factory=list, description="each judge against the judges' mean")
    human_agreement: list[HumanAgreement] = Field(default_factory=list, description="judges against human labels")
    ppi: list[PpiRate] = Field(default_factory=list, description="rates corrected by human labels (PPI)")
    judge_checks: list[JudgeCheck] = Field(default_factory=list, description="judges on the spec's own examples")
    judge_accuracy: list[JudgeAccuracy] = Field(default_factory=list, description="per judge, both kinds together")
    min_canary_accuracy: float | None = Field(default=None, description="judges below it are flagged")
    categories: list[CategoryShare] = Field(default_factory=list, description="categorical judges' distributions")
    category_differences: list[CategoryDifference] = Field(default_factory=list)
    category_agreement: list[CategoryAgreement] = Field(default_factory=list)
    metrics: list[MetricRow] = Field(default_factory=list, description="custom metrics per candidate and variation")
    turn_rates: list[TurnRate] = Field(default_factory=list, description="scope-turn judges: rates per turn index")
    flips: list[Flip] = Field(default_factory=list, description="scope-turn judges: turn 1 against the last turn")
    flip_survival: list[FlipSurvival] = Field(
        default_factory=list, description="scope-turn binary judges: the turn of the first flip, Kaplan–Meier"
    )
    survivors: list[Survivors] = Field(default_factory=list, description="scope-turn judges: conversations per turn")
    elicitation: list[Elicitation] = Field(
        default_factory=list,
        description="binary turn judges: share of conversations with a violation at any turn, per statement",
    )
    inputs: list[InputsRow] = Field(default_factory=list, description="generated inputs per statement")
    kept_inputs: list[KeptInput] = Field(default_factory=list, description="generated inputs kept (a sample)")
    data_kind: str = Field(default="provider", description="synthetic | provider | mixed (see `data_banner`)")
    synthetic_folders: int = Field(default=0, description="run folders holding synthetic answers or verdicts")
    real_folders: int = Field(
        default=0, description="run folders of a provider's answers and verdicts (or without a run.json)"
    )
    sources: list[Source] = Field(default_factory=list, description="the runs read: every row's data kind")
    skipped: list[str] = Field(default_factory=list, description="files under results/ that held no verdicts")
    ranking_samples: list[SampleRecord] = Field(default_factory=list, description="comparisons shown in the page")
    ranking_total: int = 0
    health: Health = Field(default_factory=Health, description="per statement: does the spec need work here")
    judge_card: list[JudgeCardRow] = Field(default_factory=list, description="per judge entry: every check of it")
    paraphrases: list[Paraphrases] = Field(
        default_factory=list, description="the card's rewordings of each spec's statements, as judged"
    )
    card_lines: dict[str, float] = Field(
        default_factory=dict, description="the lines the card held judges to (none: nothing was gated)"
    )
    figures: bool = Field(
        default=True, description="whether the page's figures are drawn (`--no-figures`: not; every table the same)"
    )

    def judge_passes(self, spec: str, judge: str) -> bool | None:
        """Whether a judge entry passes its card (None: not checked); a panel passes when every judge of its spec
        does (it is made of them)."""
        if judge == PANEL:
            found = [row.passes for row in self.judge_card if row.spec == spec]
            return None if not found or None in found else all(found)
        return next((row.passes for row in self.judge_card if (row.spec, row.judge) == (spec, judge)), None)

    @property
    def data_banner(self) -> str | None:
        """The sentence every quotable output starts with when any verdict is synthetic; None otherwise."""
        if self.data_kind == "synthetic":
            return (
                "SYNTHETIC DATA: the answers, the verdicts or both behind every number here were made up by the "
                "speceval emulator (offline runs), not by a model; no rate or interval here says anything about "
                "a model."
            )
        if self.data_kind == "mixed":
            return (
                f"MIXED DATA: {self.synthetic_folders} run folder(s) hold synthetic answers or verdicts "
                f"(offline runs: made up by the speceval emulator) and {self.real_folders} a provider's (or "
                "unrecorded runs'); every CSV row says which in its `data` column, and every exported verdict "
                "in its `synthetic` flag."
            )
        return None


class ReportOptions(TypedDict, total=False):
    """What a report is computed with besides its folders and prices (`compute`, and `build_report`, which passes
    them on); every key may be left out."""

    labels: Path | None
    """A human labels file (`speceval label`): judges against people, and prediction-powered rates."""
    min_canary_accuracy: float | None
    """Judges whose accuracy on the spec's own examples is below it are flagged."""
    metrics: Mapping[str, MetricSpec] | None
    """An experiment file's custom metrics."""
    health: HealthThresholds | None
    """The thresholds of the spec-health rules (`speceval.analysis.tables.health`); None: the defaults."""
    card: JudgeCardLines | None
    """The judge card's lines: each judge entry failing one is kept out of the headline (without it, only
    `min_canary_accuracy` is a line)."""
    likert_drop: int
    """The drop in points that is a Likert turn judge's flip (default `DEFAULT_LIKERT_DROP`)."""
    figures: bool
    """False: the page draws no figure and says so (`--no-figures`); tables, CSVs and summary.md are the same."""


def compute(paths: Sequence[Path], prices: PriceTable, **options: Unpack[ReportOptions]) -> ReportData:
    """Every table of the report, from the verdicts and run manifests under `paths` (and human labels, if given),
    with the `options` of `ReportOptions`. A folder given twice, or inside another given folder, is read once."""
    unknown = set(options) - ReportOptions.__optional_keys__
    if unknown:  # as a misspelled parameter would: a report never quietly computed without an option asked for
        raise TypeError(f"unknown report option(s): {', '.join(sorted(unknown))}")
    paths = distinct_roots(paths)
    lines = card_lines(options.get("card"), options.get("min_canary_accuracy"))
    min_canary_accuracy = lines.get("min_canary_accuracy", options.get("min_canary_accuracy"))
    verdicts = fold_verdicts(paths)
    metrics = options.get("metrics")
    metric_rows = metric_table(paths, metrics) if metrics else []
    inputs, kept_inputs = inputs_tables(paths)
    found, rankings = verdicts.columns, verdicts.ranking_columns
    if not len(found) and not verdicts.turn_rows and not len(rankings) and not metric_rows and not inputs:
        raise InputError(paths[0], "no compliance or ranking results found here (expected results/*.json files)")
    # A turn verdict (scope turn) is one of several per conversation: per-turn rates only, never pooled with the
    # per-conversation compliance or category tables (the fold keeps them apart).
    turn_rows = verdicts.turn_rows
    # A categorical verdict is no compliance verdict: it has its own tables and never enters a compliance rate.
    categorical_mask = found.fact("mode") == found.code_of("mode", CATEGORIES) if len(found) else np.zeros(0, bool)
    # Without categorical judges (the usual case) the columns are used as they are: a copy is 60 bytes a verdict.
    judges = found.take(~categorical_mask) if categorical_mask.any() else found
    categorical = rows_of(found.take(categorical_mask))
    panel = panel_verdicts(judges)
    both = judges if panel is None else judges.concat(panel.verdicts)
    run_manifests = {run_dir: RunManifest.load(run_dir) for run_dir in find_run_dirs(paths)}
    manifests = list(run_manifests.values())
    costs = [_keyed_cost(c, run_manifests[Path(c.run_dir)], paths) for c in run_costs(paths, prices)]
    kinds = DataKinds([*verdict_sources(verdicts), *manifest_sources(run_manifests.items(), paths)])
    synthetic = {s.run_dir for s in kinds.sources if s.synthetic}  # run folders, for the mixed banner's counts
    real = {s.run_dir for s in kinds.sources if not s.synthetic} - synthetic
    checks = judge_checks(verdicts.canaries)
    versions: dict[str, set[str]] = {}
    for facts in [*found.facts, *verdicts.turn_columns.facts]:
        versions.setdefault(facts.judge, set()).add(facts.prompt_version)
    # The statistics first, the sample view's records (up to 12 MB of text) after: the records are not held while
    # the statistics' million-verdict arrays are (the peak of a large report is there).
    variations, compliance = variation_statistics(both, verdicts.settings), compliance_rates(both)
    per_statement = compliance_rates(both, per_statement=True)
    # The candidate's answers no judge saw (their generation failed) beside each rate's own not-judged verdicts.
    skipped = skipped_answers(found.paths, found.facts)
    declared = declared_categories(found.paths, found.facts)  # a category no verdict chose still has its row
    cell = ("spec", "judge", "candidate", "variation")
    variations = with_skipped(variations, skipped.pooled, *cell)
    compliance = with_skipped(compliance, skipped.pooled, *cell)
    # A statement none of whose answers was judged still has its row (and its type and authority theirs).
    per_statement = with_never_judged(
        with_skipped(per_statement, skipped.per_statement, *cell, "statement_id"),
        skipped.per_statement,
        (*cell, "statement_id"),
        ComplianceRate.of_no_verdicts,
    )
    by_type, by_authority = (
        with_never_judged(
            with_skipped(breakdown(both, by), counts, *cell, "group"),
            counts,
            (*cell, "group"),
            Breakdown.of_no_verdicts,
        )
        for by, counts in (("statement_type", skipped.by_type), ("authority_level", skipped.by_authority))
    )
    paired, agreement, lenient = paired_comparisons(both), judge_agreement(judges), leniency(judges)
    # A conversation whose generation failed has no turn verdict: every turn's row of its cell counts it (as its
    # statement's elicitation row does), read from the turn judges' own summaries.
    turn_skipped = skipped_answers(verdicts.turn_columns.paths, verdicts.turn_columns.facts)
    turn_rates_ = with_skipped(turn_rates(turn_rows), turn_skipped.pooled, *cell)
    # Labels match answers by their texts: with labels, the judges' verdicts are read again a file at a time,
    # each kept as its verdict and its label only (`labelled_tally`): for PPI, agreement, and per statement.
    labels = options.get("labels")
    tally = labelled_tally(paths, labels) if labels is not None else None
    # A statement's answers no yes/no judge saw count in its health row; one with none judged still has its row.
    binary = {(f.spec, f.judge) for f in found.facts if f.mode == Mode.BINARY}
    failed = generation_failures(skipped.per_statement, binary)
    spec_health = statement_health(judges, verdicts.canaries, options.get("health"), min_canary_accuracy, tally, failed)
    spec_health.pairs = pair_compliance(judges, pair_inputs(paths))
    accuracy, consistency = judge_accuracy(checks, min_canary_accuracy), position_consistency(rankings)
    entries = {(v.spec, v.judge) for v in variations} | {(r.spec, r.judge) for r in turn_rates_}
    card_rows = judge_card(
        entries - {(s, PANEL) for s, _ in entries},
        accuracy,
        verdicts.canaries,
        tally,
        lenient,
        judge_position_consistency(rankings),
        card_verdicts(paths),
        lines,
    )
    shown = judges.concat(found.take(categorical_mask)) if categorical_mask.any() else judges
    samples, sample_total = sample_records(
        shown.concat(verdicts.turn_columns) if len(verdicts.turn_columns) else shown, panel
    )
    return ReportData(
        samples=samples,
        sample_total=sample_total,
        variations=variations,
        compliance=compliance,
        per_statement=per_statement,
        by_type=by_type,
        by_authority=by_authority,
        paired=paired,
        agreement=agreement,
        leniency=lenient,
        panel=panel.counts if panel is not None else [],
        win_rates=win_rates(rankings),
        bradley_terry=strengths(rankings),
        position_consistency=consistency,
        costs=costs,
        stages=_stage_counts(manifests, costs),
        sent=_sent_settings(manifests),
        **_labelled(tally),
        judge_checks=checks,
        judge_accuracy=accuracy,
        judge_card=card_rows,
        card_lines=lines,
        paraphrases=paraphrase_sets(paths),
        min_canary_accuracy=min_canary_accuracy,
        inputs=inputs,
        kept_inputs=kept_inputs,
        metrics=metric_rows,
        ranking_samples=ranking_samples(rankings),
        ranking_total=len(rankings),
        categories=with_skipped(category_distribution(categorical, declared), skipped.pooled, *cell),
        category_differences=category_differences(categorical, declared),
        category_agreement=category_agreement(categorical),
        turn_rates=turn_rates_,
        health=spec_health,
        flips=flips(turn_rows, options.get("likert_drop", DEFAULT_LIKERT_DROP)),
        flip_survival=flip_survival(turn_rows),
        survivors=survivors(turn_rows),
        figures=options.get("figures", True),
        elicitation=with_skipped(elicitation(turn_rows), turn_skipped.per_statement, *cell, "statement_id"),
        settings=dict(verdicts.settings),
        prompt_versions={j: sorted(v) for j, v in sorted(versions.items())},
        data_kind=kinds.overall,
        sources=kinds.sources,
        skipped=verdicts.skipped,
        synthetic_folders=len(synthetic),
        real_folders=len(real),
        unknown_statement_types=sorted(
            {
                PurePosixPath(f.source).parent.parent.as_posix()
                for f in [*found.facts, *verdicts.turn_columns.facts]
                if f.statement_type == UNKNOWN
            }
        ),
    )


def _keyed_cost(cost: RunCost, manifest: RunManifest, roots: Sequence[Path]) -> ReportCost:
    """A run's cost with the key of its run (see `ReportCost`)."""
    place = manifest.parameters.get("experiment")
    judge = manifest.kind in JUDGE_KINDS
    identity = manifest.parameters.get("identity")
    judged = identity.get("candidate") if judge and isinstance(identity, dict) else None  # a compliance run's
    return ReportCost(
        **{**cost.model_dump(), "run_dir": relative(Path(cost.run_dir), roots)},
        spec=manifest.spec_name,
        # The judge entry as the verdict tables name it (one model at two scopes or modes is two entries).
        judge=str(manifest.parameters.get("judge_name") or manifest.model_name) if judge else None,
        candidate=_candidate_of(manifest, Path(cost.run_dir))
        if manifest.kind.startswith("generation")
        else (str(judged) if judged else None),
        variation=str(place.get("variation", DEFAULT_VARIATION)) if isinstance(place, dict) else DEFAULT_VARIATION,
    )


def _candidate_of(manifest: RunManifest, run_dir: Path) -> str:
    """The candidate a generation run's spend belongs to: its own model, or, for a simulated user's half of a
    conversation round (`rounds/<k>/user`), the candidate whose conversations it wrote (the run two folders up):
    the user's model is a cost of that candidate's study, not a candidate."""
    if manifest.parameters.get("half") == "simulated_user":
        owner = run_dir.parent.parent.parent / "run.json"
        if owner.is_file():
            return RunManifest.load(owner.parent).model_name
    return manifest.model_name


def _labelled(tally: LabelTally | None) -> dict[str, Any]:
    """Human agreement and PPI rates, when there are labels."""
    if tally is None:
        return {}
    return {"human_agreement": human_agreement(tally), "ppi": ppi_rates(tally)}


def _sent_settings(manifests: list[RunManifest]) -> list[SentSettings]:
    found = set()
    for manifest in manifests:
        sent = manifest.parameters.get("sent")
        if not isinstance(sent, dict):  # a run from before this was recorded: say what was asked, and that
            asked = manifest.parameters.get("params")
            sent = {
                k: f"{v!r} asked (what was sent is not recorded)"
                for k, v in (asked.items() if isinstance(asked, dict) else [])
                if v is not None
            }
        place = manifest.parameters.get("experiment")
        variation = str(place.get("variation", "default")) if isinstance(place, dict) else "default"
        described = "; ".join(
            f"{k} = {v if isinstance(v, str) else repr(v)}" for k, v in sorted(sent.items()) if k != "system_prompt"
        )
        # A conversation's rounds are the generation stage's (its user half the simulated user's): one row each.
        stage = "generation" if manifest.kind == ROUND_KIND else manifest.kind
        found.add((stage, _role(manifest), manifest.model_name, variation, described))
    return [SentSettings(stage=s, role=r, model=m, variation=v, sent=d) for s, r, m, v, d in sorted(found)]


def _role(manifest: RunManifest) -> str:
    """What the run's model did (a conversation's user half is a generation run of the simulated user's model)."""
    if manifest.parameters.get("half") == "simulated_user":
        return "simulated user"
    return {"generation": "candidate", ROUND_KIND: "candidate", "compliance": "judge", "ranking": "judge"}.get(
        manifest.kind, manifest.kind
    )


def _stage_counts(manifests: list[RunManifest], costs: Sequence[RunCost]) -> list[StageCounts]:
    stages: dict[str, StageCounts] = {}
    for manifest in manifests:
        if manifest.kind == "input_generation":
            continue  # the inputs stage's own folder sends nothing (it read "0 request(s) (none yet)"): its rounds do
        name = stage_of(manifest)
        counts = stages.setdefault(name, StageCounts(stage=name, runs=0, requests=0, outcomes={}, cost_usd=0.0))
        counts.runs += 1
        if manifest.totals is not None:
            counts.requests += manifest.totals.total_requests
            outcomes = Counter(counts.outcomes)
            outcomes.update({str(k): n for k, n in manifest.totals.outcome_counts.items()})
            counts.outcomes = dict(sorted(outcomes.items()))
    for cost in costs:
        # A conversation's own folder sends nothing (its cost rows are 0): a "generation" row is a plain run's.
        stage = stages.get(KIND_STAGES.get(cost.kind, cost.kind))
        if stage is not None:
            known = stage.cost_usd is not None and cost.cost_usd is not None
            stage.cost_usd = (stage.cost_usd or 0.0) + (cost.cost_usd or 0.0) if known else None
    order = {INPUTS_ROUNDS: -1, "generation": 0, ASSEMBLED: 1, ROUNDS: 2, "compliance": 3, "ranking": 4}
    return sorted(stages.values(), key=lambda s: (order.get(s.stage, 9), s.stage))
