"""One comparison as the page's ranking samples show it (a record of short strings), and the bytes it takes there.

Below both the read-back of the comparisons the sample view weighs and the sample view (which picks and renders
records), as `speceval.analysis.rendering.samples.sample_record` is for verdicts.
"""

from __future__ import annotations

from speceval.analysis.reading.rows import RankingRow, VerdictDetail
from speceval.analysis.rendering.samples.sample_record import TRANSCRIPT_LIMIT, shown_text

_TEXTS = ("winner", "input", "output_a", "output_b", "explanation")
"""The fields of a record that are its comparison's own; the others come from its file."""


def pair_label(model: str, opponent: str) -> str:
    """The pair filter's value: both names, sorted (a comparison in either order belongs to it)."""
    return " vs ".join(sorted((model, opponent)))


def ranking_texts(row: RankingRow) -> dict[str, str]:
    """The comparison's own fields as the page shows them: its winner (A, B, tie or the outcome), its input, both
    answers (a conversation's transcript when there is one) and the judge's explanation."""
    detail = row.detail or VerdictDetail()
    judged = row.outcome == "judged" and row.rank is not None
    winner = {1: "A", -1: "B", 0: "tie"}[row.rank] if judged else row.outcome  # type: ignore[index]  # not None
    return {
        "winner": str(winner),
        "input": shown_text(row.input),
        "output_a": _answer_shown(detail.transcript_a, detail.output_a),
        "output_b": _answer_shown(detail.transcript_b, detail.output_b),
        "explanation": shown_text(detail.explanation or detail.parse_error or (detail.raw_judge_response or "")),
    }


def ranking_record(
    judge: str, model_a: str, model_b: str, variation: str, run: int, statement: str, texts: dict[str, str]
) -> dict[str, str]:
    """The record the page embeds: the fields of the comparison's file, then its own (`ranking_texts`)."""
    return {
        "judge": judge,
        "pair": pair_label(model_a, model_b),
        "model_a": model_a,
        "model_b": model_b,
        "variation": variation,
        "run": str(run),
        "statement": statement,
        "winner": texts["winner"],
        "input": texts["input"],
        "output_a": texts["output_a"],
        "output_b": texts["output_b"],
        "explanation": texts["explanation"],
    }


def _answer_shown(transcript: str | None, answer: str | None) -> str:
    """A compared answer as the page shows it: its conversation's transcript when it has one."""
    return shown_text(transcript, TRANSCRIPT_LIMIT) if transcript else shown_text(answer or "")
