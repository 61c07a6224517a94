"""load_inputs: one `<statement_id>.json` per statement, read strictly and deterministically."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from speceval.errors import InputError
from speceval.inputs import InputSet, load_inputs
from speceval.paths import safe_filename
from speceval.spec import Specification, load_spec
from speceval.wire.prompt import PromptItem
from tests.conftest import SAMPLE_INPUTS, SAMPLE_SPEC, write_inputs, write_spec


@pytest.fixture
def spec(tmp_path: Path) -> Specification:
    return load_spec(write_spec(tmp_path / "spec.jsonl", ["alpha", "beta", "gamma"]))


def write_file(directory: Path, name: str, content: str | bytes | Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(json.dumps(content), encoding="utf-8")
    return path


def load_error(directory: Path, spec: Specification, **options: bool) -> InputError:
    with pytest.raises(InputError) as info:
        load_inputs(directory, spec, **options)
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


# -- reading valid directories ------------------------------------------------------------------------------


def test_items_in_file_name_order_then_list_order(tmp_path: Path, spec: Specification) -> None:
    directory = tmp_path / "inputs"
    write_file(directory, "gamma.json", {"inputs": ["g0"]})
    write_file(directory, "alpha.json", {"inputs": ["a0", "a1", ""], "metadata": {"generator_type": "x"}})
    result = load_inputs(directory, spec)
    assert isinstance(result, InputSet) and len(result) == 4
    assert [(i.statement_id, i.original_index, i.input_text) for i in result.items] == [
        ("alpha", 0, "a0"),
        ("alpha", 1, "a1"),
        ("alpha", 2, ""),
        ("gamma", 0, "g0"),
    ]
    assert result.files == [directory / "alpha.json", directory / "gamma.json"]
    assert result.skipped_files == [] and result.directory == directory
    assert result.statement_ids == ["alpha", "gamma"]


def test_only_top_level_json_files_are_read(tmp_path: Path, spec: Specification) -> None:
    directory = write_inputs(tmp_path / "inputs", {"alpha": ["a"]})
    write_file(directory, "notes.txt", "not json at all")
    write_file(directory, "beta.JSON", "{broken")
    write_file(directory / "nested", "beta.json", {"inputs": ["nested"]})
    (directory / "gamma.json.d").mkdir()
    assert [i.input_text for i in load_inputs(directory, spec).items] == ["a"]


def test_duplicate_prompts_keep_their_own_index(tmp_path: Path, spec: Specification) -> None:
    directory = write_inputs(tmp_path / "inputs", {"alpha": ["same", "same"]})
    assert [i.original_index for i in load_inputs(directory, spec).items] == [0, 1]


def test_empty_inputs_list_is_allowed_and_logged(
    tmp_path: Path, spec: Specification, caplog: pytest.LogCaptureFixture
) -> None:
    directory = write_inputs(tmp_path / "inputs", {"alpha": [], "beta": ["b"]})
    with caplog.at_level(logging.WARNING, logger="speceval.inputs"):
        result = load_inputs(directory, spec)
    assert [i.statement_id for i in result.items] == ["beta"]
    assert result.files == [directory / "alpha.json", directory / "beta.json"]
    assert any("alpha.json" in r.getMessage() and "empty" in r.getMessage() for r in caplog.records)


def test_byte_order_mark_is_accepted(tmp_path: Path, spec: Specification) -> None:
    directory = tmp_path / "inputs"
    write_file(directory, "alpha.json", b'\xef\xbb\xbf{"inputs": ["a"]}')
    assert len(load_inputs(directory, spec)) == 1


def test_prompt_items_are_frozen() -> None:
    item = PromptItem(statement_id="a", original_index=0, input_text="x")
    with pytest.raises(ValidationError):
        item.input_text = "y"
    with pytest.raises(ValidationError):
        PromptItem(statement_id="a", original_index=-1, input_text="x")


# -- the hash -------------------------------------------------------------------------------------------------


def test_hash_is_stable_and_does_not_depend_on_where_the_directory_is(tmp_path: Path, spec: Specification) -> None:
    first = write_inputs(tmp_path / "one", {"alpha": ["a"], "beta": ["b"]})
    second = tmp_path / "two"
    shutil.copytree(first, second)
    assert load_inputs(first, spec).sha256 == load_inputs(second, spec).sha256 == load_inputs(first, spec).sha256


def test_hash_changes_when_a_byte_or_a_name_changes(tmp_path: Path, spec: Specification) -> None:
    directory = write_inputs(tmp_path / "inputs", {"alpha": ["a"], "beta": ["b"]})
    original = load_inputs(directory, spec).sha256
    write_file(directory, "beta.json", {"inputs": ["B"]})
    changed_byte = load_inputs(directory, spec).sha256
    (directory / "beta.json").rename(directory / "gamma.json")
    write_file(directory, "gamma.json", {"inputs": ["b"]})
    renamed = load_inputs(directory, spec).sha256
    assert len({original, changed_byte, renamed}) == 3


def test_hash_ignores_skipped_files(tmp_path: Path, spec: Specification) -> None:
    directory = write_inputs(tmp_path / "inputs", {"alpha": ["a"]})
    before = load_inputs(directory, spec).sha256
    write_file(directory, "unknown.json", {"inputs": ["u"]})
    assert load_inputs(directory, spec, allow_unknown_statements=True).sha256 == before


# -- unknown statements ---------------------------------------------------------------------------------------


def test_unknown_statement_is_an_error_with_a_hint(tmp_path: Path, spec: Specification) -> None:
    directory = write_inputs(tmp_path / "inputs", {"alpha": ["a"], "betta": ["b"]})
    error = load_error(directory, spec)
    assert_error(
        error,
        directory / "betta.json",
        None,
        None,
        "'betta'",
        "did you mean 'beta'?",
        "--allow-unknown-statements",
        str(spec.source_path),
    )


def test_unknown_statement_is_skipped_and_reported_when_allowed(
    tmp_path: Path, spec: Specification, caplog: pytest.LogCaptureFixture
) -> None:
    directory = write_inputs(tmp_path / "inputs", {"alpha": ["a"], "zeta": ["z"], "omega": ["o"]})
    with caplog.at_level(logging.WARNING, logger="speceval.inputs"):
        result = load_inputs(directory, spec, allow_unknown_statements=True)
    assert [i.statement_id for i in result.items] == ["alpha"]
    assert result.skipped_files == [directory / "omega.json", directory / "zeta.json"]
    assert result.files == [directory / "alpha.json"]
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("speceval.inputs")]
    assert sum("skipping" in m for m in messages) == 2


def test_skipped_files_are_not_even_parsed(tmp_path: Path, spec: Specification) -> None:
    directory = write_inputs(tmp_path / "inputs", {"alpha": ["a"]})
    write_file(directory, "junk.json", "{not json")
    assert load_inputs(directory, spec, allow_unknown_statements=True).skipped_files == [directory / "junk.json"]


def test_statement_ids_that_cannot_be_file_names_use_the_safe_name(tmp_path: Path) -> None:
    spec = load_spec(write_spec(tmp_path / "spec.jsonl", ["a/b", "../up", "Plain"]))
    directory = tmp_path / "inputs"
    write_file(directory, safe_filename("a/b") + ".json", {"inputs": ["slash"]})
    write_file(directory, safe_filename("../up") + ".json", {"inputs": ["dots"]})
    write_file(directory, "Plain.json", {"inputs": ["plain"]})
    items = load_inputs(directory, spec).items
    assert {(i.statement_id, i.input_text) for i in items} == {("a/b", "slash"), ("../up", "dots"), ("Plain", "plain")}


def test_two_files_for_one_statement_is_an_error(tmp_path: Path) -> None:
    spec = load_spec(write_spec(tmp_path / "spec.jsonl", ["Plain"]))
    directory = tmp_path / "inputs"
    write_file(directory, "Plain.json", {"inputs": ["raw"]})
    safe = write_file(directory, safe_filename("Plain") + ".json", {"inputs": ["safe"]})
    first, second = sorted([directory / "Plain.json", safe], key=lambda p: p.name)
    assert_error(load_error(directory, spec), second, None, None, "already has inputs", first.name)


def test_unicode_statement_ids(tmp_path: Path) -> None:
    spec = load_spec(write_spec(tmp_path / "spec.jsonl", ["日本語", "emoji 🚀"]))
    directory = write_inputs(tmp_path / "inputs", {"日本語": ["こんにちは"], "emoji 🚀": ["🚀"]})
    assert {i.statement_id for i in load_inputs(directory, spec).items} == {"日本語", "emoji 🚀"}


# -- errors -------------------------------------------------------------------------------------------------


def test_missing_directory(tmp_path: Path, spec: Specification) -> None:
    assert_error(load_error(tmp_path / "nope", spec), tmp_path / "nope", None, None, "not found")


def test_file_instead_of_directory(tmp_path: Path, spec: Specification) -> None:
    path = write_file(tmp_path, "alpha.json", {"inputs": []})
    assert_error(load_error(path, spec), path, None, None, "not a directory")


def test_directory_without_json_files(tmp_path: Path, spec: Specification) -> None:
    directory = tmp_path / "inputs"
    write_file(directory, "readme.txt", "hi")
    write_file(directory / "sub", "alpha.json", {"inputs": []})
    assert_error(load_error(directory, spec), directory, None, None, "no *.json files")


def test_invalid_json_names_the_line(tmp_path: Path, spec: Specification) -> None:
    path = write_file(tmp_path / "inputs", "beta.json", '{\n  "inputs": [\n    "one"\n    "two"\n  ]\n}\n')
    assert_error(load_error(path.parent, spec), path, 4, None, "not valid JSON", "column")


def test_empty_file_is_invalid_json(tmp_path: Path, spec: Specification) -> None:
    path = write_file(tmp_path / "inputs", "beta.json", "")
    assert_error(load_error(path.parent, spec), path, 1, None, "not valid JSON")


def test_non_utf8_names_the_line(tmp_path: Path, spec: Specification) -> None:
    path = write_file(tmp_path / "inputs", "alpha.json", b'{\n"inputs": [\n"caf\xe9"]}')
    assert_error(load_error(path.parent, spec), path, 3, None, "not valid UTF-8", "0xe9")


@pytest.mark.parametrize(
    ("content", "kind"), [(["a"], "an array"), ("text", "a string"), (3, "a number"), (None, "null")]
)
def test_not_an_object(tmp_path: Path, spec: Specification, content: Any, kind: str) -> None:
    path = write_file(tmp_path / "inputs", "alpha.json", json.dumps(content))
    assert_error(load_error(path.parent, spec), path, None, None, "expected a JSON object", kind)


def test_inputs_missing(tmp_path: Path, spec: Specification) -> None:
    path = write_file(tmp_path / "inputs", "alpha.json", {"prompts": ["a"]})
    assert_error(load_error(path.parent, spec), path, None, "inputs", "required field is missing")


@pytest.mark.parametrize(("value", "kind"), [("a", "a string"), ({"0": "a"}, "an object"), (None, "null")])
def test_inputs_not_a_list(tmp_path: Path, spec: Specification, value: Any, kind: str) -> None:
    path = write_file(tmp_path / "inputs", "alpha.json", {"inputs": value})
    assert_error(load_error(path.parent, spec), path, None, "inputs", "expected a list of strings", kind)


@pytest.mark.parametrize(
    ("value", "kind"),
    [(3, "a number"), (None, "null"), (["x"], "an array"), (False, "a boolean")],
)  # an object is a conversation now: tests/conversations/test_conversation_inputs.py
def test_input_that_is_not_a_string_names_its_index(tmp_path: Path, spec: Specification, value: Any, kind: str) -> None:
    path = write_file(tmp_path / "inputs", "alpha.json", {"inputs": ["a", "b", "c", value]})
    assert_error(load_error(path.parent, spec), path, None, "inputs[3]", "expected a string", kind)


def test_lone_surrogate_input_is_rejected(tmp_path: Path, spec: Specification) -> None:
    path = write_file(tmp_path / "inputs", "alpha.json", '{"inputs": ["ok", "\\ud83d"]}')
    assert_error(load_error(path.parent, spec), path, None, "inputs[1]", "surrogate")


def test_first_bad_file_in_name_order_is_reported(tmp_path: Path, spec: Specification) -> None:
    directory = tmp_path / "inputs"
    write_file(directory, "gamma.json", "{bad")
    write_file(directory, "beta.json", {"inputs": [1]})
    assert load_error(directory, spec).path == directory / "beta.json"


# -- the shipped sample -------------------------------------------------------------------------------------


def test_shipped_sample_inputs_match_the_sample_spec(caplog: pytest.LogCaptureFixture) -> None:
    spec = load_spec(SAMPLE_SPEC)
    with caplog.at_level(logging.INFO):
        result = load_inputs(SAMPLE_INPUTS, spec)
    # Only the INFO note that most statements of the full spec have no inputs file; nothing worse.
    assert not [r for r in caplog.records if r.name.startswith("speceval") and r.levelno > logging.INFO]
    stems = sorted(p.stem for p in SAMPLE_INPUTS.glob("*.json"))  # inputs for some statements of the full spec
    assert len(stems) >= 6 and set(stems) <= set(spec.ids)
    assert result.skipped_files == [] and sorted(result.statement_ids) == stems
    for statement_id in stems:
        texts = [i.input_text for i in result.items if i.statement_id == statement_id]
        assert len(texts) == 5 and len(set(texts)) == 5 and all(t.strip() for t in texts)


def test_absurdly_deep_nesting_is_an_input_error_not_a_crash(tmp_path: Path, spec: Specification) -> None:
    path = write_file(tmp_path / "inputs", "alpha.json", '{"inputs": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert_error(load_error(path.parent, spec), path, None, None, "nested too deeply")


def test_input_set_reads_prompts_on_demand_and_refuses_a_changed_file(tmp_path):
    from speceval.errors import RunStateError
    from speceval.spec import load_spec

    spec_path = tmp_path / "spec.jsonl"
    spec_path.write_text('{"id": "alpha", "text": "t"}\n{"id": "beta", "text": "t"}\n')
    directory = tmp_path / "inputs"
    directory.mkdir()
    (directory / "alpha.json").write_text('{"inputs": ["a0", "a1"]}')
    (directory / "beta.json").write_text('{"inputs": ["b0"]}')
    input_set = load_inputs(directory, load_spec(spec_path))
    assert len(input_set) == 3
    assert [(sid, list(indices)) for sid, indices in input_set.statement_counts()] == [("alpha", [0, 1]), ("beta", [0])]
    assert input_set.texts("alpha") == {0: "a0", 1: "a1"}
    (directory / "alpha.json").write_text('{"inputs": ["a0", "changed"]}')
    with pytest.raises(RunStateError, match="alpha.json changed"):
        input_set.texts("alpha")


# -- nothing skipped or taken in silence ----------------------------------------------------------------------


def test_a_key_given_twice_is_refused_naming_it(tmp_path: Path, spec: Specification) -> None:
    directory = tmp_path / "inputs"
    path = write_file(directory, "alpha.json", '{"inputs": ["a"], "inputs": ["b"]}')
    assert_error(load_error(directory, spec), path, None, "inputs", "given twice")


@pytest.mark.parametrize("kind", ["dangling symlink", "directory", "fifo"])
def test_an_inputs_entry_that_is_not_a_readable_file_is_an_error(
    tmp_path: Path, spec: Specification, kind: str
) -> None:
    import os

    directory = write_inputs(tmp_path / "inputs", {"alpha": ["a"]})
    odd = directory / "beta.json"
    if kind == "dangling symlink":
        odd.symlink_to(tmp_path / "nowhere.json")
    elif kind == "directory":
        odd.mkdir()
    else:
        os.mkfifo(odd)
    error = load_error(directory, spec)
    assert error.path == odd and "cannot read inputs from it" in str(error)


def test_every_inputs_list_empty_is_refused(tmp_path: Path, spec: Specification) -> None:
    directory = write_inputs(tmp_path / "inputs", {"alpha": [], "beta": []})
    assert "nothing to send" in str(load_error(directory, spec))
