"""Every page opens with one title: exactly one H1, and no section heading repeats it (docs/library.md once
opened with "Using the library" twice)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def headings(text: str) -> list[tuple[int, str]]:
    """(level, text) of each Markdown heading outside fenced code blocks (a `# comment` in a bash block is not one)."""
    found = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = re.match(r"(#{1,6}) +(.+?) *#* *$", line)
        if match and not fenced:
            found.append((len(match.group(1)), match.group(2).strip()))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_a_page_has_one_title_that_no_section_repeats(page):
    found = headings(page.read_text(encoding="utf-8"))
    titles = [text for level, text in found if level == 1]
    assert len(titles) == 1, f"{page.name}: H1 headings {titles}"
    assert found[0] == (1, titles[0]), f"{page.name} does not open with its title"
    repeats = [text for level, text in found[1:] if text.casefold() == titles[0].casefold()]
    assert not repeats, f"{page.name}: the title {titles[0]!r} is repeated as a section heading"
