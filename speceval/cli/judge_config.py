"""The YAML configuration of the judge commands: one schema per command, unknown keys are errors.

Keys are those of the original SpecEval configs plus the engine's options. Order of precedence:
YAML < environment (`SPECEVAL_POLL_INTERVAL`, API key variables) < command-line flag, where a flag that was not
given (None) never overrides anything, even if the YAML holds a default value. Relative paths in a YAML file are
relative to the current directory, as in the original.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from speceval.errors import InputError


class JudgeFileConfig(BaseModel):
    """Keys both judge commands accept (`extra='forbid'`: a typo is an error naming the file and key)."""

    model_config = ConfigDict(extra="forbid")

    spec_name: str | None = Field(default=None, description="label of the spec in output paths (default: file stem)")
    spec_path: Path | None = Field(default=None, description="the spec JSONL the candidates answered")
    candidate_generation_dirs: list[Path] | None = Field(
        default=None, description="generation run directories; each one's run.json names its model"
    )
    candidates: dict[str, Path] | None = Field(
        default=None, description="explicit candidate name → generation run directory (for runs without run.json)"
    )
    output_dir_base: Path | None = Field(default=None, description="where spec_{spec}/judge_{judge}/... goes")
    batch_size: int | None = Field(default=None, gt=0, description="most requests per provider job")
    temperature: float | None = Field(default=None, ge=0, description="the judge's sampling temperature")
    max_tokens: int | None = Field(default=None, gt=0, description="most output tokens per judge answer")
    poll_interval: float | None = Field(default=None, gt=0, description="seconds between polls")
    timeout_hours: float | None = Field(default=None, gt=0, description="stop waiting (resumably) after this long")
    max_attempts: int | None = Field(default=None, gt=0, description="jobs one request may be sent in")
    verbose: bool = Field(default=False, description="debug logging on the console")
    openai_api_key: str | None = Field(default=None, description="used only when OPENAI_API_KEY is not set")
    anthropic_api_key: str | None = Field(default=None, description="used only when ANTHROPIC_API_KEY is not set")
    google_api_key: str | None = Field(
        default=None, description="used only when GOOGLE_API_KEY / GEMINI_API_KEY are not set"
    )


C = TypeVar("C", bound=JudgeFileConfig)


class ComplianceFileConfig(JudgeFileConfig):
    """`run_batched_binary_compliance --config-file` keys."""

    compliance_judge_model_name: str | None = Field(default=None, description="the judge model")
    compliance_judge_org: str | None = Field(default=None, description="the judge's provider (default: from name)")
    mode: Literal["binary", "likert"] | None = Field(default=None, description="binary (default) or likert (1-5)")


class RankingFileConfig(JudgeFileConfig):
    """`run_batched_ranking --config-file` keys."""

    ranking_judge_model_name: str | None = Field(default=None, description="the judge model")
    ranking_judge_org: str | None = Field(default=None, description="the judge's provider (default: from name)")


def load_config(path: Path, schema: type[C]) -> C:
    """Read and validate a YAML config; errors name the file, the line (when known) and the key."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read the config file: {exc}") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(
            path, f"not valid YAML: {getattr(exc, 'problem', None) or exc}", line=mark.line + 1 if mark else None
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(path, "a config file must be a mapping of keys to values")
    lines = _key_lines(node)
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise _translate(path, exc, lines, schema) from None


def _key_lines(node: Any) -> dict[str, int]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(key.value): key.start_mark.line + 1 for key, _ in node.value if isinstance(key, yaml.ScalarNode)}


def _translate(path: Path, exc: ValidationError, lines: dict[str, int], schema: type[JudgeFileConfig]) -> InputError:
    first = exc.errors()[0]
    loc = [str(part) for part in first["loc"]]
    key = loc[0] if loc else None
    if first["type"] == "extra_forbidden":
        allowed = ", ".join(sorted(schema.model_fields))
        reason = f"unknown key; the keys this command reads are: {allowed}"
    else:
        reason = first["msg"]
    more = len(exc.errors()) - 1
    if more:
        reason += f" (and {more} more problem(s))"
    return InputError(path, reason, line=lines.get(key) if key else None, field=".".join(loc) or None)
