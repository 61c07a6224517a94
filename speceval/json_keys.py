"""JSON objects read with every key once: `json.loads` would silently keep the last of two equal keys, hiding a
copy-paste mistake (a spec line with two `text`s, an inputs file with two `inputs` lists)."""

from __future__ import annotations

from typing import Any


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
