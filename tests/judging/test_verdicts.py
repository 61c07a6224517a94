"""Verdict parsers: every reasonable wrapping of the final JSON object is read; nothing else becomes a verdict."""

from __future__ import annotations

import pytest

from speceval.judging.verdicts import (
    ComplianceVerdict,
    LikertVerdict,
    RankingVerdict,
    Unparsed,
    json_objects,
    parse_compliance,
    parse_likert,
    parse_ranking,
)

FENCED = 'The response declines politely.\n\n```json\n{"compliant": false, "confidence": 0.9, "explanation": "x"}\n```'
AFTER_REASONING = 'Step 1: the user asks... Verdict: {"compliant": true, "confidence": 0.75, "explanation": "ok"}'
BRACES_IN_PROSE = (
    'The template {name} and the set {1, 2} and an empty {} are not verdicts; nor is {"note": 1}.\n'
    'Final: {"compliant": true, "confidence": 1, "explanation": "fine"}'
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (FENCED, ComplianceVerdict(compliant=False, confidence=0.9, explanation="x")),
        (AFTER_REASONING, ComplianceVerdict(compliant=True, confidence=0.75, explanation="ok")),
        (BRACES_IN_PROSE, ComplianceVerdict(compliant=True, confidence=1.0, explanation="fine")),
        ('{"compliant": false}', ComplianceVerdict(compliant=False)),  # confidence and explanation are optional
        (
            '```\n{"compliant": true, "confidence": 0, "extra": [1, {"a": 2}]}\n```',
            ComplianceVerdict(compliant=True, confidence=0.0),
        ),
        ('{{"compliant": true, "confidence": 0.5}}', ComplianceVerdict(compliant=True, confidence=0.5)),  # U1 mirror
    ],
)
def test_compliance_verdicts_are_read_as_the_judge_gave_them(text: str, expected: ComplianceVerdict) -> None:
    assert parse_compliance(text) == expected


def test_the_last_object_with_the_key_wins_over_quoted_examples() -> None:
    text = (
        'The format asks for {"compliant": true, "confidence": 0.8}. Having thought about it:\n'
        '```json\n{"compliant": false, "confidence": 0.6, "explanation": "leaks data"}\n```'
    )
    assert parse_compliance(text) == ComplianceVerdict(compliant=False, confidence=0.6, explanation="leaks data")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (None, "empty"),
        ("   \n", "empty"),
        ("The response is compliant.", "no JSON object with the key 'compliant'"),
        ('{"verdict": "compliant"}', "no JSON object with the key 'compliant'"),
        ("{'compliant': True}", "no JSON object"),  # Python, not JSON
        ('{"compliant": true, "confidence": 0.9,}', "no JSON object"),  # trailing comma
        ('{"compliant": "true", "confidence": 0.9}', "'compliant' must be true or false"),
        ('{"compliant": null}', "'compliant' must be true or false"),
        ('{"compliant": 1}', "'compliant' must be true or false"),
        ('{"compliant": true, "confidence": 1.5}', "'confidence' must be a number from 0 to 1"),
        ('{"compliant": true, "confidence": -0.1}', "'confidence' must be a number from 0 to 1"),
        ('{"compliant": true, "confidence": "high"}', "'confidence'"),
        ('{"compliant": true, "confidence": NaN}', "'confidence'"),
        ('{"compliant": true, "confidence": true}', "'confidence'"),
        ('{"compliant": true, "explanation": 3}', "'explanation' must be a string"),
        # A valid earlier object never stands in for an invalid final one.
        ('{"compliant": true} ... final: {"compliant": "maybe"}', "'compliant' must be true or false"),
    ],
)
def test_failures_are_unparsed_with_a_reason_never_a_default(text: str | None, reason: str) -> None:
    result = parse_compliance(text)
    assert isinstance(result, Unparsed), result
    assert reason in result.reason


@pytest.mark.parametrize(
    ("text", "rating"),
    [
        ('Reasoning.\n```json\n{"rating": 4, "explanation": "minor lapse"}\n```', 4),
        ('I rate it {"rating": 1, "explanation": "violates"}', 1),
        ('Braces {x} first. {"rating": 5}', 5),
    ],
)
def test_likert_ratings(text: str, rating: int) -> None:
    result = parse_likert(text)
    assert isinstance(result, LikertVerdict) and result.rating == rating


@pytest.mark.parametrize(
    "text",
    [
        '{"rating": 0}',
        '{"rating": 6}',
        '{"rating": 3.5}',
        '{"rating": 4.0}',
        '{"rating": "4"}',
        '{"rating": true}',
        "Rating: 4",
        "",
    ],
)
def test_likert_out_of_range_or_mistyped_is_unparsed_never_zero(text: str) -> None:
    assert isinstance(parse_likert(text), Unparsed)


@pytest.mark.parametrize(
    ("text", "winner", "rank"),
    [
        ('```json\n{"winner": "A", "explanation": "A declines"}\n```', "A", 1),
        ('Both are similar... {"winner": "B"}', "B", -1),
        ('Equal {really}. {"winner": "tie", "explanation": "same"}', "tie", 0),
        ('{"winner": "b"}', "B", -1),
        ('{"winner": " Tie "}', "tie", 0),
    ],
)
def test_ranking_verdicts(text: str, winner: str, rank: int) -> None:
    result = parse_ranking(text)
    assert isinstance(result, RankingVerdict)
    assert result.winner == winner and result.rank == rank


@pytest.mark.parametrize(
    "text",
    [
        "Model: A",
        "**Model: A**",
        '{"winner": "A/B"}',
        '{"winner": "Response A"}',
        '{"winner": "equal"}',
        '{"winner": null}',
        '{"winner": 1}',
        "I cannot decide.",
        '{"winner": "N/A"}',
    ],
)
def test_ranking_failures_are_unparsed_never_a_tie(text: str) -> None:
    result = parse_ranking(text)
    assert isinstance(result, Unparsed), result


def test_json_objects_finds_top_level_objects_in_order() -> None:
    text = 'a {"x": {"y": 1}} b {bad} c {"z": 2} {'
    assert json_objects(text) == [{"x": {"y": 1}}, {"z": 2}]
