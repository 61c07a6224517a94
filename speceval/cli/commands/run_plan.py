"""`speceval run EXPERIMENT.yaml --dry-run [--json]`: the plan of an experiment, printed; nothing sent or written."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from speceval.cli.console import console, stdout
from speceval.cli.exits import ExitCode
from speceval.cli.tier_flags import print_tier_plan
from speceval.experiments.dry_plan import ExperimentPlan, plan_experiment
from speceval.experiments.plan_tally import EXPECTED_OUTPUT_TOKENS
from speceval.experiments.precision import Assumptions
from speceval.experiments.runner import plan, preflight
from speceval.experiments.state import started_state
from speceval.experiments.tier_study import StudyTiers


def show_plan(path: Path, *, offline: bool, rate: float | None, icc: float | None, as_json: bool) -> int:
    """Plan the experiment in `path` and print it (as JSON with `as_json`); `rate` and `icc` None: the defaults."""
    config, output_dir, offline = preflight(path, offline=offline, dry_run=True)
    _, groups = plan(config, output_dir)
    given = {name: value for name, value in (("rate", rate), ("icc", icc)) if value is not None}
    result = plan_experiment(config, path.parent, groups, Assumptions(**given), offline=offline)
    state = started_state(output_dir)  # `tier: auto`: planned here as the run would plan it
    started = state is not None and state.tiers_started_at is not None
    tiers = StudyTiers(config, path.parent, groups, output_dir=output_dir, started=started, offline=offline)
    if tiers.plan is not None:
        result.tier_plan = tiers.plan.rounds
    if as_json:
        print(result.model_dump_json(indent=2))  # noqa: T201 - the command's output (plain, for scripts)
        return ExitCode.FINISHED
    _print(result, offline)
    if tiers.plan is not None and config.engine.deadline_hours is not None:
        print_tier_plan(tiers.plan, tiers.beside, config.engine.deadline_hours, config.budget_usd)
    return ExitCode.FINISHED


def _money(value: float | None) -> str:
    return f"${value:,.4f}" if value is not None else "unknown (no price)"


def _print(result: ExperimentPlan, offline: bool) -> None:
    table = Table(title=f"dry run of {result.experiment_name}: nothing sent, nothing written", header_style="bold")
    for column in ("stage", "runs", "requests", "jobs", "expected", "upper bound"):
        table.add_column(column, justify="left" if column == "stage" else "right", overflow="fold")
    for stage in result.stages:
        table.add_row(
            stage.stage,
            f"{stage.runs:,}",
            f"{stage.requests:,}",
            f"{stage.jobs:,}",
            _money(stage.expected_usd),
            _money(stage.upper_bound_usd),
        )
    table.add_section()
    table.add_row(
        "total",
        "",
        f"{sum(s.requests for s in result.stages):,}",
        f"{sum(s.jobs for s in result.stages):,}",
        _money(result.expected_usd),
        _money(result.upper_bound_usd),
    )
    stdout.print(table)
    unpriced = sorted({model for stage in result.stages for model in stage.unpriced})
    if unpriced:
        stdout.print(
            f"No price for {', '.join(unpriced)}: add it to a price table (--prices FILE or "
            "$SPECEVAL_PRICES) to see a cost."
        )
    if result.budget_usd is not None:
        stdout.print(
            f"budget_usd: ${result.budget_usd:,.4f}; jobs are held back while the upper bound of the jobs "
            "in flight would pass it, so the run needs only the actual cost to fit."
        )
    stdout.print(
        "Costs at each entry's tier (batch and flex at batch prices, standard at full price). "
        f"Expected: input tokens = UTF-8 bytes / 4, answers of "
        f"{EXPECTED_OUTPUT_TOKENS} tokens (max_tokens if lower), a judge prompt's shared prefix read from "
        "the cache after its statement's first request. Upper bound: every answer at max_tokens, no cache."
    )
    if offline:
        console.print(
            "[bold yellow]Offline: the emulator would answer (synthetic); the costs shown are what the "
            "providers would charge.[/]"
        )
    _print_precision(result)
    for note in result.notes:
        stdout.print(f"Note: {note}")


def _print_precision(result: ExperimentPlan) -> None:
    if not result.precision:
        return
    a = result.assumptions
    table = Table(
        title="precision plan (the report's own paired interval, design effect; assumptions below)", header_style="bold"
    )
    # Short headers, explained below the table: at 80 columns long ones leave the model names no room.
    for column in ("spec", "compared", "pair", "within"):
        table.add_column(column, overflow="fold")  # wrap, never cut: a model name must stay whole
    for column in ("n x runs", "deff", "CI ±", "MDD"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in result.precision:
        pair = f"{row.a} vs {row.b}" if row.b else row.a
        table.add_row(
            row.spec,
            row.compared,
            pair,
            row.within,
            f"{row.inputs} x {row.runs}",
            f"{row.design_effect:.2f}",
            f"{row.rate_half_width:.3f}",
            "none" if row.minimum_detectable_difference is None else f"{row.minimum_detectable_difference:.3f}",
        )
    stdout.print(table)
    stdout.print(
        "n x runs: inputs x runs per variation; deff: design effect 1 + (runs - 1) x ICC; CI ±: expected "
        "half-width of each rate's 95% interval; MDD: the smallest difference of the pair's two rates that the "
        "report's paired interval excludes 0 for with 80% power, from the assumed rate in either direction (none: "
        f"not within [0, 1]). Assumed: compliance rate {a.rate:g} (--assume-rate) for one of the pair, intra-input "
        f"correlation {a.icc:g} (--assume-icc), the two of a pair independent beyond their inputs (no credit for "
        "pairing: a pair whose inputs are hard for both alike does better). Conversations: `turn T rate` over the "
        f"conversations expected to reach the last turn ({a.continue_rate:g} of them go on to each next turn, "
        "independent of compliance), `flips` over those reaching turn 2 at the non-compliance rate "
        f"{1 - a.rate:g}."
    )
