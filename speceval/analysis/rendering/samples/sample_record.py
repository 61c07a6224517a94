"""One verdict as the page's sample view shows it (a record of short strings), and the bytes it takes there.

Below both the sample view (which picks and renders records) and the read-back of the verdicts it weighs, so
neither imports the other for it.
"""

from __future__ import annotations

import json

from speceval.analysis.reading.rows import ComplianceRow
from speceval.inputs.script import ChatMessage

TEXT_LIMIT = 1_500
"""Characters of one input, answer or explanation shown in the page; the rest is cut with a note (the export has
every character)."""


TRANSCRIPT_LIMIT = 4 * TEXT_LIMIT
"""Characters of a conversation's transcript shown in the page (every message, the answers between included): past
it, the earliest messages after the first are left out, with a note (the judged answer is always shown)."""


def shown_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """`text`, cut at `limit` characters with a note saying how much more the export has."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [… {len(text) - limit:,} more characters: speceval export has them all]"


def shown_transcript(messages: list[ChatMessage], turn: int | None) -> list[dict[str, str]]:
    """A verdict's transcript as the page shows it: one record per message with who wrote it (`user`, `simulated
    user`, `assistant`) and, for a turn verdict, the judged answer (the last message) marked `judged`; each message
    cut at `TEXT_LIMIT`, and the earliest ones after the first left out past `TRANSCRIPT_LIMIT` (a note says how
    many: the export has them all)."""
    shown = [
        {"role": "simulated user" if m.author == "simulated_user" else m.role, "content": shown_text(m.content)}
        for m in messages
    ]
    if turn is not None and shown:
        shown[-1]["judged"] = f"turn {turn}"
    budget = TRANSCRIPT_LIMIT - len(shown[0]["content"]) if shown else 0
    kept: list[dict[str, str]] = []
    for message in reversed(shown[1:]):
        if kept and len(message["content"]) > budget:
            break
        budget -= len(message["content"])
        kept.append(message)
    left_out = len(shown) - 1 - len(kept)
    note = [{"role": "note", "content": f"[… {left_out} earlier message(s) not shown: speceval export has them all]"}]
    return [*shown[:1], *(note if left_out else []), *reversed(kept)]


def shown_output(row: ComplianceRow) -> str:
    """The answer as the page shows it (a conversation's verdict shows its transcript beside it)."""
    return shown_text(row.output)


def shown_verdict(row: ComplianceRow) -> str:
    """The verdict as the page shows it: a turn verdict says which turn it is about."""
    return verdict_label(row) if row.turn is None else f"turn {row.turn}: {verdict_label(row)}"


def embedded_json(data: object) -> str:
    """JSON that cannot end the <script> element it sits in, nor open a comment or CDATA section."""
    text = json.dumps(data, ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def verdict_label(row: ComplianceRow) -> str:
    """What the judge said, in one word or two (an outcome other than `judged` is shown as itself)."""
    if row.outcome != "judged":
        return row.outcome
    if row.category is not None:
        return row.category
    if row.compliant is not None:
        return "compliant" if row.compliant else "not compliant"
    return f"rating {row.rating:g}" if row.rating is not None else "judged"


SampleRecord = dict[str, str | list[dict[str, str]]]
"""One verdict of the sample view: short strings, and for a conversation's verdict its `transcript`."""


def sample_record(r: ComplianceRow) -> SampleRecord:
    record: SampleRecord = {
        "judge": r.judge,
        "candidate": r.model,
        "variation": r.variation,
        "run": str(r.run),
        "statement": r.statement_id,
        "type": r.statement_type,
        "authority": r.authority_level,
        "verdict": shown_verdict(r),
        "input": shown_text(r.input),
        "output": shown_output(r),
        "explanation": shown_text(r.explanation or (f"[{r.outcome}] {r.problem}" if r.problem else "")),
        "source": r.source,
    }
    if r.transcript:
        record["transcript"] = shown_transcript(r.transcript, r.turn)
    return record


def record_size(record: SampleRecord) -> int:
    """Bytes the record takes in the page (as `embedded_json` writes it, plus a separator)."""
    return len(embedded_json(record).encode("utf-8")) + 2
