"""The judge card's re-sent verdicts read back beside the first ones (layout: `speceval.judging.card_files`).

For each `card.json`: every drawn answer's first verdict (from the judge's own results files), its retest verdict
and its verdict under each wording, matched by the answer's `original_index` (and `turn` for a turn judge). A verdict
is its value as the judge's mode gives it (compliant, rating or category); an answer without a first verdict (failed,
unparsed) is not a card item, and a card item whose retest or wording did not come back is left out of that measure
only (counted in `missing`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from speceval.judging.card_files import (
    CARD_DIR,
    CARD_FILE,
    PARAPHRASES_FILE,
    RETEST,
    CardSample,
    Paraphrases,
    wording_folder,
)
from speceval.paths import safe_filename, safe_path

logger = logging.getLogger(__name__)

Verdict = bool | int | str
ItemKey = tuple[int, int | None]


@dataclass
class CardItem:
    """One drawn answer: its statement and input (the cluster), and the judge's verdicts on it."""

    statement_id: str
    input: str
    first: Verdict
    retest: Verdict | None
    wordings: list[Verdict | None]


@dataclass
class CardVerdicts:
    """Every drawn answer of one judge entry on one spec, over its candidates, variations and runs."""

    spec: str
    judge: str
    wordings: int = 0
    temperatures: set[float] = field(default_factory=set)
    items: list[CardItem] = field(default_factory=list)
    missing: int = 0


def card_verdicts(roots: Sequence[Path]) -> dict[tuple[str, str], CardVerdicts]:
    """(spec, judge) → its card's verdicts, from every `card.json` under `roots`."""
    found: dict[tuple[str, str], CardVerdicts] = {}
    for root in roots:
        for path in sorted(Path(root).rglob(CARD_FILE)):
            if CARD_DIR not in path.parts:
                continue
            try:
                card = CardSample.model_validate_json(path.read_bytes())
            except (OSError, ValueError) as exc:
                logger.warning("skipped %s: not a judge card sample (%s)", path, exc)
                continue
            entry = found.setdefault((card.spec, card.judge), CardVerdicts(card.spec, card.judge))
            entry.wordings = max(entry.wordings, card.wordings)
            entry.temperatures.add(card.temperature)
            _add(entry, card, path.parent)
    return found


def judged_dir(folder: Path, card: CardSample) -> Path:
    """The candidate folder a re-judging of `card` writes under `folder` (`retest/` or `wording_<k>/`)."""
    return (
        folder
        / f"spec_{safe_filename(card.spec)}"
        / f"judge_{safe_filename(card.judge.replace('/', '-'))}"
        / safe_filename(card.candidate)
    )


def _add(entry: CardVerdicts, card: CardSample, folder: Path) -> None:
    first_dir = Path(os.path.normpath(folder / card.verdicts_dir))
    retest_dir = judged_dir(folder / RETEST, card)
    wording_dirs = [judged_dir(folder / wording_folder(k), card) for k in range(1, card.wordings + 1)]
    for statement_id, indices in sorted(card.drawn.items()):
        first = _verdicts(first_dir, statement_id)
        retest = _verdicts(retest_dir, statement_id)
        worded = [_verdicts(d, statement_id) for d in wording_dirs]
        wanted = set(indices)
        for key, (text, verdict) in sorted(first.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
            if key[0] not in wanted:
                continue
            again = retest.get(key)
            others = [w.get(key) for w in worded]
            entry.missing += (again is None) + sum(o is None for o in others)
            entry.items.append(
                CardItem(
                    statement_id=statement_id,
                    input=text,
                    first=verdict,
                    retest=again[1] if again is not None else None,
                    wordings=[o[1] if o is not None else None for o in others],
                )
            )


def _verdicts(candidate_dir: Path, statement_id: str) -> dict[ItemKey, tuple[str, Verdict]]:
    """(original_index, turn) → (input, verdict) of one judged results file (none when absent)."""
    path = safe_path(candidate_dir / "results", statement_id, ".json")
    if not path.is_file():
        return {}
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        logger.warning("judge card: %s is unreadable (%s); its verdicts are left out", path, exc)
        return {}
    found: dict[ItemKey, tuple[str, Verdict]] = {}
    for record in document.get("results", []) if isinstance(document, dict) else []:
        value = next((record.get(k) for k in ("compliant", "rating", "category") if record.get(k) is not None), None)
        index = record.get("original_index")
        if record.get("outcome") == "judged" and value is not None and isinstance(index, int):
            found[(index, record.get("turn"))] = (str(record.get("input", "")), value)
    return found


def paraphrase_sets(roots: Sequence[Path]) -> list[Paraphrases]:
    """Every spec's rewordings the card judged under (`paraphrases.json`), to be shown beside the card."""
    found = []
    for root in roots:
        for path in sorted(Path(root).rglob(PARAPHRASES_FILE)):
            if CARD_DIR in path.parts:
                try:
                    found.append(Paraphrases.model_validate_json(path.read_bytes()))
                except (OSError, ValueError) as exc:
                    logger.warning("skipped %s: not a rewordings file (%s)", path, exc)
    return found
