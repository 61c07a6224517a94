"""Duplicate test inputs, found before anything is paid to rate them.

Three measures, strictest first: the same text; the same text after casefolding and collapsing whitespace; and
near duplicates, whose sets of words (casefolded, punctuation dropped) overlap by a Jaccard index of at least
`NEAR`. An index of every text kept so far answers "which earlier text does this one duplicate?" without
comparing against all of them: only texts sharing a word can reach the threshold, and a word posting list finds
those.
"""

from __future__ import annotations

import re
from collections import defaultdict

NEAR = 0.8
"""Word-set Jaccard index at or above which two inputs are near duplicates."""
_WORD = re.compile(r"\w+", re.UNICODE)


def normalized(text: str) -> str:
    """Casefolded, with every run of whitespace one space and no space at either end."""
    return " ".join(text.casefold().split())


def words(text: str) -> frozenset[str]:
    """The casefolded words of `text`, punctuation dropped."""
    return frozenset(_WORD.findall(text.casefold()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b| (1.0 for two empty sets: two texts without words are the same nothing)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


class DuplicateIndex:
    """Texts seen so far, each under a label (e.g. `kept s1#3`), answering which one a new text duplicates."""

    def __init__(self) -> None:
        self._exact: dict[str, str] = {}
        self._normal: dict[str, str] = {}
        self._words: list[tuple[frozenset[str], str]] = []
        self._postings: dict[str, list[int]] = defaultdict(list)

    def duplicate_of(self, text: str) -> tuple[str, str] | None:
        """(measure, label) of the first text `text` duplicates: `exact`, `case_or_space` or `near`; else None."""
        if text in self._exact:
            return "exact", self._exact[text]
        if normalized(text) in self._normal:
            return "case_or_space", self._normal[normalized(text)]
        mine = words(text)
        if not mine:
            return None
        candidates = sorted({i for word in mine for i in self._postings.get(word, ())})
        for i in candidates:
            theirs, label = self._words[i]
            if jaccard(mine, theirs) >= NEAR:
                return "near", label
        return None

    def add(self, text: str, label: str) -> None:
        self._exact.setdefault(text, label)
        self._normal.setdefault(normalized(text), label)
        mine = words(text)
        index = len(self._words)
        self._words.append((mine, label))
        for word in mine:
            self._postings[word].append(index)
