"""`BatchedRankingPipeline`: a judge compares candidates two at a time, in both orders, on every shared input.

Output (`speceval.judging.files`, docs/architecture.md#on-disk-formats), one directory per ORDERED pair (A is shown
first):

    {output_dir_base}/spec_{spec}/judge_{judge}/{A}x{B}/
        run.json, metadata/, preprocessed/, judge_responses/    the judge run
        results/<statement_id>.json    {metadata: {model_a, model_b, ...}, rankings: [{input, output_a, output_b,
                                        rank, winner, outcome, raw_judge_response, ...}]}
        summary.json                   outcomes and A wins / B wins / ties (judged only)
    {output_dir_base}/spec_{spec}/judge_{judge}/position_consistency.json

Labels: each candidate's name travels with its own directory (`Candidate`), and output_a is always read from
model_a's directory, so the order of directories in a config cannot mislabel anything. The pair directory name
is only a label: `model_a` and `model_b` in every results file are authoritative (never split `AxB` on 'x').

Inputs are paired per pair of candidates and per statement: an input is judged for (A, B) when both answered it
successfully (matched by input text; repeated texts pair in order). Each pair's task index is the input's
`original_index` in the results file of the pair member whose name sorts first, so the task list is
deterministic, the same in both orders (AxB index i and BxA index i are the same input), and stable when a
resumed generation adds answers. It is the judge requests' `original_index`. The tasks are built and their prompts
rendered one statement at a time, from both candidates' results files, when the engine or the verdict files ask
(`PairTasks`): a pair holds its task indices, not its answers or prompts.

`rank` is 1 (A better), -1 (B better), 0 (a real tie), or null whenever there is no verdict (`outcome` says why).

Conversations: when the answers are conversations', the judge compares the two transcripts of the same script
(every message of each, in blocks of their own: `speceval.judging.transcripts`), and each entry keeps both as
`conversation_a` / `conversation_b`.
"""

from __future__ import annotations

import itertools
import logging
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from speceval.atomic import atomic_write_bytes, atomic_write_json
from speceval.batch.progress import EngineObserver, EngineSummary
from speceval.batch.records import SCHEMA_VERSION
from speceval.engines.factory import AnyModel
from speceval.errors import ConfigError
from speceval.judging.files import JudgeOutcome, RankingEntry, RankingFile, RankingMetadata
from speceval.judging.prompts import CURRENT, render_ranking
from speceval.judging.transcripts import Transcript, render_transcript_ranking
from speceval.judging.verdicts import Unparsed, parse_ranking
from speceval.paths import safe_filename, safe_path
from speceval.pipelines.answer_files import Answer
from speceval.pipelines.answer_prompts import SharedPrefixes
from speceval.pipelines.candidates import Candidate, CandidateAnswers, load_answers, refuse_mixed_scripts
from speceval.pipelines.judge_pipeline import JudgePipeline
from speceval.pipelines.judge_run import (
    JudgeSettings,
    JudgeTarget,
    check_resumable,
    judge_response,
)
from speceval.pipelines.judge_setup import PromptSetup, judge_salt, prompt_setup
from speceval.pipelines.position import PositionReport, position_consistency

logger = logging.getLogger(__name__)


class PairSummary(BaseModel):
    """`summary.json` of an ordered pair: outcomes, and wins and ties among judged comparisons only."""

    schema_version: int = SCHEMA_VERSION
    model_a: str
    model_b: str
    run: int | None = None  # the candidates' run (an Inspect log's epoch), when their answers say
    judge: str
    spec: str
    prompt_version: str
    outcomes: dict[JudgeOutcome, int]
    a_wins: int = 0
    b_wins: int = 0
    ties: int = 0


@dataclass(frozen=True)
class Task:
    """One input both candidates of a pair answered."""

    statement_id: str
    index: int
    input_text: str
    answer_a: Answer
    answer_b: Answer

    @property
    def transcripts(self) -> tuple[Transcript, Transcript] | None:
        """Both answers as transcripts when either is a conversation's (the judge then compares transcripts)."""
        a, b = self.answer_a, self.answer_b
        if a.transcript is None and b.transcript is None:
            return None
        return (
            a.transcript or Transcript.single(a.input_text, a.output_text),
            b.transcript or Transcript.single(b.input_text, b.output_text),
        )


class PairTasks(SharedPrefixes):
    """The shared inputs of two candidates as tasks (A = `first`, B = `second`), read per statement on demand.

    Like the compliance judge's `AnswerPrompts`, it is the pair's `ItemSource`: construction keeps only each
    statement's task indices (8 bytes each), and a statement's tasks, and their prompts rendered by `render`, are
    built again from both candidates' answers on disk when the engine or the verdict files ask. A pair of
    candidates with a million answers each never holds their answers or their prompts.
    """

    def __init__(self, first: CandidateAnswers, second: CandidateAnswers, render: Callable[[Task], str]):
        self.first, self.second = first, second
        self._render = render
        self.unpaired = [0, 0]  # answers of the first, of the second, to an input the other did not answer
        shared = set(first.statement_ids) & set(second.statement_ids)
        # Sorted by statement: requests sharing a prompt prefix sit together in a job.
        self._indices = {
            statement_id: array("q", (task.index for task in self.tasks(statement_id, count=True)))
            for statement_id in sorted(shared)
        }
        for side, answers in enumerate((first, second)):
            self.unpaired[side] += sum(len(answers.read(s)) for s in set(answers.statement_ids) - shared)

    def tasks(self, statement_id: str, count: bool = False) -> list[Task]:
        """One statement's tasks, by index (read from both candidates' results files); `count`: add the answers
        only one side has to `unpaired`."""
        canonical = self.first if self.first.candidate.name <= self.second.candidate.name else self.second
        mine, theirs = _keyed(self.first.read(statement_id)), _keyed(self.second.read(statement_id))
        if count:
            self.unpaired[0] += len(mine.keys() - theirs.keys())
            self.unpaired[1] += len(theirs.keys() - mine.keys())
        tasks = []
        for key in mine.keys() & theirs.keys():
            a, b = mine[key], theirs[key]
            index = a.original_index if canonical is self.first else b.original_index
            tasks.append(Task(statement_id, index, a.input_text, a, b))
        return sorted(tasks, key=lambda task: task.index)

    def statement_counts(self) -> list[tuple[str, array[int]]]:
        """(statement id, task indices) per shared statement, in run order (the `ItemSource` protocol)."""
        return list(self._indices.items())

    def texts(self, statement_id: str) -> dict[int, str]:
        """task index → ranking prompt for one statement."""
        return {task.index: self._render(task) for task in self.tasks(statement_id)}

    def source_hashes(self, statement_id: str) -> tuple[str, str]:
        """Both candidates' results files of the statement (`JudgeSource`: what run.json's hash is taken of)."""
        return self.first.source_sha256(statement_id), self.second.source_sha256(statement_id)


@dataclass
class OrderedPair:
    """Candidate A (shown first) and B, their tasks and their run directory."""

    a: Candidate
    b: Candidate
    tasks: PairTasks
    target: JudgeTarget

    @property
    def run(self) -> int | None:
        """The pair's run when its answers say (an Inspect log's epoch; comparable candidates share it)."""
        return self.a.run if self.a.run is not None else self.b.run


@dataclass(frozen=True)
class _Rank:
    """What position consistency needs of a ranking entry (not its texts: it is kept for every comparison)."""

    rank: int | None


def _keyed(answers: list[Answer]) -> dict[tuple[str, int], Answer]:
    """Answers keyed by (input text, occurrence) so repeated inputs pair in order."""
    seen: Counter[str] = Counter()
    keyed = {}
    for answer in answers:
        keyed[(answer.input_text, seen[answer.input_text])] = answer
        seen[answer.input_text] += 1
    return keyed


class BatchedRankingPipeline(JudgePipeline):
    """Judge every ordered pair of candidates on their shared inputs, one engine per ordered pair."""

    kind: ClassVar[str] = "ranking"

    def __init__(self, settings: JudgeSettings, candidates: list[Candidate]):
        if len(candidates) < 2:
            raise ConfigError(f"ranking needs at least two candidates, got {len(candidates)}")
        super().__init__(settings, settings.judge_model)
        refuse_mixed_scripts(candidates)
        answers = [load_answers(candidate, self.spec) for candidate in candidates]
        self.salt = judge_salt(self.output_dir)
        self.pairs = [
            self._pair(first, second)
            for first, second in itertools.permutations(answers, 2)
            if _comparable(first.candidate, second.candidate)
        ]
        if not self.pairs:
            raise ConfigError("ranking needs two different candidates; these are runs of one model")
        seen: dict[Path, tuple[str, str]] = {}
        for pair in self.pairs:
            if pair.target.run_dir in seen:
                raise ConfigError(
                    f"the pairs {seen[pair.target.run_dir]} and {(pair.a.name, pair.b.name)} map to the same "
                    f"directory {pair.target.run_dir}; rename a candidate in the `candidates` mapping"
                )
            seen[pair.target.run_dir] = (pair.a.name, pair.b.name)
        self.skipped = {_label(a.candidate): dict(a.skipped) for a in answers}
        self.not_compared = _not_compared(answers, self.pairs)
        for line in self.not_compared:
            logger.warning("not ranked: %s", line)
        for pair in self.pairs:
            check_resumable(pair.target, self.spec.sha256)

    @property
    def targets(self) -> list[JudgeTarget]:
        """The run directories, one per ordered pair."""
        return [pair.target for pair in self.pairs]

    @property
    def request_count(self) -> int:
        """Judge requests over all ordered pairs."""
        return sum(pair.target.request_count for pair in self.pairs)

    def pair_dir(self, a: Candidate, b: Candidate) -> Path:
        """`{output}/spec_{spec}/judge_{judge}/{A}x{B}` (a label only: results files name the models)."""
        return self.output_dir / safe_filename(f"{a.path_name}x{b.path_name}")

    def run(
        self,
        model: AnyModel | None = None,
        observer_for: Callable[[JudgeTarget], EngineObserver | None] | None = None,
    ) -> tuple[list[EngineSummary], list[PairSummary], PositionReport]:
        """Submit (or resume) every ordered pair's jobs, poll them in one loop, then write all verdict files.

        Without `model`, the judge the settings describe is built (against the in-process emulator when
        `offline`); a model given must be that judge (name, provider and `params`), or `ModelMismatchError`.
        """
        summaries = self.judge_all(self.targets, model, observer_for)
        pair_summaries, report = self.write_verdicts()
        return summaries, pair_summaries, report

    def write_verdicts(self) -> tuple[list[PairSummary], PositionReport]:
        """(Re)build every pair's results and summary from the judge's answers, and `position_consistency.json`."""
        pair_summaries = []
        entries: dict[tuple[str, str, int | None], dict[tuple[str, int], _Rank]] = {}
        for pair in self.pairs:
            summary, pair_entries = self._write_pair(pair)
            pair_summaries.append(summary)
            # Keyed by run too: epoch k of a pair of Inspect logs is a pair of its own, never overwriting epoch j.
            entries[(pair.a.name, pair.b.name, pair.run)] = pair_entries
        versions = sorted({pair.target.identity["prompt_version"] for pair in self.pairs})
        report = position_consistency(
            entries, judge=self.settings.judge_model, spec=self.spec_name, prompt_version=" + ".join(versions)
        )
        atomic_write_json(self.output_dir / "position_consistency.json", report)
        return pair_summaries, report

    # -- helpers ------------------------------------------------------------------------------------------

    def _pair(self, first: CandidateAnswers, second: CandidateAnswers) -> OrderedPair:
        a, b = first.candidate, second.candidate
        run_dir = self.pair_dir(a, b)
        setup = prompt_setup(run_dir, CURRENT["ranking"], self.salt)
        tasks = PairTasks(first, second, lambda task: self._prompt(task, setup))
        conversations = first.has_conversations or second.has_conversations
        identity: dict[str, Any] = {
            "pipeline": "ranking",
            "prompt_version": setup.template.value,
            "judge": self.settings.judge_model,
            "provider": self.provider,
            "model_a": a.name,
            "model_b": b.name,
            # Only pairs of conversations record it, so a plain pair judged before resumes as it was.
            **({"transcript_prompt_version": CURRENT["ranking_transcript"].value} if conversations else {}),
            "temperature": self.settings.params.temperature,
            "max_tokens": self.settings.params.max_tokens,
        }
        target = self._run_target(run_dir, tasks, f"{a.directory.resolve()} | {b.directory.resolve()}", identity, setup)
        return OrderedPair(a, b, tasks, target)

    def _prompt(self, task: Task, setup: PromptSetup) -> str:
        statement = self.spec[task.statement_id]
        transcripts = task.transcripts
        if transcripts is not None:
            return render_transcript_ranking(statement, *transcripts, salt=setup.salt)
        return render_ranking(
            statement,
            task.input_text,
            task.answer_a.output_text,
            task.answer_b.output_text,
            template=setup.template,
            salt=setup.salt,
        )

    def _write_pair(self, pair: OrderedPair) -> tuple[PairSummary, dict[tuple[str, int], _Rank]]:
        store = pair.target.store
        summary = PairSummary(
            model_a=pair.a.name,
            model_b=pair.b.name,
            run=pair.run,
            judge=self.settings.judge_model,
            spec=self.spec_name,
            prompt_version=pair.target.identity["prompt_version"],
            outcomes={outcome: 0 for outcome in JudgeOutcome},
        )
        all_entries: dict[tuple[str, int], _Rank] = {}
        for statement_id, _ in pair.tasks.statement_counts():  # one statement's texts at a time
            responses = {record.original_index: record for record in store.load_results(statement_id)}
            entries = [self._entry(task, responses.get(task.index)) for task in pair.tasks.tasks(statement_id)]
            for entry in entries:
                summary.outcomes[entry.outcome] += 1
                summary.a_wins += entry.rank == 1
                summary.b_wins += entry.rank == -1
                summary.ties += entry.rank == 0
                all_entries[(statement_id, entry.index)] = _Rank(entry.rank)
            metadata = RankingMetadata(
                model_a=pair.a.name,
                model_b=pair.b.name,
                judge=self.settings.judge_model,
                spec=self.spec_name,
                statement_id=statement_id,
                prompt_version=pair.target.identity["prompt_version"],
                batch_ids=sorted({e.batch_id for e in entries if e.batch_id}),
                candidate_dir_a=str(pair.a.directory),
                candidate_dir_b=str(pair.b.directory),
                run=pair.run,
                answers_synthetic=pair.a.offline or pair.b.offline or None,  # written when true (see compliance)
            )
            path = safe_path(pair.target.run_dir / "results", statement_id, ".json")
            # A file of plain answers keeps the exact shape it had before conversations existed.
            plain = all(e.conversation_a is None and e.conversation_b is None for e in entries)
            exclude: dict[str, Any] = {"rankings": {"__all__": {"conversation_a", "conversation_b"}}} if plain else {}
            # Written when set, as compliance files' `run` and `answers_synthetic`: a file of one run keeps its shape.
            exclude["metadata"] = {k for k in ("run", "answers_synthetic") if getattr(metadata, k) is None}
            shown = RankingFile(metadata=metadata, rankings=entries).model_dump_json(indent=2, exclude=exclude)
            atomic_write_bytes(path, (shown + "\n").encode("utf-8"))
        atomic_write_json(pair.target.run_dir / "summary.json", summary)
        return summary, all_entries

    def _entry(self, task: Task, record: Any) -> RankingEntry:
        response = judge_response(record, self.settings.engine.max_attempts)
        entry = RankingEntry(
            index=task.index,
            input=task.input_text,
            output_a=task.answer_a.output_text,
            output_b=task.answer_b.output_text,
            outcome=response.outcome or JudgeOutcome.JUDGED,
            raw_judge_response=response.raw,
            error=response.error,
            original_index_a=task.answer_a.original_index,
            original_index_b=task.answer_b.original_index,
            batch_id=response.batch_id,
        )
        transcripts = task.transcripts
        if transcripts is not None:
            entry.conversation_a, entry.conversation_b = (list(t.messages) for t in transcripts)
        if response.outcome is not None:
            return entry
        verdict = parse_ranking(response.raw)
        if isinstance(verdict, Unparsed):
            return entry.model_copy(update={"outcome": JudgeOutcome.UNPARSED, "parse_error": verdict.reason})
        return entry.model_copy(
            update={"rank": verdict.rank, "winner": verdict.winner, "explanation": verdict.explanation}
        )


def _label(candidate: Candidate) -> str:
    return candidate.name + (f" epoch {candidate.run}" if candidate.run is not None else "")


def _not_compared(answers: list[CandidateAnswers], pairs: list[OrderedPair]) -> list[str]:
    """What no comparison covers, in words with counts: a run (an Inspect log's epoch) no other model has, and
    per pair the answers to inputs only one side answered."""
    said = []
    for one in answers:
        c = one.candidate
        others = [o.candidate for o in answers if o.candidate.name != c.name]
        if c.run is not None and others and not any(_comparable(c, o) for o in others):
            total = sum(len(one.read(s)) for s in one.statement_ids)
            said.append(f"{_label(c)}: no other model has epoch {c.run} ({total} answer(s))")
    for pair in pairs:
        if pair.a.name < pair.b.name and any(pair.tasks.unpaired):
            only_a, only_b = pair.tasks.unpaired
            said.append(
                f"{_label(pair.a)} vs {_label(pair.b)}: {only_a} answer(s) of {_label(pair.a)} and {only_b} of "
                f"{_label(pair.b)} to inputs the other did not answer"
            )
    return said


def _comparable(a: Candidate, b: Candidate) -> bool:
    """Whether two candidates are ranked against each other: runs of one model (an Inspect log's epochs) never are,
    and a run only against the same run of another model (epoch k against epoch k)."""
    return a.name != b.name and (a.run is None or b.run is None or a.run == b.run)
