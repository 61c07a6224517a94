"""The YAML configuration of the judge commands: one schema per command, unknown keys are errors.

Every key of the original SpecEval's compliance and ranking configs is accepted with its original meaning, plus
the engine's options. Order of precedence: YAML < environment (`SPECEVAL_POLL_INTERVAL`, `GOOGLE_CLOUD_PROJECT`,
...) < command-line flag, where a flag that was not given never overrides anything, even if the YAML holds a
default value. Relative paths in a YAML file are relative to the current directory, as in the original.

Two keys keep the original's meaning although it is unusual:

* `<kind>_judge_org: google` together with `input_bucket` / `output_bucket` means Vertex AI batch prediction
  (`judge_provider`); without buckets it means the Gemini API.
* An API key written in the YAML (`openai_api_key`, ...) is used for that run only (it wins over the
  environment, as the original's compliance script did): it is registered for redaction, never written to
  `run.json` or a log, and a warning says where it was found (`yaml_api_key`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from speceval.defaults import Mode, Scope
from speceval.endpoint_keys import EndpointKeys
from speceval.errors import ConfigError, InputError
from speceval.redaction import redact, register_secret
from speceval.settings_checks import BatchSize, MaxAttempts, MaxTokens, PollInterval, Temperature, TimeoutHours

logger = logging.getLogger(__name__)

VERTEX_KEYS = ("project", "location", "input_bucket", "output_bucket")
"""The Vertex AI settings (YAML keys and, with dashes, flags)."""
_KEY_FIELDS = {"openai": "openai_api_key", "anthropic": "anthropic_api_key", "google": "google_api_key"}


class JudgeFileConfig(EndpointKeys):
    """Keys both judge commands accept (`extra='forbid'`: a typo is an error naming the file, line and key).

    A judge without a batch API (org `ray`, `openai-compatible`, `together`) is reached with the keys of
    `EndpointKeys`, named as the flags (`base_url` is `--base-url`); a flag given overrides its key.
    """

    model_config = ConfigDict(extra="forbid")

    spec_name: str | None = Field(default=None, description="label of the spec in output paths (default: file stem)")
    spec_path: Path | None = Field(default=None, description="the spec JSONL the candidates answered")
    candidate_generation_dirs: list[Path] | None = Field(
        default=None,
        description="generation folders: run directories, their results/ folders, or folders written by the "
        "original SpecEval (named from the path: …/<model>/<stamp>/results → <model>)",
    )
    candidates: dict[str, Path] | None = Field(
        default=None, description="explicit candidate name → generation folder (overrides a name from the path)"
    )
    output_dir_base: Path | None = Field(default=None, description="where spec_{spec}/judge_{judge}/... goes")
    batch_size: BatchSize | None = Field(default=None, description="most requests per provider job")
    temperature: Temperature | None = Field(default=None, description="the judge's sampling temperature")
    max_tokens: MaxTokens | None = Field(default=None, description="most output tokens per judge answer")
    poll_interval: PollInterval | None = Field(default=None, description="seconds between polls")
    timeout_hours: TimeoutHours | None = Field(default=None, description="stop waiting (resumably) after this long")
    max_attempts: MaxAttempts | None = Field(default=None, description="jobs one request may be sent in")
    verbose: bool = Field(default=False, description="debug logging on the console")
    openai_api_key: str | None = Field(default=None, description="used for this run only; prefer OPENAI_API_KEY")
    anthropic_api_key: str | None = Field(default=None, description="used for this run only; prefer ANTHROPIC_API_KEY")
    google_api_key: str | None = Field(
        default=None, description="Gemini API only (Vertex AI uses Google Cloud credentials); prefer GOOGLE_API_KEY"
    )
    project: str | None = Field(default=None, description="Vertex AI: Google Cloud project ($GOOGLE_CLOUD_PROJECT)")
    location: str | None = Field(default=None, description="Vertex AI: region ($GOOGLE_CLOUD_LOCATION)")
    input_bucket: str | None = Field(
        default=None, description="Vertex AI: Cloud Storage bucket for request files (with judge org google)"
    )
    output_bucket: str | None = Field(
        default=None, description="Vertex AI: Cloud Storage bucket the jobs write their predictions to"
    )

    _source: Path | None = PrivateAttr(default=None)
    _lines: dict[str, int] = PrivateAttr(default_factory=dict)

    def where(self, key: str) -> str:
        """'FILE, line N' of a key read from a file (or 'the configuration' when built in Python)."""
        if self._source is None:
            return "the configuration"
        line = self._lines.get(key)
        return f"{self._source}, line {line}" if line is not None else str(self._source)


C = TypeVar("C", bound=BaseModel)


class ComplianceFileConfig(JudgeFileConfig):
    """`run_batched_binary_compliance --config-file` keys."""

    compliance_judge_model_name: str | None = Field(default=None, description="the judge model")
    compliance_judge_org: str | None = Field(default=None, description="the judge's provider (default: from name)")
    mode: Literal[Mode.BINARY, Mode.LIKERT] | None = Field(default=None, description="binary (default) or likert (1-5)")
    scope: Scope | None = Field(
        default=None,
        description="conversations: one verdict on the whole transcript (default) or one per "
        "assistant turn, in its context",
    )


class RankingFileConfig(JudgeFileConfig):
    """`run_batched_ranking --config-file` keys."""

    ranking_judge_model_name: str | None = Field(default=None, description="the judge model")
    ranking_judge_org: str | None = Field(default=None, description="the judge's provider (default: from name)")


def judge_provider(org: str | None, vertex: dict[str, str]) -> str | None:
    """The provider a judge org names, given the Vertex settings in force (flags, YAML keys).

    `google` with an input or output bucket is Vertex AI batch prediction, as in the original; `vertex` is
    Vertex AI too. Vertex settings with any other provider are an error (they would be silently ignored).
    """
    named = org.lower() if org is not None else None
    if named in {"google", "vertex"} and (vertex.get("input_bucket") or vertex.get("output_bucket")):
        return "vertex"
    if vertex and named != "vertex":
        keys = ", ".join(sorted(vertex))
        raise ConfigError(
            f"{keys} apply to Vertex AI only: set the judge org to google with input_bucket and output_bucket "
            "(or to vertex)"
        )
    return org


def yaml_key_value(config: JudgeFileConfig, provider: str) -> str | None:
    """The key the YAML holds for `provider`, if any (registered for redaction; nothing logged)."""
    field = _KEY_FIELDS.get(provider)
    key = getattr(config, field) if field else None
    register_secret(key)
    return key or None


def yaml_api_key(config: JudgeFileConfig, provider: str) -> dict[str, str]:
    """The provider option `api_key` from a key written in the YAML, used for this run only.

    Every key in the file is registered for redaction, whichever provider it is for, and each one found is
    warned about (with its file and line; never its value).
    """
    for name in _KEY_FIELDS.values():
        register_secret(getattr(config, name))
    field = _KEY_FIELDS.get(provider)
    key = getattr(config, field) if field else None
    for other in _KEY_FIELDS.values():
        if other != field and getattr(config, other):
            logger.warning("%s holds %s, which the %s judge does not use", config.where(other), other, provider)
    if not key or field is None:
        return {}
    logger.warning(
        "%s holds an API key (%s): it is used for this run only and never written anywhere; prefer the environment "
        "variable so the key stays out of files",
        config.where(field),
        field,
    )
    return {"api_key": key}


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
    lines: dict[str, int] = {}
    _walk_keys(path, node, "", lines)  # every key's line, and no key twice (PyYAML would keep the last silently)
    try:
        config = schema.model_validate(data)
    except ValidationError as exc:
        raise _translate(path, exc, lines, schema) from None
    if isinstance(config, JudgeFileConfig):
        config._source, config._lines = Path(path), lines
        for field in _KEY_FIELDS.values():  # from now on, no message or log line can carry a key of this file
            register_secret(getattr(config, field))
    return config


def _walk_keys(path: Path, node: Any, prefix: str, lines: dict[str, int]) -> None:
    """Fill `lines` (dotted key path, list items by index → line); a key given twice in one mapping is an error."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                continue
            name, line = str(key.value), key.start_mark.line + 1
            dotted = f"{prefix}{name}"
            if name in seen:
                raise InputError(
                    path,
                    f"the key {name!r} is given twice (first on line {seen[name]}); YAML would "
                    "silently keep only the last one",
                    line=line,
                    field=dotted,
                )
            seen[name] = line
            lines[dotted] = line
            _walk_keys(path, value, f"{dotted}.", lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[f"{prefix}{index}"] = item.start_mark.line + 1
            _walk_keys(path, item, f"{prefix}{index}.", lines)


def _line_of_loc(lines: dict[str, int], loc: list[str]) -> int | None:
    """The line of the deepest key of `loc` the file holds (pydantic adds tags and model names: skip those)."""
    found = None
    known = ""
    for part in loc:
        candidate = f"{known}.{part}" if known else part
        if candidate in lines:
            known, found = candidate, lines[candidate]
    return found


def _translate(path: Path, exc: ValidationError, lines: dict[str, int], schema: type[BaseModel]) -> InputError:
    problems = []
    for error in exc.errors():
        loc = [str(part) for part in error["loc"]]
        if error["type"] == "extra_forbidden" and len(loc) == 1:
            reason = f"unknown key; the keys this command reads are: {', '.join(sorted(schema.model_fields))}"
        elif error["type"] == "extra_forbidden":
            reason = "unknown key"
        else:
            reason = error["msg"]
        problems.append((_line_of_loc(lines, loc), ".".join(loc) or None, reason))
    line, field, reason = problems[0]
    for other_line, other_field, other_reason in problems[1:]:  # every problem, each with its own line
        reason += f"; also line {other_line}, field {other_field!r}: {other_reason}"
    # A message never quotes a value, but a key in the file must not leak through one that does.
    return InputError(path, redact(reason), line=line, field=field)
