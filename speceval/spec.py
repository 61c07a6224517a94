"""A behaviour specification: statements loaded from strict JSONL, one statement per line
(docs/formats.md#the-spec-one-statement-per-line).

The format is the original SpecEval one, so existing spec files keep working, but reading is strict where the
original was silent: a line that is not valid JSON, a missing, empty or duplicate id, a value of the wrong type or
an unknown enum value is an `InputError` naming the file, the 1-based line and the field. Blank lines are skipped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from speceval.errors import InputError
from speceval.json_keys import DuplicateKeyError, refuse_duplicate_keys

logger = logging.getLogger(__name__)


class _CaseInsensitiveEnum(StrEnum):
    """A string enum that also accepts its values in any letter case, as the original loader did."""

    @classmethod
    def _missing_(cls, value: object) -> _CaseInsensitiveEnum | None:
        if isinstance(value, str):
            for member in cls:
                if member.value == value.lower():
                    return member
        return None

    @classmethod
    def allowed(cls) -> str:
        """The allowed values, comma-separated, for error messages."""
        return ", ".join(member.value for member in cls)


class StatementType(_CaseInsensitiveEnum):
    """What kind of rule a statement is."""

    PROHIBITION = "prohibition"
    REQUIREMENT = "requirement"
    GUIDELINE = "guideline"
    DEFINITION = "definition"


class AuthorityLevel(_CaseInsensitiveEnum):
    """Who may override a statement, in either vocabulary of the OpenAI Model Spec.

    Releases up to early 2025 use platform > developer > user > guideline; later releases split 'platform' into
    root > system. Both vocabularies are accepted and kept as written (no mapping), so a spec round-trips
    unchanged and an analysis can still tell which vocabulary a spec used.
    """

    ROOT = "root"
    SYSTEM = "system"
    PLATFORM = "platform"
    DEVELOPER = "developer"
    USER = "user"
    GUIDELINE = "guideline"


class Example(BaseModel):
    """A calibration example of a statement, rendered into judge prompts. Every key is optional.

    Keys other than the four below are kept (in `model_extra`) so that converting a spec loses nothing.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    description: str | None = None
    """What the example shows, e.g. 'user asks for an elected official's contact info'."""
    user_query: str | None = None
    """The user's message."""
    good_response: str | None = None
    """A response that follows the statement."""
    bad_response: str | None = None
    """A response that violates it (may be absent: some statements only show good behaviour)."""


class StatementMetadata(BaseModel):
    """Free-form metadata of a statement; only `examples` is interpreted, other keys are kept as they are."""

    model_config = ConfigDict(extra="allow", frozen=True)

    examples: list[Example] = Field(default_factory=list)
    """Calibration examples, in file order."""


class Statement(BaseModel):
    """One statement of a specification (one line of the spec JSONL)."""

    model_config = ConfigDict(frozen=True)

    id: str
    """Unique, non-empty identifier; becomes a file name (made safe by `speceval.paths`) and part of request ids."""
    text: str
    """The rule itself, quoted verbatim into judge prompts."""
    type: StatementType = StatementType.GUIDELINE
    """Prohibition, requirement, guideline or definition (case-insensitive in the file)."""
    authority_level: AuthorityLevel = AuthorityLevel.GUIDELINE
    """Who may override the statement (case-insensitive in the file)."""
    section: str = ""
    """The section of the source document the statement comes from."""
    subsection: str | None = None
    """The subsection, if any (judge prompts print N/A when absent)."""
    related_statements: list[str] = Field(default_factory=list)
    """Ids of related statements (informational; not checked against the spec)."""
    metadata: StatementMetadata = Field(default_factory=StatementMetadata)
    """Examples and any other metadata."""

    @field_validator("id")
    @classmethod
    def _id_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be a non-empty string")
        return value

    @field_validator("type", "authority_level", mode="before")
    @classmethod
    def _known_enum_value(cls, value: Any, info: ValidationInfo) -> Any:
        enum = StatementType if info.field_name == "type" else AuthorityLevel
        if isinstance(value, str):
            try:
                return enum(value)
            except ValueError:
                raise ValueError(
                    f"unknown value {value!r}; allowed values: {enum.allowed()} (any letter case)"
                ) from None
        return value


class Specification(BaseModel):
    """A loaded spec: its statements in file order, looked up by id.

    Build one with `load_spec`; constructing it directly also checks that ids are unique.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    """The spec's name: the file's stem (`openai` for `openai.jsonl`)."""
    source_path: Path
    """The file it was read from."""
    sha256: str
    """Hex sha256 of the file's bytes, so a resumed run can tell that the spec changed."""
    statements: list[Statement]
    """The statements, in file order."""

    _by_id: dict[str, Statement] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _unique_ids(self) -> Specification:
        for statement in self.statements:
            if statement.id in self._by_id:
                raise ValueError(f"duplicate statement id {statement.id!r}")
            self._by_id[statement.id] = statement
        return self

    @property
    def ids(self) -> list[str]:
        """The statement ids, in file order."""
        return [statement.id for statement in self.statements]

    def get(self, statement_id: str) -> Statement | None:
        """The statement with this id, or None."""
        return self._by_id.get(statement_id)

    def __getitem__(self, statement_id: str) -> Statement:
        """The statement with this id; KeyError if there is none."""
        return self._by_id[statement_id]

    def __contains__(self, statement_id: object) -> bool:
        """Whether the spec has a statement with this id."""
        return isinstance(statement_id, str) and statement_id in self._by_id

    def __len__(self) -> int:
        """The number of statements."""
        return len(self.statements)


def load_spec(path: str | Path) -> Specification:
    """Read a spec JSONL file strictly.

    Args:
        path: the spec file, one JSON object per line (blank lines allowed).

    Returns:
        The specification, named after the file's stem.

    Raises:
        InputError: naming the file, the 1-based line and the field, for the first problem found: unreadable
            file, bytes that are not UTF-8, invalid JSON, a line that is not an object, a missing or wrong-typed
            field, an unknown enum value, a duplicate id, or a file without any statement.
    """
    path = Path(path)
    data = _read_bytes(path)
    statements: list[Statement] = []
    first_line: dict[str, int] = {}
    warned_keys: set[str] = set()
    for number, raw in enumerate(data.split(b"\n"), start=1):
        line = _decode_line(path, raw, number)
        if not line.strip():
            continue
        obj = _parse_object(path, line, number)
        _warn_unknown_keys(path, obj, number, warned_keys)
        try:
            statement = Statement.model_validate(obj)
        except ValidationError as exc:
            raise _translate(path, number, exc) from None
        if statement.id in first_line:
            raise InputError(
                path,
                f"duplicate id {statement.id!r} (first defined on line {first_line[statement.id]})",
                line=number,
                field="id",
            )
        first_line[statement.id] = number
        statements.append(statement)
    if not statements:
        raise InputError(path, "the spec has no statements (the file is empty or has only blank lines)")
    _refuse_file_name_collisions(path, first_line)
    return Specification(
        name=path.stem, source_path=path, sha256=hashlib.sha256(data).hexdigest(), statements=statements
    )


# -- helpers ------------------------------------------------------------------------------------------------


def _refuse_file_name_collisions(path: Path, first_line: dict[str, int]) -> None:
    """An id whose file-name form is another id (`a/b` is written `a%2Fb`): an inputs file `a%2Fb.json` would
    belong to either, so the spec is refused instead of guessing which."""
    from speceval.paths import safe_filename

    for statement_id, line in first_line.items():
        encoded = safe_filename(statement_id)
        if encoded != statement_id and encoded in first_line:
            raise InputError(
                path,
                f"id {statement_id!r} is written {encoded!r} in file names, which is the id on "
                f"line {first_line[encoded]}: their inputs and results files would collide; "
                "rename one",
                line=line,
                field="id",
            )


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "spec file not found") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory, not a spec JSONL file") from None
    except OSError as exc:
        raise InputError(path, f"cannot read the spec file: {exc.strerror or exc}") from None


def _decode_line(path: Path, raw: bytes, number: int) -> str:
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
        # Some Windows editors prepend a byte-order mark; it carries no content.
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            path, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})", line=number
        ) from None


def _parse_object(path: Path, line: str, number: int) -> dict[str, Any]:
    try:
        obj = json.loads(line, object_pairs_hook=refuse_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON: {exc.msg} (column {exc.colno})", line=number) from None
    except DuplicateKeyError as exc:
        raise InputError(path, "the key appears twice in one object", line=number, field=exc.key) from None
    except RecursionError:
        raise InputError(path, "JSON nested too deeply", line=number) from None
    if not isinstance(obj, dict):
        raise InputError(path, f"expected a JSON object (one statement), got {json_type_name(obj)}", line=number)
    try:
        # Only a `\uD800`-`\uDFFF` escape can put a lone surrogate in a line that decoded as UTF-8: lines without
        # one skip the walk (two fifths of loading a 500 kB spec, which every run and report loads again).
        surrogate = _find_lone_surrogate(obj, "") if _SURROGATE_ESCAPE.search(line) else None
    except RecursionError:
        raise InputError(path, "JSON nested too deeply", line=number) from None
    if surrogate is not None:
        raise InputError(
            path,
            "contains an unpaired surrogate escape (\\ud800-\\udfff), not text",
            line=number,
            field=surrogate or None,
        )
    return obj


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape of a UTF-16 surrogate (an escaped backslash before `ud800` matches too: the walk then decides)."""


def _find_lone_surrogate(value: Any, where: str) -> str | None:
    """The dotted path of the first string (value or key) with a lone surrogate, which no UTF-8 file can hold."""
    if isinstance(value, str):
        return None if _is_text(value) else where
    children: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            label = key if _is_text(key) else key.encode("utf-8", "backslashreplace").decode("utf-8")
            path = f"{where}.{label}" if where else label
            if not _is_text(key):
                return path
            children.append((path, item))
    elif isinstance(value, list):
        children = [(f"{where}.{index}", item) for index, item in enumerate(value)]
    for path, item in children:
        found = _find_lone_surrogate(item, path)
        if found is not None:
            return found
    return None


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _warn_unknown_keys(path: Path, obj: dict[str, Any], number: int, warned: set[str]) -> None:
    # Unknown keys are kept out of the model but not fatal: older spec files carry extras. A typo such as
    # 'authority' would otherwise silently become the default, so say so, once per key.
    unknown = sorted(set(obj) - set(Statement.model_fields) - warned)
    if unknown:
        warned.update(unknown)
        logger.warning("%s, line %d: ignoring unknown key(s) %s", path, number, ", ".join(map(repr, unknown)))


def json_type_name(value: Any) -> str:
    """How a parsed JSON value is called in error messages: 'null', 'a string', 'an array', ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


_EXPECTED = {
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def _reason(error: ErrorDetails) -> str:
    kind = error["type"]
    if kind == "missing":
        return "required field is missing"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {json_type_name(error['input'])}"
    if kind == "value_error":
        return str(error.get("ctx", {}).get("error", error["msg"]))
    if kind == "enum":
        return f"expected one of {error.get('ctx', {}).get('expected', '')}, got {json_type_name(error['input'])}"
    return error["msg"]


def _translate(path: Path, number: int, exc: ValidationError) -> InputError:
    """The first pydantic error as an InputError with a dotted field path (`metadata.examples.0.user_query`)."""
    errors = exc.errors()
    first = errors[0]
    field = ".".join(str(part) for part in first["loc"]) or None
    reason = _reason(first)
    if len(errors) > 1:
        reason += f" (and {len(errors) - 1} more problem(s) on this line)"
    return InputError(path, reason, line=number, field=field)
