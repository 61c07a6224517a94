"""What the rounds of an inputs run decided: `RoundState` reads each round's proposals and ratings from disk, drops
duplicates and keeps the best.

Split from `speceval.inputgen.pipeline`, which sends each round's requests and hands the answers on disk to this
state; everything here is derived from those answers again on every run, so a resumed run decides the same.
"""

from __future__ import annotations

from speceval.batch.store import RunStore
from speceval.inputgen.config import InputGenerationConfig
from speceval.inputgen.dedup import NEAR, DuplicateIndex, jaccard, words
from speceval.inputgen.pairs import Target, target_rater_prompt
from speceval.inputgen.records import CandidateRecord, Fate
from speceval.inputgen.schemas import Proposals, parse_proposals, parse_rating
from speceval.spec import Specification
from speceval.wire.prompt import PromptItem


class RoundState:
    """Everything decided so far, rebuilt from the answers on disk round by round."""

    def __init__(self, config: InputGenerationConfig, spec: Specification, targets: list[Target]) -> None:
        self.config = config
        self.rounds = 0
        self.records: list[CandidateRecord] = []
        self.kept: dict[str, list[str]] = {t.id: [] for t in targets}
        self.kept_records: dict[str, list[CandidateRecord]] = {t.id: [] for t in targets}
        self.rounds_of: dict[str, int] = {t.id: 0 for t in targets}
        self.seen = DuplicateIndex()  # kept inputs of the whole spec, and this round's proposals sent for rating
        self.examples = [
            (words(e.user_query), f"spec example {s.id}#{n}")
            for s in spec.statements
            for n, e in enumerate(s.metadata.examples, start=1)
            if e.user_query
        ]
        self._pending: dict[str, list[CandidateRecord]] = {}

    def needed(self, statement_id: str) -> int:
        return self.config.per_statement - len(self.kept[statement_id])

    def propose(self, number: int, statements: list[Target], store: RunStore) -> list[PromptItem]:
        """Read the round's proposals, drop duplicates, and return the rating requests of the rest."""
        round_seen = DuplicateIndex()
        items: list[PromptItem] = []
        self._pending = {}
        for statement in statements:
            self.rounds_of[statement.id] += 1
            answers = {r.original_index: r for r in store.load_results(statement.id)}
            answer = answers.get(0)
            pending = self._pending.setdefault(statement.id, [])
            parsed = None if answer is None or answer.output_text is None else parse_proposals(answer.output_text)
            if not isinstance(parsed, Proposals):
                failed, why = (
                    (Fate.GENERATION_FAILED, str(answer.outcome) if answer else "no answer")
                    if parsed is None
                    else (Fate.UNPARSED, parsed)
                )
                self.records.append(
                    CandidateRecord(
                        statement_id=statement.id, round=number, proposal=0, text=None, fate=failed, parse_error=why
                    )
                )
                continue
            for index, proposal in enumerate(parsed.inputs):
                record = CandidateRecord(
                    statement_id=statement.id,
                    round=number,
                    proposal=index,
                    text=proposal.text,
                    kind=proposal.kind.value,
                    fate=Fate.NOT_RATED,
                )
                found = self.seen.duplicate_of(proposal.text) or round_seen.duplicate_of(proposal.text)
                copied = self._copied_example(proposal.text)
                if found is not None:
                    record.fate, record.measure, record.duplicate_of = Fate.DUPLICATE, found[0], found[1]
                elif copied is not None:
                    record.fate, record.measure, record.duplicate_of = Fate.COPIES_SPEC_EXAMPLE, "near", copied
                else:
                    round_seen.add(proposal.text, f"round {number} {statement.id}#{index}")
                    pending.append(record)
                    items.append(
                        PromptItem(
                            statement_id=statement.id,
                            original_index=index,
                            input_text=target_rater_prompt(statement, proposal.text),
                        )
                    )
                self.records.append(record)
        return items

    def rate(self, number: int, store: RunStore) -> None:
        """Read the round's ratings and keep the best at or above the threshold, up to each statement's need."""
        for statement_id, pending in self._pending.items():
            answers = {r.original_index: r for r in store.load_results(statement_id)}
            eligible = []
            for record in pending:
                answer = answers.get(record.proposal)
                if answer is None or answer.output_text is None:
                    continue  # stays not_rated
                rating = parse_rating(answer.output_text)
                if isinstance(rating, str):
                    record.fate, record.parse_error = Fate.UNPARSED, rating
                    continue
                record.rating, record.reason = rating.rating, rating.reason
                if rating.rating < self.config.rating_threshold:
                    record.fate = Fate.BELOW_THRESHOLD
                else:
                    eligible.append(record)
            eligible.sort(key=lambda r: (-(r.rating or 0), r.proposal))
            room = self.needed(statement_id)
            for record in eligible:
                if room > 0:
                    record.fate = Fate.KEPT
                    self.kept[statement_id].append(record.text or "")
                    self.kept_records[statement_id].append(record)
                    self.seen.add(record.text or "", f"kept {statement_id}#{len(self.kept[statement_id])}")
                    room -= 1
                else:
                    record.fate = Fate.OVER_TARGET

    def _copied_example(self, text: str) -> str | None:
        mine = words(text)
        for theirs, label in self.examples:
            if mine and jaccard(mine, theirs) >= NEAR:
                return label
        return None

    def shortfall(self, statement_id: str) -> str:
        mine = [r for r in self.records if r.statement_id == statement_id]
        counts: dict[str, int] = {}
        for record in mine:
            counts[record.fate.value] = counts.get(record.fate.value, 0) + 1
        described = ", ".join(f"{n} {fate}" for fate, n in sorted(counts.items()))
        return (
            f"{len(self.kept[statement_id])} of {self.config.per_statement} kept after "
            f"{self.rounds_of[statement_id]} round(s) of at most {self.config.max_rounds}: {described}"
        )
