"""Every default has one home (`speceval.defaults`): the library's records and the commands' flags read it there."""

from __future__ import annotations

import dataclasses

from speceval.batch.options import EngineOptions
from speceval.conversations.simulated_user import SimulatedUser
from speceval.defaults import (
    DEFAULT_GENERATION_OUTPUT,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_MAX_TURNS,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_TIMEOUT_HOURS,
    SCOPES,
)
from speceval.experiments.config import JudgeEntry
from speceval.judging.transcripts import Scope
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


def test_every_declaration_of_scope_accepts_exactly_the_same_values() -> None:
    assert tuple(scope.value for scope in Scope) == SCOPES
    for model in (ComplianceFileConfig, JudgeEntry):
        annotation = str(model.model_fields["scope"].annotation)
        assert all(f"'{value}'" in annotation for value in SCOPES), (model, annotation)
