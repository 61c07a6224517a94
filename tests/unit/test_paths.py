"""safe_filename / safe_path: hostile identifiers never escape their directory and never collide."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speceval.paths import MAX_NAME_LENGTH, safe_filename, safe_path

_ALLOWED = re.compile(r"^[A-Za-z0-9_ .%~-]+$")
_RESERVED = {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"} | {f"{d}{i}" for d in ("COM", "LPT") for i in range(10)}

HOSTILE = [
    "../../etc/passwd",
    "a/b",
    "a\\b",
    "..",
    ".",
    "...",
    ".hidden",
    "/absolute",
    "C:\\Windows\\system32",
    "CON",
    "con",
    "Con.json",
    "nul.txt",
    "COM1",
    "lpt9 ",
    "a\x00b",
    "tab\there",
    "new\nline",
    "\x7f",
    'quote"s<and>pipes|?*',
    "trailing.",
    "trailing ",
    " leading",
    "x" * 300,
    "A" + "b" * 145,  # upper case near the limit: the digest must not push it over
    "é" * 300,
    "%2E%2E",
    "~tilde~",
    "日本語のステートメント",
    "emoji 🚀",
    "\u202eright-to-left override",
    "\ud800lone surrogate",
]


def check_safe(name: str) -> str:
    result = safe_filename(name)
    assert _ALLOWED.match(result), result
    assert len(result) <= MAX_NAME_LENGTH
    assert result not in (".", "..")
    assert not result.startswith((".", " "))
    assert not result.endswith((".", " "))
    assert result.split(".", 1)[0].rstrip(" ").upper() not in _RESERVED
    return result


@pytest.mark.parametrize("name", ["avoid_errors", "no.dots here", "be-clear_2", "letter_and_spirit", "a.b.c"])
def test_ordinary_ids_stay_readable(name: str) -> None:
    assert safe_filename(name) == name


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_ids_become_safe_names(name: str) -> None:
    check_safe(name)


def test_examples_of_the_encoding() -> None:
    # Inner dots are harmless once "/" is encoded: the whole thing is one name.
    assert safe_filename("../../etc/passwd") == "%2E.%2F..%2Fetc%2Fpasswd"
    assert safe_filename("a/b") == "a%2Fb"
    assert safe_filename("..") == "%2E%2E"
    assert safe_filename("con") == "%63on"
    assert safe_filename("trailing.") == "trailing%2E"
    assert safe_filename("100%") == "100%25"
    assert safe_filename("é") == "%C3%A9"


def test_upper_case_gets_a_digest_so_case_insensitive_disks_keep_names_apart() -> None:
    upper, lower = safe_filename("Avoid_Errors"), safe_filename("avoid_errors")
    assert upper.startswith("Avoid_Errors~") and len(upper) == len("Avoid_Errors~") + 12
    assert lower == "avoid_errors"
    assert upper.lower() != lower.lower()
    assert safe_filename("AVOID_ERRORS").lower() != upper.lower()


def test_long_names_are_truncated_with_a_digest_and_stay_distinct() -> None:
    a, b = "x" * 300, "x" * 299 + "y"
    assert len(safe_filename(a)) <= MAX_NAME_LENGTH
    assert safe_filename(a) != safe_filename(b)
    assert safe_filename(a).startswith("x" * 100)


def test_truncation_never_splits_an_escape() -> None:
    for prefix in range(0, 4):
        result = safe_filename("a" * prefix + "/" * 100)
        body = result.rsplit("~", 1)[0]
        assert re.fullmatch(r"a*(%2F)*", body), result


def test_is_deterministic() -> None:
    assert [safe_filename(n) for n in HOSTILE] == [safe_filename(n) for n in HOSTILE]


def test_all_hostile_ids_are_pairwise_distinct_even_ignoring_case() -> None:
    names = [safe_filename(n) for n in HOSTILE]
    assert len({n.lower() for n in names}) == len(HOSTILE)


def test_empty_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="empty"):
        safe_filename("")


@pytest.mark.parametrize("name", HOSTILE)
def test_safe_path_writes_inside_the_directory(tmp_path: Path, name: str) -> None:
    directory = tmp_path / "results"
    directory.mkdir()
    path = safe_path(directory, name, ".json")
    assert path.parent == directory
    path.write_text("{}", encoding="utf-8")
    assert path.resolve().parent == directory.resolve()
    assert [p.name for p in directory.iterdir()] == [path.name]
    assert list(tmp_path.iterdir()) == [directory]


def test_hostile_ids_never_overwrite_each_other_on_disk(tmp_path: Path) -> None:
    for index, name in enumerate(HOSTILE):
        safe_path(tmp_path, name, ".json").write_text(str(index), encoding="utf-8")
    assert len(list(tmp_path.iterdir())) == len(HOSTILE)
    for index, name in enumerate(HOSTILE):
        assert safe_path(tmp_path, name, ".json").read_text(encoding="utf-8") == str(index)


@pytest.mark.parametrize("suffix", ["/x", "json", ".json/..", "./", ".a b", "\x00"])
def test_safe_path_rejects_a_suffix_that_is_not_an_extension(tmp_path: Path, suffix: str) -> None:
    with pytest.raises(ValueError, match="extension"):
        safe_path(tmp_path, "a", suffix)


def test_safe_path_accepts_plain_and_double_extensions(tmp_path: Path) -> None:
    assert safe_path(tmp_path, "a", "").name == "a"
    assert safe_path(tmp_path, "a", ".jsonl").name == "a.jsonl"
    assert safe_path(tmp_path, "a", ".tar.gz").name == "a.tar.gz"


# -- properties ---------------------------------------------------------------------------------------------

_TRICKY = st.text(alphabet="aAbB.%~ /\\:\x00\n*?CONULé🚀", min_size=1, max_size=200)
_ANY = st.text(min_size=1, max_size=400)


@settings(max_examples=300)
@given(st.one_of(_ANY, _TRICKY))
def test_property_every_name_is_safe(name: str) -> None:
    check_safe(name)


@settings(max_examples=300)
@given(st.one_of(_ANY, _TRICKY), st.one_of(_ANY, _TRICKY))
def test_property_injective_even_on_case_insensitive_disks(a: str, b: str) -> None:
    if a != b:
        assert safe_filename(a).lower() != safe_filename(b).lower()


@settings(max_examples=100)
@given(st.one_of(_ANY, _TRICKY))
def test_property_safe_path_is_a_direct_child(name: str) -> None:
    directory = Path("/srv/run/results")
    path = safe_path(directory, name, ".json")
    assert path.parent == directory
    assert ".." not in path.parts
