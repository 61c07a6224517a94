"""An inputs run's outputs: `candidates.jsonl` (every proposal and its fate) and one inputs file per statement in the
original format. A statement's file holds its own kept inputs first, then those of each pair it is in (statements in
tension, `speceval.inputgen.pairs`), with the pair and the positions of its inputs in the file's metadata."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from speceval.atomic import atomic_write_bytes, atomic_write_json
from speceval.inputgen.pairs import PAIR_GENERATOR_TEMPLATE, PAIR_RATER_TEMPLATE, StatementPair, Target, pair_records
from speceval.inputgen.prompts import GENERATOR_TEMPLATE, RATER_TEMPLATE
from speceval.inputgen.records import CandidateRecord, InputsFile, InputsMetadata
from speceval.paths import safe_path
from speceval.spec import Statement


class KeptByTarget:
    """What the rounds decided, per target (a statement's or a pair's id): its kept records, rounds and shortfall."""

    def __init__(
        self,
        records: list[CandidateRecord],
        kept: dict[str, list[CandidateRecord]],
        rounds: dict[str, int],
        shortfalls: dict[str, str | None],
    ) -> None:
        self.records = records
        self.kept = kept
        self.rounds = rounds
        self.shortfalls = shortfalls


def templates(pairs: Sequence[StatementPair]) -> list[str]:
    """The prompt templates a run with these pairs uses (recorded in run.json and every inputs file)."""
    return [GENERATOR_TEMPLATE, RATER_TEMPLATE] + ([PAIR_GENERATOR_TEMPLATE, PAIR_RATER_TEMPLATE] if pairs else [])


def write_outputs(
    run_dir: Path,
    targets: Sequence[Target],
    decided: KeptByTarget,
    *,
    spec_path: Path,
    generator: str,
    rater: str,
    threshold: int,
    per_target: int,
    same_model: bool,
) -> None:
    """`candidates.jsonl` and `inputs/<statement_id>.json` of every statement a target names (atomic writes)."""
    lines = "".join(record.model_dump_json() + "\n" for record in decided.records)
    atomic_write_bytes(run_dir / "candidates.jsonl", lines.encode("utf-8"))
    stamp = datetime.now().isoformat(timespec="seconds")
    pairs = [t for t in targets if isinstance(t, StatementPair)]
    statements: dict[str, Statement] = {}
    for target in targets:
        for statement in [target.a, target.b] if isinstance(target, StatementPair) else [target]:
            statements.setdefault(statement.id, statement)
    for statement_id in statements:
        own = [t for t in targets if isinstance(t, Statement) and t.id == statement_id]
        mine = [p for p in pairs if statement_id in p.ids]
        gathered: list[Target] = [*own, *mine]
        kept = [record for target in gathered for record in decided.kept[target.id]]
        composition: dict[str, int] = {}
        for record in sorted(kept, key=lambda r: -(r.rating or 0)):
            composition[str(record.rating)] = composition.get(str(record.rating), 0) + 1
        shortfalls = [
            f"{t.id}: {decided.shortfalls[t.id]}" if isinstance(t, StatementPair) else str(decided.shortfalls[t.id])
            for t in gathered
            if decided.shortfalls[t.id]
        ]
        metadata = InputsMetadata(
            timestamp=stamp,
            evaluator_model=rater,
            rating_threshold=threshold,
            num_questions_target=per_target * len(gathered),
            final_question_count=len(kept),
            final_rating_composition=composition,
            source_file=str(Path(spec_path).resolve()),
            generator_model=generator,
            rounds=max(decided.rounds[t.id] for t in gathered),
            prompt_versions=templates(mine),
            same_model=same_model,
            shortfall_reason="; ".join(shortfalls) or None,
            pairs=pair_records(
                statement_id,
                len(decided.kept[statement_id]) if own else 0,
                [(p, len(decided.kept[p.id])) for p in mine],
            ),
        )
        atomic_write_json(
            safe_path(run_dir / "inputs", statement_id, ".json"),
            InputsFile(inputs=[r.text or "" for r in kept], metadata=metadata),
        )
