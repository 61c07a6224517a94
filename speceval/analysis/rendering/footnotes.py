"""Interval methods as numbered footnotes: a cell says `(1)`, the note under its table says what (1) is, so the
method is named once per table rather than on every row (`summary.md` and the page alike)."""

from __future__ import annotations


class Footnotes:
    """Methods numbered in order of first use."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def mark(self, method: str | None) -> str:
        """` (n)` for `method` (numbered on first use); '' for none."""
        return f" ({self.numbers.setdefault(method, len(self.numbers) + 1)})" if method else ""

    def text(self) -> str:
        """`(1) method; (2) method`, or `none computed`."""
        return "; ".join(f"({n}) {m}" for m, n in self.numbers.items()) or "none computed"
