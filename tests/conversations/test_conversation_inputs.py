"""Conversation items in an inputs file: valid shapes load, every bad shape is an InputError naming file, item and
field, and the generation command refuses them with exit 2 before anything is written or sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speceval.errors import ConfigError, InputError
from speceval.inputs import load_inputs
from speceval.inputs.script import ChatMessage, Conversation
from speceval.spec import Specification, load_spec
from speceval.wire.prompt import Message
from tests.conftest import cli_env, run_generation, write_spec


@pytest.fixture
def spec(tmp_path: Path) -> Specification:
    return load_spec(write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"]))


def _write(directory: Path, name: str, inputs: list[Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(json.dumps({"inputs": inputs}), encoding="utf-8")
    return path


def _user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def _assistant(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


def test_strings_and_conversations_load_with_their_counts(tmp_path: Path, spec: Specification) -> None:
    _write(tmp_path / "in", "alpha.json", ["plain", {"turns": ["t1", "t2", "t3"], "id": "q1"}])
    _write(
        tmp_path / "in",
        "beta.json",
        [{"messages": [_user("h1"), _assistant("pre"), _user("h2")], "turns": ["h3"]}, {"messages": [_user("only")]}],
    )
    inputs = load_inputs(tmp_path / "in", spec)
    assert inputs.has_conversations and inputs.max_rounds == 3 and len(inputs) == 4
    assert [(s.statement_id, s.count, s.conversations, s.max_rounds) for s in inputs.statements] == [
        ("alpha", 2, 1, 3),
        ("beta", 2, 2, 2),
    ]
    alpha = inputs.entries("alpha")
    assert alpha[0] == "plain"
    assert alpha[1] == Conversation(id="q1", turns=("t1", "t2", "t3"))
    assert inputs.texts("alpha") == {0: "plain", 1: "t1"}  # a conversation's text is its first user message
    assert inputs.texts("beta") == {0: "h1", 1: "only"}


def test_strings_only_keep_the_plain_path(tmp_path: Path, spec: Specification) -> None:
    _write(tmp_path / "in", "alpha.json", ["a", "b"])
    inputs = load_inputs(tmp_path / "in", spec)
    assert not inputs.has_conversations and inputs.max_rounds == 1
    assert inputs.statement_counts() == [("alpha", range(2))]
    assert [i.input_text for i in inputs.items] == ["a", "b"]


def test_a_conversation_set_refuses_to_be_given_to_an_engine_as_single_prompts(
    tmp_path: Path, spec: Specification
) -> None:
    _write(tmp_path / "in", "alpha.json", ["a", {"turns": ["t1", "t2"]}])
    inputs = load_inputs(tmp_path / "in", spec)
    with pytest.raises(ConfigError, match="conversations"):
        inputs.statement_counts()  # the first thing an engine asks: nothing is built or sent before it
    with pytest.raises(ConfigError, match="conversations"):
        _ = inputs.items


def test_transcripts_interleave_the_models_answers_verbatim() -> None:
    scripted = Conversation(turns=("t1", "t2", "t3"))
    assert scripted.rounds == 3
    assert scripted.prompt([]).messages == (Message("user", "t1"),)
    assert scripted.prompt(["a1", "a2"]).messages == (
        Message("user", "t1"),
        Message("assistant", "a1"),
        Message("user", "t2"),
        Message("assistant", "a2"),
        Message("user", "t3"),
    )
    assert scripted.transcript(["a1", "a2", "a3"])[-1] == ChatMessage(role="assistant", content="a3")
    history = Conversation(
        messages=(
            ChatMessage(role="user", content="h1"),
            ChatMessage(role="assistant", content="p"),
            ChatMessage(role="user", content="h2"),
        ),
        turns=("h3",),
    )
    assert history.rounds == 2 and history.first_user_text == "h1"
    assert [m.content for m in history.prompt(["x"]).messages] == ["h1", "p", "h2", "x", "h3"]
    with pytest.raises(ValueError):
        history.prompt(["x", "y"])  # no third round


BAD = [
    ({"turn": ["x"]}, "inputs[2].turn", "unknown key 'turn'"),
    ({"id": "x"}, "inputs[2]", "needs 'turns'"),
    ({"turns": []}, "inputs[2].turns", "at least one user turn"),
    ({"turns": "hello"}, "inputs[2].turns", "expected a list of strings, got a string"),
    ({"turns": ["ok", 7]}, "inputs[2].turns[1]", "expected a string, got a number"),
    ({"turns": ["ok", "  "]}, "inputs[2].turns[1]", "empty message"),
    ({"turns": ["ok"], "id": 3}, "inputs[2].id", "non-empty string"),
    ({"turns": ["ok"], "id": "dup"}, "inputs[2].id", "already used by inputs[1]"),
    ({"messages": []}, "inputs[2].messages", "non-empty list"),
    ({"messages": "hi"}, "inputs[2].messages", "got a string"),
    ({"messages": ["hi"]}, "inputs[2].messages[0]", "expected an object"),
    ({"messages": [{"role": "system", "content": "x"}]}, "inputs[2].messages[0].role", "got 'system'"),
    ({"messages": [{"role": "user"}]}, "inputs[2].messages[0].content", "required field is missing"),
    ({"messages": [{"role": "user", "content": ["x"]}]}, "inputs[2].messages[0].content", "got an array"),
    ({"messages": [{"role": "user", "content": "x", "name": "n"}]}, "inputs[2].messages[0].name", "unknown key"),
    ({"messages": [_assistant("pre"), _user("x")]}, "inputs[2].messages[0].role", "starts with the user"),
    ({"messages": [_user("a"), _user("b")]}, "inputs[2].messages[1].role", "alternates"),
    ({"messages": [_user("a"), _assistant("b")]}, "inputs[2].messages[1].role", "end with a user message"),
    ({"messages": [_user("a")], "turns": "b"}, "inputs[2].turns", "expected a list"),
    ([{"turns": ["x"]}], "inputs[2]", "expected a string or a conversation object, got an array"),
]


@pytest.mark.parametrize(("item", "field", "fragment"), BAD)
def test_a_bad_shape_names_file_item_and_field(
    tmp_path: Path, spec: Specification, item: Any, field: str, fragment: str
) -> None:
    path = _write(tmp_path / "in", "alpha.json", ["fine", {"turns": ["ok"], "id": "dup"}, item])
    with pytest.raises(InputError) as info:
        load_inputs(tmp_path / "in", spec)
    error = info.value
    assert error.path == path and error.field == field, str(error)
    assert fragment in str(error) and str(error).startswith(str(path)) and f"field '{field}'" in str(error)


def test_the_generation_command_exits_2_on_a_bad_shape_before_writing_anything(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    path = _write(tmp_path / "in", "alpha.json", ["fine", {"turns": ["t1", 3]}])
    done = run_generation(
        [
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(tmp_path / "in"),
            "--model-name",
            "gpt-4.1-mini-2025-04-14",
            "--output-base-dir",
            str(tmp_path / "out"),
            "--offline",
        ],
        cli_env(),
    )
    assert done.returncode == 2, done.stderr
    assert f"{path}, field 'inputs[1].turns[1]': expected a string, got a number" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
