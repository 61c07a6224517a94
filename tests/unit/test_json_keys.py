"""A record's newer optional keys are written only once set (older files and grid digests stay as they were), and
an optional record file reads as None until it exists, as an `InputError` naming it when it is not one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speceval.conversations.rounds import RoundRecord
from speceval.conversations.simulated_user import SimulatedUser
from speceval.errors import InputError
from speceval.experiments.config import InputsBlock, JudgeEntry
from speceval.inputs.script import ChatMessage
from speceval.judging.card_files import SHARED_FILE, canary_share


def test_unset_newer_keys_are_not_written() -> None:
    assert ChatMessage(role="user", content="hi").model_dump() == {"role": "user", "content": "hi"}
    assert "tier" not in SimulatedUser(model="m", instructions="be brief").model_dump()
    assert "name" not in JudgeEntry(model="gpt-4.1").model_dump()
    block = json.loads(InputsBlock(generator="gpt-4.1").model_dump_json())
    assert "pairs" not in block and "tier" not in block


def test_set_newer_keys_are_written() -> None:
    simulated = ChatMessage(role="user", content="hi", author="simulated_user")
    assert json.loads(simulated.model_dump_json())["author"] == "simulated_user"
    assert JudgeEntry(model="gpt-4.1", name="strict").model_dump()["name"] == "strict"
    assert InputsBlock(generator="gpt-4.1", pairs="related").model_dump()["pairs"] == "related"


def test_an_optional_record_reads_as_none_until_written(tmp_path: Path) -> None:
    assert RoundRecord.load(tmp_path, 1) is None
    assert canary_share(tmp_path) is None


def test_an_optional_record_that_is_not_one_names_its_file(tmp_path: Path) -> None:
    (tmp_path / SHARED_FILE).write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match="not a canary share record of this version") as caught:
        canary_share(tmp_path)
    assert SHARED_FILE in str(caught.value)
