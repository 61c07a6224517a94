"""The categories a categorical judge was given, as its run recorded them: a category no verdict chose is still one.

`category_distribution` listed only the categories some verdict chose, so a category of a 1% share, unseen in 30
answers (74% of draws in session 19's audit), had no row at all, and the rows shown covered 0.87 (shown only where
seen). A judge run's `run.json` records its categories (`parameters.identity.categories`, in the order given); the
report lists each with its count (0 included) and interval. Only the small run.json beside each judged candidate's
`results/` is read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from speceval.analysis.reading.column_codes import FileFacts
from speceval.batch.manifest import MANIFEST_NAME
from speceval.defaults import Mode
from speceval.errors import InputError


def declared_categories(paths: list[Path | None], facts: list[FileFacts]) -> dict[tuple[str, str], list[str]]:
    """(spec, judge) → the categories its runs were given, in their order (the union over its runs, first seen
    first); a judge whose run.json is gone or says none (an export read back) is left to its verdicts' own."""
    found: dict[tuple[str, str], list[str]] = {}
    read: set[Path] = set()
    for path, fact in zip(paths, facts, strict=True):
        if path is None or fact.mode != Mode.CATEGORIES.value:
            continue
        folder = path.parent.parent
        if folder in read:
            continue
        read.add(folder)
        for name in _identity_categories(folder / MANIFEST_NAME):
            names = found.setdefault((fact.spec, fact.judge), [])
            if name not in names:
                names.append(name)
    return found


def _identity_categories(manifest: Path) -> list[str]:
    if not manifest.is_file():
        return []  # verdicts read without their run (an export read back): their own categories stand
    try:
        data: Any = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(manifest, f"unreadable run manifest: {exc}") from None
    categories = (((data or {}).get("parameters") or {}).get("identity") or {}).get("categories")
    return [str(name) for name in categories] if isinstance(categories, dict | list) else []
