"""load_spec: strict JSONL with errors that name the file, the line and the field."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from speceval.errors import InputError, UsageError
from speceval.spec import (
    AuthorityLevel,
    Example,
    Specification,
    Statement,
    StatementType,
    load_spec,
)
from tests.conftest import SAMPLE_SPEC


def write(tmp_path: Path, *lines: str | bytes | dict[str, Any], name: str = "spec.jsonl") -> Path:
    """A spec file from raw lines (str/bytes written as they are, dicts as JSON)."""
    path = tmp_path / name
    parts = [
        line if isinstance(line, bytes) else (json.dumps(line) if isinstance(line, dict) else line).encode("utf-8")
        for line in lines
    ]
    path.write_bytes(b"\n".join(parts) + b"\n")
    return path


def load_error(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        load_spec(path)
    return info.value


def assert_error(error: InputError, path: Path, line: int | None, field: str | None, *fragments: str) -> None:
    message = str(error)
    assert error.path == path and error.line == line and error.field == field, message
    assert message.startswith(str(path)), message
    if line is not None:
        assert f"line {line}" in message
    if field is not None:
        assert f"field '{field}'" in message
    for fragment in fragments:
        assert fragment in message, message


OK = {"id": "ok", "text": "A valid statement."}


# -- reading valid files ------------------------------------------------------------------------------------


def test_full_statement_round_trips_every_field(tmp_path: Path) -> None:
    line = {
        "id": "protect_privacy",
        "text": "Do not reveal private information.",
        "type": "prohibition",
        "authority_level": "root",
        "section": "Stay in bounds",
        "subsection": "Protect people's privacy",
        "related_statements": ["do_not_lie"],
        "metadata": {
            "source": "model_spec.md#protect_privacy",
            "examples": [
                {"description": "d", "user_query": "q", "good_response": "g", "bad_response": "b", "note": "kept"}
            ],
        },
    }
    spec = load_spec(write(tmp_path, line))
    statement = spec["protect_privacy"]
    assert statement.type is StatementType.PROHIBITION
    assert statement.authority_level is AuthorityLevel.ROOT
    assert statement.section == "Stay in bounds" and statement.subsection == "Protect people's privacy"
    assert statement.related_statements == ["do_not_lie"]
    example = statement.metadata.examples[0]
    assert (example.description, example.user_query, example.good_response, example.bad_response) == (
        "d",
        "q",
        "g",
        "b",
    )
    # Unknown keys in metadata and examples are kept, so nothing is lost on conversion.
    assert example.model_extra == {"note": "kept"}
    assert statement.metadata.model_extra == {"source": "model_spec.md#protect_privacy"}
    assert statement.model_dump(mode="json") == {**line, "metadata": line["metadata"]}


def test_defaults_match_the_original_format(tmp_path: Path) -> None:
    statement = load_spec(write(tmp_path, OK))["ok"]
    assert statement.type is StatementType.GUIDELINE
    assert statement.authority_level is AuthorityLevel.GUIDELINE
    assert statement.section == "" and statement.subsection is None
    assert statement.related_statements == [] and statement.metadata.examples == []


def test_specification_name_path_hash_order_and_lookup(tmp_path: Path) -> None:
    path = write(
        tmp_path, {"id": "b", "text": "B"}, {"id": "a", "text": "A"}, {"id": "c", "text": "C"}, name="my.jsonl"
    )
    spec = load_spec(path)
    assert spec.name == "my" and spec.source_path == path
    assert spec.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert spec.ids == ["b", "a", "c"] and len(spec) == 3
    assert "a" in spec and "z" not in spec and 3 not in spec
    assert spec.get("a") is spec["a"] and spec.get("z") is None
    with pytest.raises(KeyError):
        spec["z"]


def test_hash_changes_with_any_byte(tmp_path: Path) -> None:
    first = load_spec(write(tmp_path, OK)).sha256
    second = load_spec(write(tmp_path, {"id": "ok", "text": "A valid statement!"})).sha256
    assert first != second


def test_blank_lines_crlf_and_a_byte_order_mark_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "spec.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "text": "t"}\r\n\r\n   \r\n\t\n{"id": "b", "text": "t"}\r\n\n')
    assert load_spec(path).ids == ["a", "b"]


def test_no_trailing_newline_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "spec.jsonl"
    path.write_text('{"id": "a", "text": "t"}', encoding="utf-8")
    assert load_spec(path).ids == ["a"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("PROHIBITION", StatementType.PROHIBITION),
        ("Requirement", StatementType.REQUIREMENT),
        ("definition", StatementType.DEFINITION),
        ("GuideLine", StatementType.GUIDELINE),
    ],
)
def test_type_is_case_insensitive(tmp_path: Path, raw: str, expected: StatementType) -> None:
    assert load_spec(write(tmp_path, {**OK, "type": raw}))["ok"].type is expected


@pytest.mark.parametrize("level", ["platform", "developer", "user", "guideline", "root", "system", "ROOT", "Platform"])
def test_both_authority_vocabularies_load_losslessly(tmp_path: Path, level: str) -> None:
    statement = load_spec(write(tmp_path, {**OK, "authority_level": level}))["ok"]
    assert statement.authority_level.value == level.lower()
    assert json.loads(statement.model_dump_json())["authority_level"] == level.lower()


def test_nulls_are_accepted_where_the_format_allows_them(tmp_path: Path) -> None:
    line = {**OK, "subsection": None, "metadata": {"examples": [{"description": None, "good_response": "g"}]}}
    statement = load_spec(write(tmp_path, line))["ok"]
    assert statement.subsection is None and statement.metadata.examples[0].bad_response is None


def test_hostile_and_unicode_ids_are_valid_statement_ids(tmp_path: Path) -> None:
    ids = ["../../etc/passwd", "a/b", "..", "CON", "x" * 300, "日本語", "emoji 🚀", "tab\there"]
    spec = load_spec(write(tmp_path, *({"id": i, "text": "t"} for i in ids)))
    assert spec.ids == ids


def test_unknown_top_level_keys_are_ignored_with_one_warning_per_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path, {**OK, "authority": "root"}, {"id": "b", "text": "t", "authority": "user"})
    with caplog.at_level(logging.WARNING, logger="speceval.spec"):
        spec = load_spec(path)
    assert spec["ok"].authority_level is AuthorityLevel.GUIDELINE
    warnings = [r.getMessage() for r in caplog.records if r.name == "speceval.spec"]
    assert len(warnings) == 1 and "line 1" in warnings[0] and "'authority'" in warnings[0]


def test_statements_are_immutable(tmp_path: Path) -> None:
    statement = load_spec(write(tmp_path, OK))["ok"]
    with pytest.raises(ValidationError):
        statement.text = "changed"


def test_constructing_a_specification_with_duplicate_ids_fails() -> None:
    statement = Statement(id="a", text="t")
    with pytest.raises(ValidationError, match="duplicate statement id 'a'"):
        Specification(name="s", source_path=Path("s.jsonl"), sha256="0", statements=[statement, statement])


def test_example_model_accepts_partial_examples() -> None:
    assert Example(good_response="g").user_query is None


# -- errors: whole file -------------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    assert_error(load_error(path), path, None, None, "not found")


def test_directory_instead_of_file(tmp_path: Path) -> None:
    assert_error(load_error(tmp_path), tmp_path, None, None, "directory")


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", b"\r\n"])
def test_empty_spec_is_an_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "spec.jsonl"
    path.write_bytes(content)
    assert_error(load_error(path), path, None, None, "no statements")


def test_input_error_is_a_usage_error(tmp_path: Path) -> None:
    assert isinstance(load_error(tmp_path / "x.jsonl"), UsageError)


# -- errors: one line ---------------------------------------------------------------------------------------


def test_invalid_json_names_the_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, OK, "", '{"id": "b", "text": "t",}')
    assert_error(load_error(path), path, 3, None, "not valid JSON", "column")


def test_truncated_line(tmp_path: Path) -> None:
    path = write(tmp_path, OK, '{"id": "b", "text": "unterminated')
    assert_error(load_error(path), path, 2, None, "not valid JSON")


@pytest.mark.parametrize(
    ("line", "kind"),
    [("[1, 2]", "an array"), ('"text"', "a string"), ("42", "a number"), ("null", "null"), ("true", "a boolean")],
)
def test_line_that_is_not_an_object(tmp_path: Path, line: str, kind: str) -> None:
    path = write(tmp_path, OK, line)
    assert_error(load_error(path), path, 2, None, "expected a JSON object", kind)


def test_non_utf8_bytes_name_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, OK, b'{"id": "b", "text": "caf\xe9"}')
    assert_error(load_error(path), path, 2, None, "not valid UTF-8", "0xe9")


def test_lone_surrogate_escape_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, '{"id": "a", "text": "bad \\ud800 half"}')
    assert_error(load_error(path), path, 1, "text", "surrogate")


def test_lone_surrogate_deep_in_metadata(tmp_path: Path) -> None:
    path = write(tmp_path, '{"id": "a", "text": "t", "metadata": {"examples": [{"user_query": "\\udfff"}]}}')
    assert_error(load_error(path), path, 1, "metadata.examples.0.user_query", "surrogate")


def test_duplicate_key_in_one_object(tmp_path: Path) -> None:
    path = write(tmp_path, '{"id": "a", "text": "t", "text": "again"}')
    assert_error(load_error(path), path, 1, "text", "twice")


@pytest.mark.parametrize(
    ("line", "field", "fragment"),
    [
        ({"text": "t"}, "id", "required field is missing"),
        ({"id": "", "text": "t"}, "id", "non-empty"),
        ({"id": "   ", "text": "t"}, "id", "non-empty"),
        ({"id": 7, "text": "t"}, "id", "expected a string, got a number"),
        ({"id": None, "text": "t"}, "id", "expected a string, got null"),
        ({"id": ["a"], "text": "t"}, "id", "expected a string, got an array"),
        ({"id": "a"}, "text", "required field is missing"),
        ({"id": "a", "text": 1.5}, "text", "expected a string, got a number"),
        ({"id": "a", "text": None}, "text", "expected a string, got null"),
        ({**OK, "section": 3}, "section", "expected a string"),
        ({**OK, "section": None}, "section", "expected a string, got null"),
        ({**OK, "subsection": ["x"]}, "subsection", "expected a string"),
        ({**OK, "related_statements": "a,b"}, "related_statements", "expected a list, got a string"),
        ({**OK, "related_statements": ["a", 2]}, "related_statements.1", "expected a string, got a number"),
        ({**OK, "metadata": []}, "metadata", "expected an object, got an array"),
        ({**OK, "metadata": None}, "metadata", "expected an object, got null"),
        ({**OK, "metadata": {"examples": {}}}, "metadata.examples", "expected a list, got an object"),
        ({**OK, "metadata": {"examples": ["x"]}}, "metadata.examples.0", "expected an object, got a string"),
        (
            {**OK, "metadata": {"examples": [{}, {"user_query": 4}]}},
            "metadata.examples.1.user_query",
            "expected a string, got a number",
        ),
        (
            {**OK, "metadata": {"examples": [{"good_response": True}]}},
            "metadata.examples.0.good_response",
            "expected a string, got a boolean",
        ),
        ({**OK, "type": 3}, "type", "prohibition"),
        ({**OK, "authority_level": None}, "authority_level", "platform"),
    ],
)
def test_wrong_or_missing_fields_name_the_field(
    tmp_path: Path, line: dict[str, Any], field: str, fragment: str
) -> None:
    path = write(tmp_path, OK, "", line)
    assert_error(load_error(path), path, 3, field, fragment)


def test_several_problems_on_one_line_are_counted(tmp_path: Path) -> None:
    path = write(tmp_path, {"id": 1, "text": 2, "section": 3})
    error = load_error(path)
    assert_error(error, path, 1, "id", "and 2 more problem(s)")


def test_unknown_type_lists_the_allowed_values(tmp_path: Path) -> None:
    path = write(tmp_path, OK, {"id": "c", "text": "t", "type": "sometimes"})
    assert_error(
        load_error(path),
        path,
        2,
        "type",
        "'sometimes'",
        "allowed values: prohibition, requirement, guideline, definition",
    )


def test_unknown_authority_lists_both_vocabularies(tmp_path: Path) -> None:
    path = write(tmp_path, {**OK, "authority_level": "admin"})
    assert_error(
        load_error(path), path, 1, "authority_level", "'admin'", "root, system, platform, developer, user, guideline"
    )


def test_duplicate_id_says_where_it_was_first_defined(tmp_path: Path) -> None:
    path = write(tmp_path, {"id": "a", "text": "t"}, OK, "", {"id": "a", "text": "again"})
    assert_error(load_error(path), path, 4, "id", "duplicate id 'a'", "first defined on line 1")


def test_ids_differing_only_in_case_are_distinct(tmp_path: Path) -> None:
    assert load_spec(write(tmp_path, {"id": "a", "text": "t"}, {"id": "A", "text": "t"})).ids == ["a", "A"]


# -- the shipped sample -------------------------------------------------------------------------------------


def test_shipped_sample_spec_loads_cleanly(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        spec = load_spec(SAMPLE_SPEC)
    assert not [r for r in caplog.records if r.name.startswith("speceval")]
    assert spec.name == "openai" and len(spec) == 59  # the whole Model Spec, 2025-12-18 (see data/README.md)
    assert {s.authority_level for s in spec.statements} == {
        AuthorityLevel.ROOT,
        AuthorityLevel.SYSTEM,
        AuthorityLevel.DEVELOPER,
        AuthorityLevel.USER,
        AuthorityLevel.GUIDELINE,
    }
    for statement in spec.statements:
        assert statement.text and statement.section and statement.subsection
        for example in statement.metadata.examples:
            assert example.description and example.user_query and (example.good_response or example.model_extra)
    assert sum(bool(s.metadata.examples) for s in spec.statements) >= 55


def test_absurdly_deep_nesting_is_an_input_error_not_a_crash(tmp_path: Path) -> None:
    path = write(tmp_path, '{"id": "a", "text": "t", "metadata": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    assert_error(load_error(path), path, 1, None, "nested too deeply")


def test_surrogate_in_a_key_is_named_readably(tmp_path: Path) -> None:
    path = write(tmp_path, '{"id": "a", "text": "t", "metadata": {"\\u00e9\\udc80": 1}}')
    error = load_error(path)
    assert error.line == 1 and error.field == "metadata.é\\udc80"
    str(error).encode("utf-8")  # the message itself must be printable


def test_ids_that_collide_once_written_as_file_names_are_refused(tmp_path):
    import json as _json

    from speceval.errors import InputError as _InputError
    from speceval.spec import load_spec as _load_spec

    path = tmp_path / "spec.jsonl"
    path.write_text("\n".join(_json.dumps({"id": i, "text": "t"}) for i in ("a%2Fb", "a/b")) + "\n")
    with pytest.raises(_InputError, match="collide") as caught:
        _load_spec(path)
    assert caught.value.line == 2 and caught.value.field == "id"
