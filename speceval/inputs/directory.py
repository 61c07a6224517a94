"""A pre-generated inputs directory, read into prompt items (docs/formats.md).

The directory holds one `<statement_id>.json` per statement: a JSON object whose `inputs` is a list of strings
(other keys, such as the autobencher's `metadata`, are ignored). An input may also be a conversation object
(`turns`, `messages`: see `speceval.inputs.script`); a set holding any is sent in rounds by the generation
pipeline, never straight through an engine. An input's `original_index` is its position in
that list. Only top-level `*.json` files are read, sorted by name, so the order of items never depends on the
file system. Every problem is an `InputError` naming the file (and the field, and the line for JSON syntax).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from speceval.errors import ConfigError, InputError, RunStateError
from speceval.inputs.script import Conversation, parse_item
from speceval.json_keys import DuplicateKeyError, refuse_duplicate_keys
from speceval.paths import safe_filename
from speceval.spec import Specification, json_type_name
from speceval.wire.prompt import PromptItem

logger = logging.getLogger(__name__)


class StatementInputs(BaseModel):
    """One validated inputs file: which statement it feeds, how many inputs it holds, and its hash."""

    model_config = ConfigDict(frozen=True)

    statement_id: str
    path: Path
    count: int
    sha256: str
    conversations: int = 0
    """How many of its inputs are conversation objects (the others are strings)."""
    max_rounds: int = 1
    """The most requests one of its inputs makes (1 for a file of strings)."""


class InputSet(BaseModel):
    """Everything read from an inputs directory, validated, without holding the prompts in memory.

    Every file is parsed and checked once by `load_inputs`; afterwards a statement's prompts are read again on
    demand (`texts`), so a run of a million inputs never holds them all. It is an `ItemSource` for the engine.
    `len(input_set)` is the number of items.
    """

    model_config = ConfigDict(frozen=True)

    directory: Path
    """The inputs directory."""
    statements: list[StatementInputs]
    """One entry per inputs file that feeds a statement, in file-name order."""
    files: list[Path]
    """The files the items came from, sorted by name (one per statement that has inputs)."""
    skipped_files: list[Path] = Field(default_factory=list)
    """Files naming no statement of the spec, skipped because `allow_unknown_statements` was set."""
    sha256: str
    """Hex sha256 over the names and bytes of `files`, so a resumed run can tell that the inputs changed.

    Skipped files are not part of it: they contribute nothing to the run.
    """

    follow_ups: tuple[str, ...] = ()
    """Scripted user turns appended to every input (an experiment's `follow_ups` variation): a string becomes a
    conversation of itself and these turns, a conversation gets them after its own. Not part of `sha256` (the run's
    settings record them)."""

    max_turns: int | None = None
    """With a simulated user (`speceval.conversations.simulated_user`): the most rounds any conversation may have;
    after its scripted turns, a simulated user writes its turns up to this many. None: no simulated user."""

    def with_follow_ups(self, turns: Sequence[str]) -> InputSet:
        """This set with `turns` appended to every input (no turns: the set itself)."""
        return self.model_copy(update={"follow_ups": tuple(turns)}) if turns else self

    def with_simulated_user(self, max_turns: int | None) -> InputSet:
        """This set with every input a conversation a simulated user continues up to `max_turns` rounds."""
        return self.model_copy(update={"max_turns": max_turns}) if max_turns is not None else self

    def __len__(self) -> int:
        """The number of prompt items."""
        return sum(entry.count for entry in self.statements)

    @property
    def has_conversations(self) -> bool:
        """Whether any input is a conversation (then the set is sent in rounds: `speceval.conversations`)."""
        return bool(self.follow_ups) or self.max_turns is not None or any(e.conversations for e in self.statements)

    @property
    def scripted_rounds(self) -> int:
        """The most rounds any input's own turns (and follow-ups) need."""
        return max((entry.max_rounds for entry in self.statements), default=1) + len(self.follow_ups)

    @property
    def max_rounds(self) -> int:
        """The most rounds any input needs (1 when every input is a string)."""
        return max(self.scripted_rounds, self.max_turns or 0)

    @property
    def statement_ids(self) -> list[str]:
        """Ids of the statements that have an inputs file, in file order."""
        return [entry.statement_id for entry in self.statements]

    @property
    def items(self) -> list[PromptItem]:
        """All prompts as items (reads every file again; for small sets and tests: runs use `texts`)."""
        self._refuse_conversations()
        return [
            PromptItem(statement_id=entry.statement_id, original_index=index, input_text=text)
            for entry in self.statements
            for index, text in self.texts(entry.statement_id).items()
        ]

    def statement_counts(self) -> list[tuple[str, range]]:
        """(statement id, original indices) per statement, in run order (the `ItemSource` protocol)."""
        # The engine asks this first, before it builds or sends anything: a conversation set given to an engine
        # directly would send only first turns, so it is refused here, once, before any cost.
        self._refuse_conversations()
        return [(entry.statement_id, range(entry.count)) for entry in self.statements]

    def texts(self, statement_id: str) -> dict[int, str]:
        """original index → prompt for one statement, read from its file (which must not have changed).

        A conversation's entry is its first user message (see `entries` for the whole input).
        """
        entry, items = self._read(statement_id)
        if not entry.conversations and not self.follow_ups:
            return dict(enumerate(items))  # type: ignore[arg-type]  # all strings: the engine's fast path
        return {index: item if isinstance(item, str) else item.first_user_text for index, item in enumerate(items)}

    def entries(self, statement_id: str) -> dict[int, str | Conversation]:
        """original index → input (a string or a `Conversation`) for one statement, read from its file."""
        items = self._read(statement_id)[1]
        if not self.follow_ups and self.max_turns is None:
            return dict(enumerate(items))
        # With a simulated user a string is a conversation too: its first turn, then the simulated user's.
        return {index: _followed(item, self.follow_ups) for index, item in enumerate(items)}

    def _read(self, statement_id: str) -> tuple[StatementInputs, list[str | Conversation]]:
        entry = next((e for e in self.statements if e.statement_id == statement_id), None)
        if entry is None:
            raise KeyError(statement_id)
        data = _read_bytes(entry.path)
        if hashlib.sha256(data).hexdigest() != entry.sha256:
            raise RunStateError(f"{entry.path} changed while the run was using it; restore it or start a new run")
        return entry, _parse_inputs(entry.path, data)

    def _refuse_conversations(self) -> None:
        if self.has_conversations:
            raise ConfigError(
                f"the inputs in {self.directory} hold conversations, which are sent one round per turn by the "
                "generation pipeline (BatchedGenerationPipeline.run, the generation command); they cannot be "
                "given to an engine (or an experiment) as single prompts"
            )


def _followed(item: str | Conversation, turns: tuple[str, ...]) -> Conversation:
    if isinstance(item, str):
        return Conversation(turns=(item, *turns))
    return item.model_copy(update={"turns": (*item.turns, *turns)})


def load_inputs(inputs_dir: str | Path, spec: Specification, *, allow_unknown_statements: bool = False) -> InputSet:
    """Read every `<statement_id>.json` of an inputs directory.

    A file's stem must be a statement id of `spec`; for ids that cannot be file names (say `a/b`) the stem may
    also be `speceval.paths.safe_filename(id)`. An exact id match wins over a safe-name match.

    Args:
        inputs_dir: the directory (only its top-level `*.json` files are read).
        spec: the specification the inputs belong to.
        allow_unknown_statements: skip, with a warning, files whose stem names no statement, instead of failing.

    Returns:
        The items, the files they came from, the skipped files and a hash of the inputs.

    Raises:
        InputError: the directory is missing, is not a directory or holds no `*.json` file; a file is not UTF-8,
            not valid JSON, not an object, has no `inputs` list, or an input that is neither a string nor a
            well-formed conversation (named by item and field, e.g. `inputs[3].turns[1]`); a file names no statement
            (unless allowed); or two files name the same statement.
    """
    directory = Path(inputs_dir)
    by_stem = _stems_to_ids(spec)
    statements: list[StatementInputs] = []
    files: list[Path] = []
    skipped: list[Path] = []
    seen: dict[str, Path] = {}
    digest = hashlib.sha256()
    for path in _json_files(directory):
        statement_id = by_stem.get(path.stem)
        if statement_id is None:
            if not allow_unknown_statements:
                raise InputError(path, _unknown_reason(path.stem, spec))
            logger.warning("%s: no statement %r in %s; skipping the file", path, path.stem, spec.source_path)
            skipped.append(path)
            continue
        if statement_id in seen:
            raise InputError(path, f"statement {statement_id!r} already has inputs in {seen[statement_id].name}")
        seen[statement_id] = path
        data = _read_bytes(path)
        texts = _parse_inputs(path, data)
        if not texts:
            logger.warning("%s: the 'inputs' list is empty; statement %r gets no prompts", path, statement_id)
        conversations = [item for item in texts if not isinstance(item, str)]
        statements.append(
            StatementInputs(
                statement_id=statement_id,
                path=path,
                count=len(texts),
                sha256=hashlib.sha256(data).hexdigest(),
                conversations=len(conversations),
                max_rounds=max((c.rounds for c in conversations), default=1),
            )
        )
        files.append(path)
        for chunk in _hash_chunks(path.name, data):
            digest.update(chunk)
    if statements and not any(s.count for s in statements):
        raise InputError(directory, "every 'inputs' list here is empty: there is nothing to send")
    missing = len(spec) - len(seen)
    if missing:
        logger.info("%d of %d statements of %s have no inputs file", missing, len(spec), spec.name)
    return InputSet(
        directory=directory, statements=statements, files=files, skipped_files=skipped, sha256=digest.hexdigest()
    )


# -- helpers ------------------------------------------------------------------------------------------------


def _stems_to_ids(spec: Specification) -> dict[str, str]:
    by_stem = {safe_filename(statement_id): statement_id for statement_id in spec.ids}
    # Exact ids last, so they win when one id's safe name happens to equal another id.
    by_stem.update({statement_id: statement_id for statement_id in spec.ids})
    return by_stem


def _json_files(directory: Path) -> list[Path]:
    if not directory.exists():
        raise InputError(directory, "inputs directory not found")
    if not directory.is_dir():
        raise InputError(directory, "not a directory (expected a folder of <statement_id>.json files)")
    try:
        entries = sorted((path for path in directory.iterdir() if path.suffix == ".json"), key=lambda path: path.name)
    except OSError as exc:
        raise InputError(directory, f"cannot list the inputs directory: {exc.strerror or exc}") from None
    files = []
    for path in entries:
        if path.is_file():
            files.append(path)
            continue
        # Never skipped in silence: a statement's inputs that cannot be read would just not be evaluated.
        kind = (
            "a broken symbolic link"
            if path.is_symlink() and not path.exists()
            else "a folder"
            if path.is_dir()
            else "not a regular file (a FIFO, socket or device)"
        )
        raise InputError(path, f"cannot read inputs from it: it is {kind}; remove it or put a file there")
    if not files:
        raise InputError(directory, "no *.json files in the inputs directory (expected <statement_id>.json)")
    return files


def _unknown_reason(stem: str, spec: Specification) -> str:
    close = difflib.get_close_matches(stem, spec.ids, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (
        f"no statement with id {stem!r} in the spec {spec.source_path}{hint}; rename or remove the file, "
        "or pass --allow-unknown-statements (allow_unknown_statements=True) to skip it"
    )


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot read the file: {exc.strerror or exc}") from None


def _parse_inputs(path: Path, data: bytes) -> list[str | Conversation]:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a byte-order mark from a Windows editor carries no content
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(path, f"not valid UTF-8 (byte 0x{data[exc.start]:02x})", line=line) from None
    try:
        obj: Any = json.loads(text, object_pairs_hook=refuse_duplicate_keys)
    except DuplicateKeyError as exc:
        raise InputError(
            path,
            f"the key {exc.key!r} is given twice in one object; JSON readers would silently keep only the last one",
            field=exc.key,
        ) from None
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None
    except RecursionError:
        raise InputError(path, "JSON nested too deeply") from None
    if not isinstance(obj, dict):
        raise InputError(path, f"expected a JSON object with an 'inputs' list, got {json_type_name(obj)}")
    if "inputs" not in obj:
        raise InputError(path, "required field is missing (expected a list of strings)", field="inputs")
    inputs = obj["inputs"]
    if not isinstance(inputs, list):
        raise InputError(path, f"expected a list of strings, got {json_type_name(inputs)}", field="inputs")
    seen_ids: dict[str, int] = {}
    for index, item in enumerate(inputs):
        if not isinstance(item, str):
            if isinstance(item, dict):
                inputs[index] = parse_item(path, index, item, seen_ids)  # a conversation (strings stay as read)
                continue
            raise InputError(
                path,
                f"expected a string or a conversation object, got {json_type_name(item)}",
                field=f"inputs[{index}]",
            )
        try:
            item.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(
                path, "contains an unpaired surrogate escape (\\ud800-\\udfff), not text", field=f"inputs[{index}]"
            ) from None
    return inputs


def _hash_chunks(name: str, data: bytes) -> tuple[bytes, ...]:
    # Length-prefix both parts so that no two different (name, bytes) sequences feed the hash the same stream.
    encoded = name.encode("utf-8", "surrogatepass")
    return len(encoded).to_bytes(8, "big"), encoded, len(data).to_bytes(8, "big"), data
