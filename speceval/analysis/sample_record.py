"""One verdict as the page's sample view shows it (a record of short strings), and the bytes it takes there.

Below both the columns (which size every verdict's record while folding) and the sample view (which picks and
renders records), so neither imports the other for it.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring  # the C encoder json.dumps(ensure_ascii=False) uses

from speceval.analysis.load import ComplianceRow

TEXT_LIMIT = 1_500
"""Characters of one input, answer or explanation shown in the page; the rest is cut with a note (the export has
every character)."""


TRANSCRIPT_LIMIT = 4 * TEXT_LIMIT
"""Characters of a conversation's transcript shown in the page (every message, the answers between included)."""


def shown_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """`text`, cut at `limit` characters with a note saying how much more the export has."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [… {len(text) - limit:,} more characters: speceval export has them all]"


def shown_output(row: ComplianceRow) -> str:
    """The answer as the page shows it: a conversation judged whole shows its transcript."""
    return shown_text(row.transcript, TRANSCRIPT_LIMIT) if row.transcript else shown_text(row.output)


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


def sample_record(r: ComplianceRow) -> dict[str, str]:
    return {"judge": r.judge, "candidate": r.model, "variation": r.variation, "run": str(r.run),
            "statement": r.statement_id, "type": r.statement_type, "authority": r.authority_level,
            "verdict": shown_verdict(r), "input": shown_text(r.input), "output": shown_output(r),
            "explanation": shown_text(r.explanation or (f"[{r.outcome}] {r.problem}" if r.problem else "")),
            "source": r.source}


def record_size(record: dict[str, str]) -> int:
    """Bytes the record takes in the page (as `embedded_json` writes it, plus a separator)."""
    return len(embedded_json(record).encode("utf-8")) + 2


def text_size(text: str) -> int:
    """Bytes one string field adds to a record's size beyond an empty one (what `embedded_json` writes, counted
    without writing it: the ranking samples size every comparison's fields)."""
    return _escaped_size(text) - 2


def record_bytes(row: ComplianceRow, fixed: int | None = None) -> tuple[int, int]:
    """The size of the row's record without its variation (a variation may be renamed once every file is read:
    `text_size` of the final name is added then), and the part of it its input and answer take (a panel's record
    shows the same input and answer with its own verdict and explanation). What `record_size` gives, counted
    field by field (the report sizes every verdict's record while folding; a JSON text of each took half the time);
    `fixed` is `fixed_bytes` of the row's file when the caller has it."""
    texts = [_escaped_size(shown_text(row.input)), _escaped_size(shown_output(row))]
    explanation = row.explanation or (f"[{row.outcome}] {row.problem}" if row.problem else "")
    own = _escaped_size(shown_verdict(row)) + _escaped_size(shown_text(explanation)) + sum(texts)
    return (fixed_bytes(row) if fixed is None else fixed) + own, sum(texts) - 4


def fixed_bytes(row: ComplianceRow) -> int:
    """The bytes of a record that every verdict of one results file shares: the keys, separators, and the fields
    that come from the file (judge, candidate, run, statement, type, authority, source; the variation empty)."""
    shared = (row.judge, row.model, "", str(row.run), row.statement_id, row.statement_type, row.authority_level,
              row.source)
    return 2 + sum(_KEY_SIZES.values()) + 2 * (len(_KEY_SIZES) - 1) + 2 + sum(_escaped_size(v) for v in shared)


def _escaped_size(text: str) -> int:
    """UTF-8 bytes of `text` as a JSON string in the page (quotes included; &, < and > as 6-byte escapes)."""
    escaped = encode_basestring(text)
    size = len(escaped) if escaped.isascii() else len(escaped.encode("utf-8"))
    if "&" in text or "<" in text or ">" in text:
        size += 5 * (text.count("&") + text.count("<") + text.count(">"))
    return size


_KEY_SIZES = {key: len(json.dumps(key)) + 2 for key in ("judge", "candidate", "variation", "run", "statement",
                                                      "type", "authority", "verdict", "input", "output",
                                                      "explanation", "source")}
"""Bytes of `"key": ` for every field of a record."""
