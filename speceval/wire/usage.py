"""Tokens a request consumed, as the provider reported them: the typed `Usage` and the lean `Tokens`.

Every provider module of `speceval.wire` reads its answer's usage object into `Tokens`; the engines add them up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel


class Usage(BaseModel):
    """Tokens a request consumed, as the provider reported them.

    `input_tokens` counts every input token, cached or not, for every provider (Anthropic reports cache reads and
    writes apart from its `input_tokens`; its adapter adds them back), so the two cache counts are parts of it.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    """Of `input_tokens`, those read from the provider's prompt cache (billed at the cached-input price)."""
    cache_write_tokens: int = 0
    """Of `input_tokens`, those written to the prompt cache (Anthropic; billed at the cache-write price)."""

    def add(self, other: Usage | Tokens | Mapping[str, object] | None) -> None:
        """Add `other`'s counts to these (in place; None adds nothing). `other` may also be the lean `Tokens` of
        an answer or the `usage` object of a results-file row."""
        if other is None:
            return
        # Straight into the fields: BaseModel.__setattr__ costs ~4 µs a field, and totals are summed once per
        # request (a 100,000-request run spent 1.5 s here). Nothing is validated on assignment anyway.
        mine = self.__dict__
        if isinstance(other, tuple):
            for name, value in zip(_USAGE_FIELDS, other, strict=True):
                mine[name] += value
            return
        theirs = other.__dict__ if isinstance(other, Usage) else other
        for name in _USAGE_FIELDS:
            mine[name] += theirs.get(name, 0)


_USAGE_FIELDS = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens")


class Tokens(NamedTuple):
    """`Usage` as a plain tuple, for the per-request hot paths (parsing results, collecting a job): a named tuple
    costs a tenth of a model to build. Same fields, same meaning."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0

    def typed(self) -> Usage:
        """The same counts as a `Usage`."""
        return Usage(**self._asdict())

    @classmethod
    def of(cls, usage: Usage | None) -> Tokens | None:
        """The counts of a `Usage` (None stays None)."""
        if usage is None:
            return None
        return cls(usage.input_tokens, usage.output_tokens, usage.cached_input_tokens, usage.cache_write_tokens)


def count(data: Mapping[str, Any], *names: str) -> int:
    """The first of `names` present in a provider's usage object, as an int (0 when none is)."""
    for name in names:
        value = data.get(name)
        if value:
            return int(value)
    return 0
