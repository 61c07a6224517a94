"""What an inputs run is asked to do: `InputGenerationConfig`, its checks against the spec, and the default rater.

Split from `speceval.inputgen.pipeline` (which runs what this describes); the experiment runner reads and checks an
`inputs:` block through it without loading the pipeline.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from speceval.batch.engine import EngineOptions
from speceval.defaults import DEFAULT_INPUTS_OUTPUT, DEFAULT_MAX_TOKENS
from speceval.errors import ConfigError
from speceval.offline import offline_poll_interval
from speceval.spec import Specification, Statement

DEFAULT_RATERS = {
    "openai": "gpt-4.1-2025-04-14",
    "anthropic": "claude-sonnet-4-6",
    "google": "gemini-2.5-flash",
}
"""The rater when none is named: a model of another provider than the generator's (one whose key is set)."""
_KEYS = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
}


def default_rater(generator_org: str, offline: bool) -> str:
    """Another provider's model, preferring one whose key is set (offline: every provider is at hand)."""
    for org, model in DEFAULT_RATERS.items():
        if org != generator_org and (offline or any(os.environ.get(name) for name in _KEYS[org])):
            return model
    return ""


@dataclass
class InputGenerationConfig:
    """What to generate.

    Attributes:
        spec_path: the spec JSONL; spec_name: its label in the output path (default: the file's stem).
        generator_model / rater_model: who proposes inputs and who rates them (orgs from the names, or given).
        per_statement: inputs to keep per statement (N); rating_threshold: the lowest rating kept (1–10).
        max_rounds: rounds at most; statements: a subset of statement ids (None: all; []: none, only pairs).
        pairs: pairs of statement ids to write inputs in tension for; related_pairs: also every statement with its
            `related_statements` (see `speceval.inputgen.pairs`).
        output_dir: runs go to `{output_dir}/{spec}/input_judge/{generator}x{rater}/{timestamp}/`.
        max_tokens: per answer; engine: batch size, polling, timeout, retries and the budget; offline: emulator.
        tier: the service tier both models are sent at.
    """

    spec_path: Path
    generator_model: str
    rater_model: str
    output_dir: Path = DEFAULT_INPUTS_OUTPUT
    spec_name: str | None = None
    generator_org: str | None = None
    rater_org: str | None = None
    per_statement: int = 10
    rating_threshold: int = 7
    max_rounds: int = 3
    statements: list[str] | None = None
    pairs: list[list[str]] | None = None
    related_pairs: bool = False
    max_tokens: int = DEFAULT_MAX_TOKENS
    engine: EngineOptions = field(default_factory=EngineOptions)
    offline: bool = False
    tier: str | None = None
    """The service tier of the generator and the rater (batch, flex, standard; docs/service-tiers.md); None: the
    Batch API."""

    def __post_init__(self) -> None:
        if self.offline and self.engine == EngineOptions():
            self.engine = replace(self.engine, poll_interval=offline_poll_interval())

    def recorded(self) -> dict[str, Any]:
        """The settings a resume must reuse (run.json `parameters.config`)."""
        keep = (
            "generator_model",
            "rater_model",
            "generator_org",
            "rater_org",
            "per_statement",
            "rating_threshold",
            "max_rounds",
            "statements",
            "max_tokens",
            "offline",
        )
        # Pairs and a tier only when asked: a run started before they existed resumes with what it recorded.
        pairs = {key: getattr(self, key) for key in ("pairs", "related_pairs", "tier") if getattr(self, key)}
        return (
            {key: getattr(self, key) for key in keep}
            | pairs
            | {"spec_path": str(Path(self.spec_path).resolve()), "spec_name": self.spec_name}
        )


def check_config(config: InputGenerationConfig, spec: Specification) -> list[Statement]:
    """The statements to generate for; a ConfigError naming the flag for anything out of range."""
    if config.per_statement < 1:
        raise ConfigError(f"--per-statement must be at least 1, not {config.per_statement}")
    if not 1 <= config.rating_threshold <= 10:
        raise ConfigError(f"--rating-threshold must be between 1 and 10, not {config.rating_threshold}")
    if config.max_rounds < 1:
        raise ConfigError(f"--max-rounds must be at least 1, not {config.max_rounds}")
    if not spec.statements:
        raise ConfigError(f"the spec {config.spec_path} has no statements: nothing to generate inputs for")
    if config.statements is None:
        return list(spec.statements)
    if not config.statements and not (config.pairs or config.related_pairs):
        raise ConfigError("no statements and no pairs: nothing to generate inputs for")
    unknown = [s for s in config.statements if s not in spec.ids]
    if unknown:
        raise ConfigError(f"--statements: {', '.join(repr(s) for s in unknown)} not in the spec {config.spec_path}")
    return [spec[s] for s in dict.fromkeys(config.statements)]
