"""Typed columns filled a record at a time, then handed to pandas in chunks: what keeps a frame of 10⁶ records in
about the frame's own memory (a list of row objects, or of dicts, costs several times the frame)."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from speceval.errors import ConfigError

INSTALL_HINT = "pip install 'speceval[frames]'"
CHUNK = 65_536
"""Records per chunk of the text columns: the most held as Python lists at once."""


def pandas() -> Any:
    """The pandas module, or a ConfigError naming the extra that installs it."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise ConfigError(
            f"results as data frames need pandas, which cannot be imported ({exc}): {INSTALL_HINT}"
        ) from None
    return pd


class Column:
    """One column's values as they come. `kind`: `category` (a few distinct strings: spec, judge, candidate, ...;
    kept as codes), `text` (mostly distinct: input, output), `int`, `float`, `bool` (each nullable)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.codes = array("i")
        self.names: dict[Any, int] = {}
        self.numbers = array("d")  # int and float columns; NaN for a missing value
        self.flags = array("b")  # bool: 1, 0, or -1 for missing
        self.pending: list[Any] = []  # text: this chunk's strings
        self.chunks: list[Any] = []  # text: the chunks handed to pandas

        # One appender per kind, chosen once: a frame of 10⁶ records calls it 23 × 10⁶ times.
        self.add: Callable[[Any], None] = {
            "category": self._add_category,
            "text": self._add_text,
            "bool": self._add_bool,
        }.get(kind, self._add_number)

    def _add_category(self, value: Any) -> None:
        self.codes.append(-1 if value is None else self.names.setdefault(value, len(self.names)))

    def _add_text(self, value: Any) -> None:
        self.pending.append(value)
        if len(self.pending) >= CHUNK:
            self._flush()

    def _add_bool(self, value: Any) -> None:
        self.flags.append(-1 if value is None else int(bool(value)))

    def _add_number(self, value: Any) -> None:
        self.numbers.append(float("nan") if value is None else float(value))

    def _flush(self) -> None:
        pd = pandas()
        self.chunks.append(pd.array(self.pending, dtype="string"))
        self.pending = []

    def values(self) -> Any:
        """The column as a pandas array (the builder's own buffers are let go as far as possible)."""
        pd = pandas()
        import numpy as np

        if self.kind == "category":
            categories = list(self.names)  # in the order first seen, which is each code's
            codes = np.frombuffer(self.codes, dtype=np.int32) if len(self.codes) else np.zeros(0, np.int32)
            return pd.Categorical.from_codes(codes.copy(), categories=categories)
        if self.kind == "text":
            if self.pending or not self.chunks:
                self._flush()
            chunks, self.chunks = self.chunks, []
            return chunks[0] if len(chunks) == 1 else pd.concat([pd.Series(c) for c in chunks], ignore_index=True).array
        if self.kind == "bool":
            flags = np.frombuffer(self.flags, dtype=np.int8) if len(self.flags) else np.zeros(0, np.int8)
            return pd.arrays.BooleanArray(flags == 1, flags < 0)
        numbers = np.frombuffer(self.numbers, dtype=np.float64) if len(self.numbers) else np.zeros(0)
        if self.kind == "int":
            missing = np.isnan(numbers)
            return pd.arrays.IntegerArray(np.where(missing, 0, numbers).astype(np.int64), missing)
        return numbers.copy()


class Frame:
    """Columns by name, filled a record at a time (`add`), then a DataFrame in `schema`'s order (`frame`)."""

    def __init__(self, schema: Mapping[str, str]) -> None:
        self.columns = {name: Column(kind) for name, kind in schema.items()}
        self._appenders = [(name, column.add) for name, column in self.columns.items()]

    def add(self, record: Mapping[str, Any]) -> None:
        get = record.get
        for name, append in self._appenders:
            append(get(name))

    def extend(self, records: Iterable[Mapping[str, Any]]) -> None:
        for record in records:
            self.add(record)

    def frame(self) -> Any:
        pd = pandas()
        return pd.DataFrame({name: column.values() for name, column in self.columns.items()})
