"""The judge card's settings (issue 44): what a `judge_card:` block may say, and a user's own rewordings read or
refused naming the file and the statement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from speceval.analysis.tables.card_records import DEFAULT_MIN_CANARY_ACCURACY, JudgeCardSettings
from speceval.errors import InputError
from speceval.judging.card_files import read_user_paraphrases


def test_the_defaults_resend_a_tenth_and_reword_nothing() -> None:
    card = JudgeCardSettings()
    assert (card.retest, card.paraphrases, card.min_canary_accuracy) == (0.1, 0, DEFAULT_MIN_CANARY_ACCURACY)
    assert card.lines().model_dump() == {
        "min_canary_accuracy": 0.8,
        "min_retest_agreement": 0.9,
        "max_wording_excess": 0.1,
        "min_human_kappa": 0.4,
        "min_human_accuracy": None,  # optional: not checked unless the study names it
    }


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"retest": 0, "paraphrases": 2}, "set retest above 0"),
        ({"paraphrases_file": "w.json"}, "paraphrases is 0"),
        ({"retest": 1.5}, "less than or equal to 1"),
        ({"paraphrases": 11}, "less than or equal to 10"),
        ({"retets": 0.1}, "Extra inputs are not permitted"),
    ],
)
def test_a_card_that_cannot_run_is_refused(given: dict[str, object], said: str) -> None:
    with pytest.raises(ValidationError, match=said):
        JudgeCardSettings.model_validate(given)


def test_the_users_own_rewordings_are_read_or_refused_naming_the_statement(tmp_path: Path) -> None:
    path = tmp_path / "wordings.json"
    path.write_text(json.dumps({"a": ["one", "two"], "b": ["uno", "dos"]}), encoding="utf-8")
    assert read_user_paraphrases(path, ["a", "b"], 2) == {"a": ["one", "two"], "b": ["uno", "dos"]}
    for document, statement in (
        ({"a": ["one", "two"]}, "'b'"),
        ({"a": ["one"], "b": ["uno", "dos"]}, "'a'"),
        ({"a": ["one", " "], "b": ["uno", "dos"]}, "'a'"),
        ({"a": ["one", "two"], "b": ["uno", "dos"], "c": ["x", "y"]}, "'c'"),
    ):
        path.write_text(json.dumps(document), encoding="utf-8")
        with pytest.raises(InputError, match=statement) as raised:
            read_user_paraphrases(path, ["a", "b"], 2)
        assert str(path) in str(raised.value)
    path.write_text("[", encoding="utf-8")
    with pytest.raises(InputError, match="paraphrases_file"):
        read_user_paraphrases(path, ["a"], 1)


@pytest.mark.parametrize(("card", "line"), [({"retest": 0}, 0.99), ({"retest": 0, "min_canary_accuracy": 0.7}, 0.7)])
def test_a_card_without_its_own_canary_line_takes_the_top_level_one(card: dict[str, object], line: float) -> None:
    """The card's lines were copied with every default set, so a `judge_card:` block's 0.8 replaced a study's
    top-level `min_canary_accuracy: 0.99` in its own report (and in experiment.json, read back by `speceval report`);
    a card that names its own line keeps it."""
    from speceval.experiments.config import ExperimentConfig

    given = {
        "experiment_name": "card",
        "output_dir": "out",
        "specs": [{"name": "s", "spec_path": "spec.jsonl"}],
        "candidates": [{"model": "gpt-4.1-mini-2025-04-14"}],
        "judges": [{"model": "gpt-4.1-2025-04-14"}],
        "min_canary_accuracy": 0.99,
        "judge_card": card,
    }
    config = ExperimentConfig.model_validate(given)
    assert config.judge_card is not None and config.judge_card.lines().min_canary_accuracy == line
    recorded = ExperimentConfig.model_validate(config.model_dump(mode="json"))  # as experiment.json keeps it
    assert recorded.judge_card is not None and recorded.judge_card.lines().min_canary_accuracy == line
