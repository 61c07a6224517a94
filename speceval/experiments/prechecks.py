"""What an experiment will read later, checked before its first job is paid for.

A label sheet is read by the report, a `judge:<model>` metric by the report, a price by the budget when a job is
about to be submitted: each found wrong only then would be found after paying for everything before it. So
`preflight` runs these first, and each failure names the file, line and key.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from speceval.batch.costs import PriceTable
from speceval.errors import InputError
from speceval.experiments.card_tasks import check_user_paraphrases
from speceval.experiments.config import ExperimentConfig, ModelEntry
from speceval.providers.registry import resolve_org

LineOf = Callable[[str], int | None]


def check_before_paying(config: ExperimentConfig, path: Path, labels: Path | None, line_of: LineOf) -> None:
    """Refuse (InputError naming file, line and key) a label sheet, metric source or missing price that would
    otherwise stop the experiment after jobs were paid for. `labels` is the sheet's resolved path."""
    if labels is not None:
        _check_labels(config, labels)
    judges = {judge.model for judge in config.judges}
    for name, metric in config.metrics.items():
        source = metric.source
        if source.startswith("judge:") and source.removeprefix("judge:") not in judges:
            listed = ", ".join(sorted(judges)) or "none"
            raise InputError(
                path,
                f"metric {name}: source {source!r} names no judge of this experiment (judges: "
                f"{listed}); it would have no value to read",
                line=line_of(source),
                field=f"metrics.{name}.source",
            )
    _check_prices(config, path, line_of)
    check_user_paraphrases(config, path.parent)


def _check_labels(config: ExperimentConfig, labels: Path) -> None:
    """Every label well formed, no item twice, and every row's spec and candidate one of this experiment's (a sheet
    from another experiment names others); whether each item matches an answer is known only once they exist."""
    from speceval.analysis.tables.human_labels import checked_labels, label_records, sheet_reader  # the report's
    from speceval.analysis.tables.label_design import check_design

    records = label_records(labels)
    checked_labels(labels, records, None)
    check_design(labels, records)  # labels the design did not draw, or another sheet's design: refused before paying
    specs = {spec.name for spec in config.specs}
    candidates = {candidate.model for candidate in config.candidates}
    text = labels.read_bytes().decode("utf-8-sig")  # label_records decoded it already: it is UTF-8
    reader = sheet_reader(text)
    for row in reader:
        for column, allowed in (("spec", specs), ("candidate", candidates)):
            value = (row.get(column) or "").strip()
            if value and value not in allowed:
                listed = ", ".join(sorted(allowed))
                raise InputError(
                    labels,
                    f"{column} {value!r} is not one of this experiment's ({listed}): a sheet "
                    "made from another experiment's answers?",
                    line=reader.line_num,
                    field=column,
                )


def _check_prices(config: ExperimentConfig, path: Path, line_of: LineOf) -> None:
    """A limit is enforced by pricing each job: every model it covers needs a price (Ray runs are not priced)."""
    limits = [
        key
        for key, value in (("budget_usd", config.budget_usd), ("cost_per_run_limit", config.cost_per_run_limit))
        if value is not None
    ]
    if not limits:
        return
    prices = PriceTable.load()
    users = {
        (user.model, user.org)
        for user in map(config.simulated_user_of, config.variations.combinations())
        if user is not None
    }
    generating = [ModelEntry(model=model, org=org) for model, org in users] + list(config.candidates)
    judging: list[ModelEntry] = list(config.judges)
    if config.inputs is not None and "inputs" in config.stages:
        judging += [entry for _, entry in config.inputs.models()]
    for key in limits:
        # cost_per_run_limit covers a generation run (candidate and simulated user); budget_usd every model.
        covered = generating if key == "cost_per_run_limit" else generating + judging
        for entry in covered:
            if resolve_org(entry.model, entry.org).org != "ray" and prices.price(entry.model) is None:
                raise InputError(
                    path,
                    f"{key} needs a price for every model it covers, and the price table has "
                    f"none for {entry.model}: add it to a price table ($SPECEVAL_PRICES) or "
                    f"remove {key}",
                    line=line_of(key),
                    field=key,
                )


def check_simulated_users(config: ExperimentConfig, path: Path, line_of: LineOf) -> None:
    """Each variation's simulated user: a known org, and room in its max_turns for the input and its follow-ups
    (an input's own scripted turns are checked when its run starts, before it sends). Named by line and key."""
    from speceval.errors import ConfigError

    for name, settings in config.variations.named_combinations().items():
        user = config.simulated_user_of(settings)
        if user is None:
            continue
        where = f"variations.simulated_user.{name}" if "simulated_user" in settings else "simulated_user"
        try:
            resolve_org(user.model, user.org)
        except ConfigError as exc:
            line = line_of(f"org: {user.org}") if user.org else line_of(user.model)
            raise InputError(path, str(exc).replace("--org", "org"), line=line, field=f"{where}.org") from None
        follow_ups = settings.get("follow_ups") or []
        if isinstance(follow_ups, list) and 1 + len(follow_ups) > user.max_turns:
            raise InputError(
                path,
                f"variation {name}: the input and its {len(follow_ups)} follow-up(s) make "
                f"{1 + len(follow_ups)} rounds, more than its simulated user's max_turns "
                f"{user.max_turns} (which bounds the candidate's answers)",
                line=line_of("follow_ups"),
                field="variations.follow_ups",
            )
