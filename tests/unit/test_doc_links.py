"""Every link of the README and docs/ leads somewhere, and the code's docstrings point into the repository.

A relative link must name a file of the repository and, with `#anchor`, a heading of that file (GitHub's anchor
rules). A docstring may point a reader to `docs/<page>.md#anchor`: the page and the heading must exist. No
docstring points to a design file that is not in the repository (DESIGN §…, reference/…).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "data" / "README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
DOCSTRING_DOC = re.compile(r"docs/([a-z0-9_-]+\.md)(#[a-z0-9_-]+)?")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", lambda m: "_" if m.group(0) == "_" else "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, flags=re.M)}


def links() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        text = re.sub(r"```.*?```|`[^`\n]*`", "", page.read_text(encoding="utf-8"), flags=re.S)
        found += [
            (str(page.relative_to(REPO)), target)
            for target in LINK.findall(text)
            if not target.startswith(("http://", "https://", "mailto:"))
        ]
    return found


@pytest.mark.parametrize("page,target", links())
def test_every_relative_link_leads_to_a_file_and_heading(page, target):
    path_part, _, anchor = target.partition("#")
    destination = (REPO / page).parent / path_part if path_part else REPO / page
    assert destination.exists(), f"{page}: the link {target} names no file"
    if anchor and destination.suffix == ".md":
        assert anchor in anchors(destination.resolve()), f"{page}: {target}: no such heading in {path_part or page}"


def test_the_docs_have_links_to_check():
    assert len(links()) >= 40


def test_docstrings_point_into_the_repository():
    outside, broken = [], []
    for path in sorted((REPO / "speceval").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(REPO))
        if re.search(r"DESIGN\s*§|reference/provider-apis|shared/reference", text):
            outside.append(where)
        for page, anchor in DOCSTRING_DOC.findall(text):
            target = REPO / "docs" / page
            if not target.exists() or (anchor and anchor[1:] not in anchors(target)):
                broken.append(f"{where}: docs/{page}{anchor}")
    assert not outside, f"docstrings pointing at design files outside the repository: {outside}"
    assert not broken, f"docstrings pointing at pages or headings that do not exist: {broken}"
