"""The judge card's files (issue 44), under `<experiment output>/_judge_card/`:

    _judge_card/<spec>/paraphrases.json            `Paraphrases`: each statement reworded K ways (and by whom)
    _judge_card/<spec>/paraphrase_run/             the paraphraser's generation run (batch engine, resumable)
    _judge_card/<spec>/wording_<k>.jsonl           the spec with every statement's text in its k-th wording
    _judge_card/<spec>/<variation>/run<r>/<judge>/<candidate>/
        card.json                                  `CardSample`: which answers were drawn, and whose verdicts
        sample/results/<statement_id>.json         the drawn answers (the candidate's records, unchanged)
        retest/spec_*/judge_*/<candidate>/         the judge's requests on them, re-sent unchanged
        wording_<k>/spec_*/judge_*/<candidate>/    the same answers judged under wording k

The folder's name starts with '_' as `_canaries` does: the report's fold skips it (its verdicts are checks of the
judge, never a candidate's rate), and the card reads it on its own (`speceval.analysis.reading.card_verdicts`).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field

from speceval.atomic import atomic_write_bytes
from speceval.batch.records import SCHEMA_VERSION
from speceval.errors import InputError
from speceval.json_keys import read_optional_record

CARD_DIR = "_judge_card"
CARD_FILE = "card.json"
PARAPHRASES_FILE = "paraphrases.json"
SAMPLE, RETEST = "sample", "retest"


def wording_folder(k: int) -> str:
    """The folder (and spec file stem) of the k-th wording, 1-based."""
    return f"wording_{k}"


class CardSample(BaseModel):
    """`card.json`: the answers the card drew from one judge's verdicts on one candidate, and where those are."""

    schema_version: int = SCHEMA_VERSION
    spec: str
    judge: str = Field(description="the judge entry's name in folders and tables")
    candidate: str
    variation: str
    run: int
    verdicts_dir: str = Field(description="the judge's own candidate folder (its results/ are the first verdicts)")
    share: float
    seed: int
    drawn: dict[str, list[int]] = Field(description="statement id → original_index of every answer drawn")
    wordings: int = 0
    temperature: float = Field(description="the judge's temperature (0: a retest measures the provider's noise)")

    def save(self, folder: Path) -> None:
        """Write `card.json` into `folder` (atomically)."""
        atomic_write_bytes(folder / CARD_FILE, (self.model_dump_json(indent=2) + "\n").encode("utf-8"))


class Paraphrases(BaseModel):
    """`paraphrases.json`: each statement's rewordings, shown in the report."""

    schema_version: int = SCHEMA_VERSION
    spec: str
    source: str = Field(description="`model <name>` (written through the batch engine) or `file <path>` (the user's)")
    wordings: dict[str, list[str]] = Field(description="statement id → its K rewordings, in order")

    def save(self, folder: Path) -> None:
        """Write `paraphrases.json` into `folder` (atomically)."""
        atomic_write_bytes(folder / PARAPHRASES_FILE, (self.model_dump_json(indent=2) + "\n").encode("utf-8"))


def read_user_paraphrases(
    path: Path, statements: list[str], count: int, known: set[str] | None = None
) -> dict[str, list[str]]:
    """A user's rewordings: a JSON object statement id → a list of `count` non-empty texts, for every statement of
    `statements`; an id outside `known` (default: `statements`; one file may serve several specs) and anything else
    is refused naming the file and the statement."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(path, f"not a readable JSON file: {exc}", field="judge_card.paraphrases_file") from None
    if not isinstance(data, dict):
        raise InputError(
            path, "expected an object: statement id → list of rewordings", field="judge_card.paraphrases_file"
        )
    found: dict[str, list[str]] = {}
    for statement in statements:
        texts = data.get(statement)
        if (
            not isinstance(texts, list)
            or len(texts) != count
            or not all(isinstance(t, str) and t.strip() for t in texts)
        ):
            raise InputError(
                path,
                f"statement {statement!r} needs a list of {count} non-empty rewordings (judge_card.paraphrases)",
                field=statement,
            )
        found[statement] = list(texts)
    unknown = sorted(set(data) - (known if known is not None else set(statements)))
    if unknown:
        raise InputError(path, f"{unknown[0]!r} is not a statement the experiment judges", field=unknown[0])
    return found


SHARED_FILE = "shared_with.json"
"""Beside a canary folder's `results/`: the other judge entries its verdicts stand for (`CanaryShare`)."""


class CanaryShare(BaseModel):
    """`_canaries/judge_<j>/shared_with.json`: the spec's examples are judged once per model and mode (scope means
    nothing for a single example response), and these verdicts are also the canary verdicts of `shared_with`."""

    schema_version: int = SCHEMA_VERSION
    judge: str
    shared_with: list[str]

    def save(self, canary_dir: Path) -> None:
        """Write it beside the canary folder's `results/` (atomically)."""
        atomic_write_bytes(canary_dir / SHARED_FILE, (self.model_dump_json(indent=2) + "\n").encode("utf-8"))


def canary_share(canary_dir: Path) -> CanaryShare | None:
    """The sharing recorded for a canary folder (None: its verdicts are its own entry's only)."""
    return read_optional_record(canary_dir / SHARED_FILE, CanaryShare, "not a canary share record of this version")
