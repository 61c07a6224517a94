"""Every default has one home (`speceval.defaults`): the library's records and the commands' flags read it there."""

from __future__ import annotations

import dataclasses
import typing

from speceval.batch.options import EngineOptions
from speceval.conversations.simulated_user import SimulatedUser
from speceval.defaults import (
    DEFAULT_GENERATION_OUTPUT,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_TURNS,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_TIMEOUT_HOURS,
    Mode,
    Scope,
)
from speceval.experiments.config import JudgeEntry
from speceval.pipelines.generation import GenerationConfig
from speceval.pipelines.judge_config import ComplianceFileConfig
from speceval.wire.params import GenerationParams


def test_the_records_take_their_defaults_from_the_one_home() -> None:
    engine = EngineOptions()
    assert (engine.poll_interval, engine.timeout_hours, engine.max_attempts) == (
        DEFAULT_POLL_INTERVAL,
        DEFAULT_TIMEOUT_HOURS,
        DEFAULT_MAX_ATTEMPTS,
    )
    assert GenerationParams().max_tokens == DEFAULT_MAX_TOKENS
    assert SimulatedUser(model="m", instructions="i").max_turns == DEFAULT_MAX_TURNS
    output = next(f for f in dataclasses.fields(GenerationConfig) if f.name == "output_base_dir")
    assert output.default == DEFAULT_GENERATION_OUTPUT


def test_scope_and_mode_are_declared_once_and_used_by_every_record() -> None:
    # One enum each (speceval.defaults): the files, the commands' settings files and the experiment file take it.
    from speceval.judging.files import ComplianceMetadata

    for model in (ComplianceFileConfig, JudgeEntry, ComplianceMetadata):
        assert Scope in typing.get_args(model.model_fields["scope"].annotation), model
    assert JudgeEntry.model_fields["mode"].annotation is Mode
    assert ComplianceMetadata.model_fields["mode"].annotation is Mode
    # a narrower choice is still made of the enum's members
    assert set(typing.get_args(typing.get_args(ComplianceFileConfig.model_fields["mode"].annotation)[0])) == {
        Mode.BINARY,
        Mode.LIKERT,
    }
