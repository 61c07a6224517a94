"""`BatchedComplianceJudge`: a judge model decides whether each candidate answer complies with its statement.

Output (`speceval.judging.files`, docs/architecture.md#on-disk-formats), one directory per candidate:

    {output_dir_base}/spec_{spec}/judge_{judge}/{candidate}/
        run.json, metadata/, preprocessed/     the judge run (as for generation)
        judge_responses/<statement_id>.json    the engine's record of each judge request (raw answer, outcome)
        results/<statement_id>.json            {metadata, results: [{input, output, compliant, confidence,
                                                explanation, outcome, raw_judge_response, ...}]}
        summary.json                           counts per outcome, the compliance rate over judged answers only

A judge request's `original_index` is the judged answer's `original_index` in the candidate's results file, so
verdicts line up with answers whatever order the provider returns them in. Only candidate answers that
succeeded are judged; the others are skipped and counted (by generation outcome) in `summary.json`.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from speceval.batch.progress import EngineObserver, EngineSummary
from speceval.defaults import Mode, Scope
from speceval.engines.factory import AnyModel
from speceval.errors import ConfigError
from speceval.judging.canaries import CANARY_DIR, Canary, likert_correct, spec_canaries, without_example
from speceval.judging.files import (
    CanaryEntry,
    CanaryMetadata,
    ComplianceEntry,
    ComplianceMetadata,
    JudgeOutcome,
)
from speceval.judging.prompts import CURRENT, TemplateId, render_category, render_compliance
from speceval.judging.transcripts import render_transcript_compliance
from speceval.judging.verdicts import (
    category_schema,
)
from speceval.paths import safe_filename
from speceval.pipelines.answer_files import Answer
from speceval.pipelines.answer_prompts import AnswerPrompts, StatementPrompts, TurnPrompts, turn_request_index
from speceval.pipelines.candidates import Candidate, CandidateAnswers, load_answers
from speceval.pipelines.compliance_files import (
    CandidateSummary,
    compliance_entry,
    write_canary_file,
    write_compliance_file,
    write_summary,
)
from speceval.pipelines.judge_pipeline import JudgePipeline
from speceval.pipelines.judge_run import (
    JudgeSettings,
    JudgeTarget,
    check_resumable,
)
from speceval.pipelines.judge_setup import judge_salt, prompt_setup

logger = logging.getLogger(__name__)


class BatchedComplianceJudge(JudgePipeline):
    """Judge every succeeded answer of each candidate against its statement, one engine per candidate.

    Construction validates everything (spec, candidates' results files, resumability) before anything is sent.
    """

    kind: ClassVar[str] = "compliance"

    def __init__(
        self,
        settings: JudgeSettings,
        candidates: list[Candidate],
        mode: Mode | str = Mode.BINARY,
        *,
        canaries: bool = True,
        canary_statements: list[str] | None = None,
        categories: dict[str, str] | None = None,
        scope: Scope | str | None = None,
    ):
        """`canaries`: also judge the spec's example responses of `canary_statements` (default: every statement
        the candidates answered) once per judge (`spec_<spec>/_canaries/judge_<judge>/`), to check it (not in
        categories mode: an example response has no known category). `categories` (name → what it means): the
        categories of mode `categories`, answered by structured output (the category an enum). `scope`: what one
        verdict of a conversation covers (default `conversation`: the whole transcript; `turn`: one verdict per
        assistant turn); plain answers are judged as ever, one verdict each (with `turn` 1 under scope turn)."""
        mode = Mode.of(mode)
        if (mode is Mode.CATEGORIES) != bool(categories):
            raise ConfigError("a categorical judge needs `categories` (name: description), and only it takes them")
        self.categories = dict(categories or {})
        if self.categories:
            canaries = False
            settings = replace(
                settings,
                params=replace(
                    settings.params, response_schema=category_schema(list(self.categories)), schema_name="category"
                ),
            )
        super().__init__(settings, settings.judge_label)
        self.mode = mode
        self.scope = Scope.of(scope) if scope is not None else None
        # New directories use the current template; a directory judged before keeps its own (`prompt_setup`).
        self.template = CURRENT[f"compliance_{mode.value}"]
        self.answers = [load_answers(candidate, self.spec) for candidate in candidates]
        if canary_statements is None:
            canary_statements = sorted({s for answers in self.answers for s in answers.statement_ids})
        self.canaries: list[Canary] = spec_canaries(self.spec, canary_statements) if canaries else []
        self.salt = judge_salt(self.output_dir) if self.answers or self.canaries else ""
        self.targets = [self._target(answers) for answers in self.answers]
        self.canary_target: JudgeTarget | None = self._canary_target() if self.canaries else None
        seen: dict[Path, str] = {}
        if self.canary_target is not None:
            seen[self.canary_target.run_dir] = "(the spec's example responses)"
        for answers, target in zip(self.answers, self.targets, strict=True):
            if target.run_dir in seen:
                raise ConfigError(
                    f"candidates {seen[target.run_dir]!r} and {answers.candidate.name!r} map to the same output "
                    f"directory {target.run_dir}; rename one in the `candidates` mapping"
                )
            seen[target.run_dir] = answers.candidate.name
        if self.canary_target is not None:
            self.targets.append(self.canary_target)
        for target in self.targets:
            check_resumable(target, self.spec.sha256)

    @property
    def request_count(self) -> int:
        """Judge requests over all candidates."""
        return sum(target.request_count for target in self.targets)

    def candidate_dir(self, candidate: Candidate) -> Path:
        """`{output}/spec_{spec}/judge_{judge}/{candidate}`."""
        return self.output_dir / safe_filename(candidate.path_name)

    def run(
        self,
        model: AnyModel | None = None,
        observer_for: Callable[[JudgeTarget], EngineObserver | None] | None = None,
    ) -> tuple[list[EngineSummary], list[CandidateSummary]]:
        """Submit (or resume), poll all candidates' jobs in one loop, then write verdict files and summaries.

        Without `model`, the judge the settings describe is built (against the in-process emulator when
        `offline`); a model given must be that judge (name, provider and `params`), or `ModelMismatchError`.
        """
        engine_summaries = self.judge_all(self.targets, model, observer_for)
        return engine_summaries, self.write_verdicts()

    def write_verdicts(self) -> list[CandidateSummary]:
        """(Re)build every `results/<statement_id>.json` and `summary.json` from the judge's answers on disk (and
        the canaries' files); returns the candidates' summaries."""
        if self.canary_target is not None:
            self._write_canaries(self.canary_target)
        return [
            self._write_candidate(answers, target) for answers, target in zip(self.answers, self.targets, strict=False)
        ]

    # -- helpers ------------------------------------------------------------------------------------------

    def _scope(self, answers: CandidateAnswers) -> Scope | None:
        """What one verdict covers for this candidate: None for plain answers judged as ever (their files, prompts
        and run identity stay exactly what they were before conversations existed)."""
        if self.scope is Scope.TURN or answers.has_conversations:
            return self.scope or Scope.CONVERSATION
        return None

    def _target(self, answers: CandidateAnswers) -> JudgeTarget:
        candidate = answers.candidate
        run_dir = self.candidate_dir(candidate)
        setup = prompt_setup(run_dir, self.template, self.salt)
        mode = Mode.CATEGORIES if self.categories else self.mode

        def render(statement_id: str, answer: Answer, turn: int | None = None) -> str:
            if answer.transcript is not None:
                return render_transcript_compliance(
                    self.spec[statement_id],
                    answer.transcript,
                    mode=mode,
                    turn=turn,
                    categories=self.categories,
                    salt=setup.salt,
                )
            if self.categories:
                return render_category(
                    self.spec[statement_id], answer.input_text, answer.output_text, self.categories, salt=setup.salt
                )
            return render_compliance(
                self.spec[statement_id], answer.input_text, answer.output_text, template=setup.template, salt=setup.salt
            )

        # Statement by statement, rendered when the engine asks: requests sharing a prompt prefix sit next to
        # each other in a job, and no more than one statement's prompts are held at a time.
        scope = self._scope(answers)
        source = TurnPrompts(answers, render) if scope is Scope.TURN else AnswerPrompts(answers, render)
        identity = self._identity(candidate, setup.template, scope)
        return self._run_target(run_dir, source, str(candidate.directory.resolve()), identity, setup)

    def _canary_target(self) -> JudgeTarget:
        run_dir = self.output_dir.parent / CANARY_DIR / self.output_dir.name
        setup = prompt_setup(run_dir, self.template, self.salt)
        by_statement: dict[str, list[Canary]] = {}
        for canary in self.canaries:
            by_statement.setdefault(canary.statement_id, []).append(canary)

        def render(statement_id: str) -> dict[int, str]:
            return {
                canary.original_index: render_compliance(
                    without_example(self.spec[statement_id], canary.example),
                    canary.user_query,
                    canary.response,
                    template=setup.template,
                    salt=setup.salt,
                )
                for canary in by_statement[statement_id]
            }

        # Rendered per statement when asked, like the answers' prompts: a spec of thousands of statements has
        # thousands of examples.
        prompts = StatementPrompts(
            [(sid, [c.original_index for c in found]) for sid, found in by_statement.items()], render
        )
        identity = {
            "pipeline": "compliance_canaries",
            "prompt_version": setup.template.value,
            "mode": self.mode,
            "judge": self.settings.judge_model,
            "provider": self.provider,
            "temperature": self.settings.params.temperature,
            "max_tokens": self.settings.params.max_tokens,
        }
        return self._run_target(run_dir, prompts, f"{self.settings.spec_path} (examples)", identity, setup)

    def _write_canaries(self, target: JudgeTarget) -> None:
        by_statement: dict[str, list[Canary]] = {}
        for canary in self.canaries:
            by_statement.setdefault(canary.statement_id, []).append(canary)
        for statement_id, canaries in by_statement.items():
            responses = {record.original_index: record for record in target.store.load_results(statement_id)}
            entries = []
            for canary in canaries:
                entry = self._entry(
                    canary.user_query, canary.response, canary.original_index, responses.get(canary.original_index)
                )
                correct = None
                if entry.compliant is not None:
                    correct = entry.compliant == canary.expected_compliant
                elif entry.rating is not None:
                    correct = likert_correct(canary.kind, entry.rating)
                entries.append(
                    CanaryEntry(**entry.model_dump(), kind=canary.kind, example=canary.example, correct=correct)
                )
            write_canary_file(target.run_dir, self._statement_facts(target, statement_id, entries), entries)

    def _statement_facts(
        self, target: JudgeTarget, statement_id: str, entries: Sequence[ComplianceEntry]
    ) -> CanaryMetadata:
        """What a judged file of one statement says of its judging: all a canaries file's metadata says, and the
        part a compliance file's shares with it."""
        return CanaryMetadata(
            judge=self.settings.judge_label,
            spec=self.spec_name,
            statement_id=statement_id,
            prompt_version=target.identity["prompt_version"],
            mode=self.mode,
            batch_ids=sorted({e.batch_id for e in entries if e.batch_id}),
        )

    def _identity(self, candidate: Candidate, template: TemplateId, scope: Scope | None) -> dict[str, Any]:
        return {
            "pipeline": "compliance",
            "prompt_version": template.value,
            "mode": self.mode,
            **({"categories": self.categories} if self.categories else {}),
            **({"scope": scope.value, "transcript_prompt_version": self._transcript_template.value} if scope else {}),
            "judge": self.settings.judge_model,
            "provider": self.provider,
            "candidate": candidate.name,
            "temperature": self.settings.params.temperature,
            "max_tokens": self.settings.params.max_tokens,
        }

    @property
    def _transcript_template(self) -> TemplateId:
        return CURRENT[f"compliance_{'categories' if self.categories else self.mode}_transcript"]

    def _entries(
        self, scope: Scope | None, statement_answers: list[Answer], responses: dict[int, Any]
    ) -> Iterator[ComplianceEntry]:
        """The verdicts of one statement's answers: one per answer, or under scope turn one per assistant turn."""
        for answer in statement_answers:
            if scope is not Scope.TURN:
                entry = self._entry(
                    answer.input_text, answer.output_text, answer.original_index, responses.get(answer.original_index)
                )
                if answer.transcript is not None:
                    entry.conversation = list(answer.transcript.messages)
                    self._label_conversation(entry, answer)
                yield entry
                continue
            for turn in range(1, answer.turns + 1):
                output = answer.transcript.answer(turn) if answer.transcript is not None else answer.output_text
                entry = self._entry(
                    answer.input_text,
                    output,
                    answer.original_index,
                    responses.get(turn_request_index(answer.original_index, turn)),
                )
                entry.turn = turn
                if answer.transcript is not None:
                    # What the judge saw, in the verdict: a reviewer reads the pushback a turn answers beside it.
                    # (A conversation of T turns is written T times over in part: T(T+1) messages in place of 2T.)
                    entry.conversation = list(answer.transcript.until(turn).messages)
                    self._label_conversation(entry, answer)
                yield entry

    def _label_conversation(self, entry: ComplianceEntry, answer: Answer) -> None:
        entry.prompt_version = self._transcript_template.value
        entry.conversation_id = answer.conversation_id
        entry.ended_by = answer.ended_by

    def _write_candidate(self, answers: CandidateAnswers, target: JudgeTarget) -> CandidateSummary:
        candidate = answers.candidate
        store = target.store
        scope = self._scope(answers)
        summary = CandidateSummary(
            model=candidate.name,
            judge=self.settings.judge_label,
            spec=self.spec_name,
            prompt_version=target.identity["prompt_version"],
            mode=self.mode,
            outcomes={outcome: 0 for outcome in JudgeOutcome},
            skipped_answers=dict(answers.skipped),
            skipped_by_statement={sid: dict(c) for sid, c in answers.skipped_by_statement.items() if c},
            scope=Scope.TURN if scope is Scope.TURN else None,
        )
        ratings: Counter[int] = Counter()
        for statement_id in answers.statement_ids:
            statement_answers = answers.read(statement_id)
            responses = {record.original_index: record for record in store.load_results(statement_id)}
            entries = []
            for entry in self._entries(scope, statement_answers, responses):
                summary.outcomes[entry.outcome] += 1
                if entry.compliant is not None:
                    summary.compliant += entry.compliant
                    summary.non_compliant += not entry.compliant
                if entry.rating is not None:
                    ratings[entry.rating] += 1
                entries.append(entry)
            metadata = ComplianceMetadata(
                **self._statement_facts(target, statement_id, entries).model_dump(),
                model=candidate.name,
                candidate_dir=str(candidate.directory),
                run=candidate.run,
                answers_synthetic=candidate.offline or None,  # written when true: a provider's keep their shape
                categories=list(self.categories) or None,
                scope=scope,
                transcript_prompt_version=self._transcript_template.value if scope else None,
            )
            write_compliance_file(target.run_dir, metadata, entries)
        judged_binary = summary.compliant + summary.non_compliant
        summary.compliance_rate = summary.compliant / judged_binary if judged_binary else None
        summary.ratings = dict(sorted(ratings.items()))
        total = sum(ratings.values())
        summary.mean_rating = sum(r * n for r, n in ratings.items()) / total if total else None
        write_summary(target.run_dir, summary)
        return summary

    def _entry(self, input_text: str, output_text: str, index: int, record: Any) -> ComplianceEntry:
        return compliance_entry(
            record,
            input_text,
            output_text,
            index,
            mode=self.mode,
            categories=list(self.categories),
            max_attempts=self.settings.engine.max_attempts,
        )
