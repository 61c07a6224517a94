"""`ConversationRun`: the rounds of one generation run over inputs that hold conversations, to the end.

Round k runs in its own engine directory (`rounds/<k>/`, see `speceval.conversations.rounds`) and starts only when
round k-1's results are all final. Everything is derived from files: a round's members from `round.json`, its
requests from the inputs file and the earlier rounds' answers, its progress from the engine's own state. Killed at
any instant and run again, it continues the round in flight (the engine adopts jobs already created) and sends no
finished turn again. `results/` is assembled from the closed rounds whenever the run returns.

With a simulated user, a round's user turns are written first by the user model, as a batch (or realtime) run of
their own in `rounds/<k>/user/` through the same engine and budget; `round.json`'s `phase` says which half is in
flight, so a resume continues that half and never asks the user model again for a turn it answered.

The candidate (and the user model) may be one model for every round, or one per round (`ModelOfRound`, for
`tier: auto`): each half's `run.json` then records how that round was reached (`speceval.conversations.transport`),
and a round that started keeps that transport on resume.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from speceval.batch.budget import Budget
from speceval.batch.costs import PriceTable, served_tier
from speceval.batch.engine import BatchEngine
from speceval.batch.journal import JOURNAL_NAME, Journal
from speceval.batch.manifest import MANIFEST_NAME, RunManifest, run_recorded
from speceval.batch.model import BatchedModel
from speceval.batch.options import EngineOptions
from speceval.batch.progress import EngineObserver, EngineSummary, StopReason
from speceval.batch.records import SubmissionIntent
from speceval.batch.store import RunStore
from speceval.conversations.results import assemble
from speceval.conversations.rounds import (
    ROUND_KIND,
    RoundRecord,
    RoundSource,
    UserRoundSource,
    first_round,
    next_round,
    round_dir,
    round_store,
    user_dir,
    with_user_turns,
)
from speceval.conversations.simulated_user import SimulatedUser
from speceval.conversations.transport import ModelOfRound, RoundModel, record_transport, started_tier
from speceval.defaults import PRICES_ENV, Tier
from speceval.engines.factory import make_engine
from speceval.errors import ConfigError, RunStateError
from speceval.inputs import InputSet
from speceval.inputs.script import ChatMessage
from speceval.providers.registry import resolve_org
from speceval.realtime.model import RealtimeModel
from speceval.spec import Statement
from speceval.wire.prompt import Prompt
from speceval.wire.sent import settings_as_sent
from speceval.wire.usage import Usage

logger = logging.getLogger(__name__)

_CANDIDATE_ENDPOINT_KEYS = ("realtime", "ray", "vertex")
"""`run.json` parameters saying how the candidate is reached: not how the simulated user is."""


class ConversationRun:
    """The rounds of one conversation run.

    Args:
        inputs: the run's inputs (strings and conversations).
        run_dir: the generation run directory (its `run.json` is the template of each round's).
        manifest: the generation run's manifest, already on disk.
        options: engine options, used by every round (a budget is shared across rounds and both halves).
        observer: receives each round's engine events.
        simulated_user: the run's simulated user (the inputs then carry its `max_turns`), or None.
    """

    def __init__(
        self,
        inputs: InputSet,
        run_dir: Path,
        manifest: RunManifest,
        options: EngineOptions,
        observer: EngineObserver | None = None,
        simulated_user: SimulatedUser | None = None,
        statements: Mapping[str, Statement] | None = None,
    ):
        self.inputs = inputs
        self.run_dir = Path(run_dir)
        self.manifest = manifest
        self.options = options
        self.observer = observer
        self.simulated_user = simulated_user
        self.statements = statements or {}
        """The spec's statements by id: what a simulated user aimed at the statement under test is told of it."""

    def run(
        self, model: RoundModel | ModelOfRound, user_model: RoundModel | ModelOfRound | None = None
    ) -> EngineSummary:
        """Run (or resume) round after round until every conversation ended, or a round stops (budget, timeout).

        `model` answers every round, or `model(k, started)` answers round k (`ModelOfRound`: a tier per round).
        `user_model` writes the simulated user's turns likewise (required when the run has a simulated user). The
        summary's jobs count both halves; its usage is the candidate's (the user model's is in each conversation's
        record).
        """
        if self.simulated_user is not None and user_model is None:
            raise ValueError("a run with a simulated user needs its user model")
        closed: list[RoundRecord] = []
        jobs, usage = 0, Usage()
        reason, active = StopReason.FINISHED, 0
        previous: RoundRecord | None = None
        for number in range(1, self.inputs.max_rounds + 1):
            record = self._round(number, previous)
            if record is None:
                break  # every conversation ended before this round
            if RoundRecord.load(self.run_dir, number + 1) is not None:
                # The next round started, so this one was final: running its engine again could only retry what
                # its members were decided from (a resume with a higher --max-attempts), and must not.
                summaries = [self._closed_summary(directory) for directory in self._directories(record)]
            else:
                summaries = []
                if record.phase == "simulated_user":
                    assert user_model is not None and self.simulated_user is not None
                    directory = user_dir(self.run_dir, number)
                    writer = _model_at(user_model, number, directory)
                    summaries.append(
                        self._run_half(
                            writer,
                            directory,
                            UserRoundSource(self.inputs, self.run_dir, record, self._user_prompt),
                            self._user_manifest(record, writer),
                        )
                    )
                    if summaries[-1].finished:
                        record = with_user_turns(self.run_dir, record, self.simulated_user.ends)
                        record.save(self.run_dir)  # the candidate half's members, fixed before it starts
                elif (user_dir(self.run_dir, number) / MANIFEST_NAME).is_file():
                    # Its user half closed in an earlier invocation: its jobs and spend still count.
                    summaries.append(self._closed_summary(user_dir(self.run_dir, number)))
                if record.phase == "candidate":
                    directory = round_dir(self.run_dir, number)
                    answerer = _model_at(model, number, directory)
                    per_round = not isinstance(model, BatchedModel | RealtimeModel)
                    manifest = self._round_manifest(record, answerer if per_round else None)
                    summaries.append(
                        self._run_half(answerer, directory, RoundSource(self.inputs, self.run_dir, record), manifest)
                    )
            for index, summary in enumerate(summaries):
                jobs += summary.jobs
                if index == len(summaries) - 1 and record.phase == "candidate":
                    usage.add(summary.usage)  # the candidate's half
            unfinished = next((summary for summary in summaries if not summary.finished), None)
            if unfinished is not None:
                reason, active = unfinished.reason, unfinished.active_jobs
                break
            closed.append(record)
            previous = record
        counts, ended = assemble(self.inputs, self.run_dir, closed, self.simulated_user)
        return EngineSummary(
            reason=reason,
            total_requests=len(self.inputs),
            outcome_counts=dict(counts),
            outstanding=len(self.inputs) - ended,
            active_jobs=active,
            jobs=jobs,
            usage=usage,
        )

    def plan(self, model: BatchedModel) -> list[tuple[Path, SubmissionIntent]]:
        """Dry run: round 1's request files and intents, each with its round directory (later rounds are built
        from answers, so they cannot be planned; `speceval.conversations.estimate` bounds their cost)."""
        record = self._round(1, None)
        assert record is not None  # round 1 holds every input
        directory = round_dir(self.run_dir, 1)
        manifest = self._round_manifest(record)
        manifest.status = "planned"
        manifest.save(directory)
        intents = BatchEngine(model, round_store(self.run_dir, 1), self.options).plan(
            RoundSource(self.inputs, self.run_dir, record)
        )
        return [(directory, intent) for intent in intents]

    # -- helpers ------------------------------------------------------------------------------------------

    def _round(self, number: int, previous: RoundRecord | None) -> RoundRecord | None:
        """Round `number`'s record: from disk if it started, else decided now and written (None if empty)."""
        record = RoundRecord.load(self.run_dir, number)
        if record is not None:
            return record
        record = first_round(self.inputs) if previous is None else next_round(self.inputs, self.run_dir, previous)
        if not record.size and not record.asked:
            return None
        record.save(self.run_dir)
        logger.info("round %d: %d request(s), %d to the simulated user first", number, record.size, record.asked)
        return record

    def _directories(self, record: RoundRecord) -> list[Path]:
        """The engine directories of a round: its user half (if it had one), then its candidate half."""
        halves = [user_dir(self.run_dir, record.round)] if record.asking else []
        return [*halves, round_dir(self.run_dir, record.round)]

    def _round_manifest(self, record: RoundRecord, answerer: RoundModel | None = None) -> RunManifest:
        """The candidate half's run.json: the run's own settings; with a model per round (`answerer`), how this
        round is reached (recorded when it starts, kept after)."""
        directory = round_dir(self.run_dir, record.round)
        started = (directory / MANIFEST_NAME).is_file()
        manifest = self._half_manifest(directory, {"round": record.round, "requests": record.size}, {})
        if answerer is not None and not started:
            record_transport(manifest, answerer)
        return manifest

    def _user_manifest(self, record: RoundRecord, user_model: BatchedModel | RealtimeModel) -> RunManifest:
        """The user half's run.json: the user model's name, provider, settings as sent and how it is reached (not
        the candidate's), so its jobs are priced, listed and reopened as its own."""
        user = self.simulated_user
        assert user is not None
        provider = resolve_org(user.model, user.org).org
        parameters: dict[str, object] = {
            "round": record.round,
            "requests": record.asked,
            "half": "simulated_user",
            "params": asdict(user.params),
            "sent": settings_as_sent(provider, user.params),
        }
        manifest = self._half_manifest(
            user_dir(self.run_dir, record.round), parameters, {"model_name": user.model, "provider": provider}
        )
        if (user_dir(self.run_dir, record.round) / MANIFEST_NAME).is_file():
            return manifest  # started: it keeps what it recorded
        for key in _CANDIDATE_ENDPOINT_KEYS:
            manifest.parameters.pop(key, None)
        record_transport(manifest, user_model)
        return manifest

    def _half_manifest(self, directory: Path, parameters: dict[str, object], update: dict[str, object]) -> RunManifest:
        if (directory / MANIFEST_NAME).is_file():
            manifest = RunManifest.load(directory)
            manifest.command = self.manifest.command
            manifest.status = "running"
            return manifest
        return self.manifest.model_copy(
            update={
                "kind": ROUND_KIND,
                "parameters": {**self.manifest.parameters, **parameters},
                "status": "running",
                "totals": None,
                **update,
            },
            deep=True,
        )

    def _user_prompt(self, statement_id: str, transcript: list[ChatMessage]) -> Prompt:
        """The simulated user's request in a conversation of `statement_id` (told of that statement when its
        instructions name it)."""
        assert self.simulated_user is not None
        return self.simulated_user.prompt(transcript, self.statements.get(statement_id))

    def _run_half(
        self,
        model: BatchedModel | RealtimeModel,
        directory: Path,
        source: RoundSource | UserRoundSource,
        manifest: RunManifest,
    ) -> EngineSummary:
        store = RunStore(directory)

        def run() -> EngineSummary:
            if isinstance(model, BatchedModel):
                return BatchEngine(model, store, self.options, self.observer).run(source)
            # Realtime: a round's conversations are called concurrently, each conversation's turns in order (at flex
            # with `on_flex_unavailable: batch`, what flex kept refusing goes to a batch job of the round).
            return make_engine(model, store, self.options, self.observer).run(source.items())

        return run_recorded(directory, manifest, run)

    def _closed_summary(self, directory: Path) -> EngineSummary:
        records = RunStore(directory).load_records()
        if self.options.budget is not None:
            self.options.budget.add_committed(records)  # paid before this invocation: it still counts
            # So do its realtime calls (flex, standard), which leave answers in its journal, not job records.
            self.options.budget.settle(0.0, realtime_spent(directory, self.options.budget))
        totals = RunManifest.load(directory).totals  # saved when the half finished
        if totals is not None:
            return EngineSummary(reason=StopReason.FINISHED, total_requests=0, jobs=totals.jobs, usage=totals.usage)
        usage = Usage()
        for record in records:
            usage.add(record.usage)
        return EngineSummary(reason=StopReason.FINISHED, total_requests=0, jobs=len(records), usage=usage)


def realtime_spent(directory: Path, budget: Budget) -> float:
    """What the realtime calls of a closed half cost: each input's journaled answer at the tier that served it, at
    the half's model's price in `budget`'s price table. Only the journal: a half's batch answers in results/ are its
    job records' (counted by `add_committed`). An answer that cannot be priced is refused, as a realtime engine
    refuses to start under a budget without the price (a spend counted as 0 would let the run pass its limit)."""
    if not (directory / JOURNAL_NAME).is_file():
        return 0.0
    manifest = RunManifest.load(directory)
    answers = {(e.statement_id, e.record.original_index): e.record for e in Journal(directory).read()}
    prices = getattr(budget.estimator, "prices", None)  # the shipped estimator's table, as RealtimeSpend reads it
    total = 0.0
    for record in answers.values():
        if record.usage is None:
            continue  # refused or failed calls are not billed
        cost = (
            prices.cost(manifest.model_name, manifest.provider, record.usage, tier=served_tier(record.service_tier))
            if isinstance(prices, PriceTable)
            else None
        )
        if cost is None:
            raise ConfigError(
                f"no price for model {manifest.model_name!r}, so its realtime answers in {directory} cannot be "
                f"counted against the spending limit; give its price in a price table (--prices FILE or "
                f"${PRICES_ENV}) or run without a limit"
            )
        total += cost
    return total


def _model_at(model: RoundModel | ModelOfRound, number: int, directory: Path) -> RoundModel:
    """The model that sends round `number`'s half in `directory`: the run's one model, or the one `model` gives
    for the round and the tier it started at (its `run.json`, when it has one: a started round keeps it)."""
    started = started_tier(RunManifest.load(directory)) if (directory / MANIFEST_NAME).is_file() else None
    if not isinstance(model, BatchedModel | RealtimeModel):
        return model(number, started)
    if started is not None and (started is Tier.BATCH) != isinstance(model, BatchedModel):
        # One model for every round, but this round started the other way (a run of `tier: auto` per round):
        # sending it now through the other engine would send its answered requests again.
        raise RunStateError(
            f"{directory} started {'through the Batch API' if started is Tier.BATCH else f'at tier {started.value}'}; "
            f"it cannot be continued {'realtime' if started is Tier.BATCH else 'through the Batch API'}: resume the "
            "experiment that started it (it sends each round as it started)"
        )
    return model
