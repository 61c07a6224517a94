"""The keys of the JSON we read and write. Read: every key once (`json.loads` would silently keep the last of two
equal keys, hiding a copy-paste mistake: a spec line with two `text`s, an inputs file with two `inputs` lists).
Written: a typed record's newer optional fields only once set (so a file or digest written before the field
existed reads and hashes as it did); and a record file that may not exist yet read as None."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer

from speceval.errors import InputError


class DuplicateKeyError(ValueError):
    """A JSON object holds `key` twice."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An `object_pairs_hook` for `json.loads` that raises `DuplicateKeyError` instead of keeping the last key."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise DuplicateKeyError(key)
        obj[key] = value
    return obj


_Record = TypeVar("_Record", bound=BaseModel)


class OmitsUnsetFields(BaseModel):
    """A record whose fields in `omitted_when_none` are not written while None: each was added after records of
    its kind were already on disk (and hashed into digests a resumed run compares), which must stay as they were."""

    omitted_when_none: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in self.omitted_when_none:
            if data.get(name) is None:
                data.pop(name, None)
        return data


def read_optional_record(path: Path, model: type[_Record], problem: str) -> _Record | None:
    """The record in `path`, or None when there is no such file yet; a file that is not one is an `InputError`
    naming it (`problem`: what it is then, e.g. "corrupt round record")."""
    if not path.is_file():
        return None
    try:
        return model.model_validate_json(path.read_bytes())
    except ValueError as exc:
        raise InputError(path, f"{problem}: {exc}") from None
