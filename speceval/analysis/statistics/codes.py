"""Codes for groups of array elements: numbered in order of first appearance or in sorted order of their values,
in few bytes per element (a million verdicts' arrays are megabytes each). Pure functions, numpy only."""

from __future__ import annotations

import numpy as np


def index_array(indices: np.ndarray) -> np.ndarray:
    """Row indices as 4-byte integers when every row fits (a million verdicts: 4 MB an array of them, not 8).
    Every index array of a group of verdicts comes from here, so its subsets are 4 bytes an index too."""
    return indices.astype(np.int32) if len(indices) < 2**31 else indices


def first_seen(codes: np.ndarray) -> np.ndarray:
    """Per element: a code 0..K-1 of its value, numbered in order of first appearance."""
    if not len(codes):
        return np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def first_seen_bounded(codes: np.ndarray, bound: int) -> np.ndarray:
    """`first_seen` of codes known to lie in 0..`bound`-1, as 4-byte codes, without a sort of the codes: a table
    of each code's first position (a million comparisons' clusters: 12 MB at the peak instead of 40)."""
    if not len(codes):
        return np.zeros(0, dtype=np.int32)
    position = np.int32 if len(codes) < 2**31 else np.int64
    first: np.ndarray = np.full(bound, len(codes), dtype=position)
    np.minimum.at(first, codes, np.arange(len(codes), dtype=position))
    present = np.flatnonzero(first < len(codes))
    rank = np.zeros(bound, dtype=np.int32)
    rank[present[np.argsort(first[present], kind="stable")]] = np.arange(len(present), dtype=np.int32)
    del first
    found: np.ndarray = rank[codes]
    return found


def dense(*keys: np.ndarray) -> np.ndarray:
    """Per element: a code 0..G-1 of its combination of `keys` (codes in sorted order of the combinations).

    By one lexicographic sort (a few arrays of 8 bytes per element; `np.unique(axis=0)` took 200)."""
    if not len(keys[0]):
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort(keys[::-1])
    changed = np.zeros(len(order), dtype=bool)
    for key in keys:
        ordered = np.asarray(key)[order]
        changed[1:] |= ordered[1:] != ordered[:-1]
    code = np.empty(len(order), dtype=np.int64)
    code[order] = np.cumsum(changed)
    return code


def groups(*keys: np.ndarray) -> list[np.ndarray]:
    """The indices of each combination of `keys`, combinations in sorted order of their codes."""
    if not len(keys[0]):
        return []
    code = dense(*keys)
    order = np.argsort(code, kind="stable")
    bounds = np.flatnonzero(np.diff(code[order])) + 1
    return np.split(order, bounds)
