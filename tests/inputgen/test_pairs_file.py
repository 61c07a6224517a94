"""`--pairs FILE` (issue 42's bad-input sweep): a pairs file that is not UTF-8, holds no pair, or names an id the
spec lacks is refused naming the file and the line, before the run folder exists; a byte-order mark is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from speceval.cli.main import main as speceval_main
from speceval.errors import InputError
from speceval.inputgen.pairs import read_pairs_file
from speceval.spec import load_spec
from tests.conftest import write_spec


@pytest.fixture
def spec(tmp_path: Path):
    return load_spec(write_spec(tmp_path / "spec.jsonl", ["rule_0", "rule_1", "rule_2"]))


def _file(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "pairs.txt"
    path.write_bytes(data)
    return path


def test_a_byte_order_mark_is_not_part_of_the_first_id(tmp_path: Path, spec) -> None:
    path = _file(tmp_path, "\ufeffrule_0 rule_1\r\nrule_2,rule_0\n".encode())
    assert read_pairs_file(path, spec) == [["rule_0", "rule_1"], ["rule_2", "rule_0"]]


@pytest.mark.parametrize(
    ("data", "line", "words"),
    [
        ("# tension\nrule_0 rule_1\nrule_2 caf\u00e9\n".encode("latin-1"), 3, "not UTF-8 text (byte 0xe9)"),
        (b"rule_0 rule_1\n\nrule_2 rule_9\n", 3, "'rule_9' not in the spec"),
        (b"rule_0 rule_1\nrule_2 rule_2\n", 2, "paired with itself"),
        (b"rule_0 rule_1 rule_2\n", 1, "two statement ids, found 3"),
    ],
)
def test_a_bad_line_is_named(tmp_path: Path, spec, data: bytes, line: int, words: str) -> None:
    path = _file(tmp_path, data)
    with pytest.raises(InputError) as caught:
        read_pairs_file(path, spec)
    assert caught.value.path == path and caught.value.line == line and words in str(caught.value), caught.value


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n   \n# another\n"])
def test_a_file_without_pairs_is_refused_not_read_as_no_pairs(tmp_path: Path, spec, text: str) -> None:
    with pytest.raises(InputError, match="holds no pair"):
        read_pairs_file(_file(tmp_path, text.encode()), spec)


def test_the_command_refuses_it_before_the_run_folder_exists(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    spec_path = write_spec(tmp_path / "spec.jsonl", ["rule_0", "rule_1"])
    pairs = _file(tmp_path, b"# nothing yet\n")
    args = ["inputs", "--spec-path", str(spec_path), "--generator-model", "gpt-4.1-mini-2025-04-14"]
    code = speceval_main([*args, "--pairs", str(pairs), "--output-dir", str(tmp_path / "out"), "--offline"])
    err = capsys.readouterr().err
    assert code == 2 and str(pairs) in err and "holds no pair" in err, err
    assert not (tmp_path / "out").exists()
