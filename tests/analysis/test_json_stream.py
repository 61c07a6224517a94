"""Results files are read a piece at a time (issue 25): what is decoded is what `json.loads` gives, a bad file is
refused as `json.loads` would refuse it, and a file of thousands of verdicts is never held decoded whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speceval.analysis.reading import entry_chunks, json_stream
from speceval.analysis.reading.fold import fold_verdicts
from speceval.analysis.reading.json_stream import read_json
from speceval.analysis.reading.load import load_verdicts
from speceval.analysis.reading.verdict_reader import VerdictReader
from speceval.errors import InputError
from tests.analysis.test_report_golden import fabricate
from tests.analysis.test_report_stream import fold_peak_per_verdict

ELEMENTS = [
    {"input": 'quote " backslash \\ newline \n tab \t', "n": 12345678901234567890, "f": 1e-7, "z": -0.0},
    {"input": "é 日本語 \u2028 😀", "nested": {"a": [1, 2.5, None, True, False, []]}, "e": ""},
    [],
    {},
    0,
    123456789,
    -3.25e300,
    "a string element",
    None,
]


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
@pytest.mark.parametrize("indent", [None, 2])
def test_what_is_read_a_piece_at_a_time_is_what_json_loads_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, indent: int | None
) -> None:
    """Chunk boundaries fall inside strings, escapes, numbers and literals (a 1-character chunk: everywhere)."""
    monkeypatch.setattr(json_stream, "CHUNK", chunk)
    document = {
        "schema_version": 1,
        "metadata": {"judge": "j", "x": [1, {"y": "z"}]},
        "results": ELEMENTS,
        "after": {"k": 10.5},
        "last": "v",
    }
    path = tmp_path / "file.json"
    # indented: written with \uXXXX escapes (a surrogate pair for 😀), else as UTF-8
    path.write_text(json.dumps(document, indent=indent, ensure_ascii=indent is not None), encoding="utf-8")
    streamed = read_json(path, "results")
    assert streamed.pending and streamed.head == {"schema_version": 1, "metadata": document["metadata"]}
    assert list(streamed.items) == json.loads(path.read_text(encoding="utf-8"))["results"]
    assert streamed.head == {k: v for k, v in document.items() if k != "results"}  # the keys after it, added
    assert read_json(path, "results").whole() == json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(ELEMENTS, indent=indent), encoding="utf-8")
    top_list = read_json(path, "results")
    assert top_list.head is None and list(top_list.items) == ELEMENTS
    path.write_text(json.dumps({"rankings": ELEMENTS, "metadata": {}}, indent=indent), encoding="utf-8")
    no_key = read_json(path, "results")
    assert not no_key.pending and no_key.whole() == {"rankings": ELEMENTS, "metadata": {}}


@pytest.mark.parametrize("chunk", [100, 256, 1_000, 4_096])
def test_many_elements_across_many_chunk_boundaries_are_what_json_loads_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Elements of every size, decoded inside the buffer or across its end, numbers cut at any character."""
    monkeypatch.setattr(json_stream, "CHUNK", chunk)
    elements = [
        ELEMENTS[i % len(ELEMENTS)] if i % 3 else {"n": -i * 1.0e-5, "t": "x" * (i % 300), "i": i * 997}
        for i in range(3_000)
    ]
    path = tmp_path / "many.json"
    path.write_text(
        json.dumps({"metadata": {}, "results": elements}, indent=1 if chunk in (256, 4_096) else None), encoding="utf-8"
    )
    assert list(read_json(path, "results").items) == elements


@pytest.mark.parametrize(
    "text",
    [
        '{"metadata": {"judge": "j"}, "results": [{"a": 1}, {"a": 2}',  # cut in the array
        '{"metadata": {"judge": "j"}, "results": [{"a": 1} {"a": 2}]}',  # a comma missing
        '{"metadata": {"judge": "j"}, "results": [{"a": 1}]} trailing',
        '{"metadata": {"judge": "j"}, "results": [{"a": 1},]}',
        '{"metadata": {"judge" "j"}, "results": []}',
        '\n\n  {"metadata": {"judge": "j"}, "results": [{"a": "cut',
        "",
    ],
)
def test_a_file_that_is_not_json_is_refused_as_json_loads_refuses_it(
    tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(json_stream, "CHUNK", 5)
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError) as expected:
        json.loads(text)
    with pytest.raises(InputError) as raised:
        list(read_json(path, "results").items)
    assert str(raised.value) == f"{path}: not a readable JSON results file: {expected.value}"
    path.write_text('"valid JSON, but neither an object nor an array"', encoding="utf-8")
    with pytest.raises(InputError, match="not a readable JSON results file"):
        read_json(path, "results")


def test_a_report_reads_a_results_file_written_in_another_key_order_the_same(tmp_path: Path) -> None:
    """A file whose `results` come before its metadata (hand-made) cannot be read a verdict at a time: it is
    decoded whole, and reported exactly as the same file in the order speceval writes."""
    root = fabricate(tmp_path / "data")
    before = fold_verdicts([root]).columns
    rows_before = load_verdicts([root]).compliance
    files = [
        p
        for p in sorted(root.rglob("results/*.json"))
        if "_canaries" not in p.parts and "results" in json.loads(p.read_text())
    ]
    for path in files[::2]:
        data = json.loads(path.read_text())
        path.write_text(json.dumps({"results": data.pop("results"), **data}), encoding="utf-8")
    after = fold_verdicts([root]).columns
    for name in ("file", "position", "input", "output", "outcome", "compliant"):
        assert getattr(after, name).tolist() == getattr(before, name).tolist(), name
    assert load_verdicts([root]).compliance == rows_before
    shown = VerdictReader().at_positions(files[0], [3, 1])
    assert [shown[1].input, shown[3].input] == [rows_before[1].input, rows_before[3].input]


def test_a_bad_entry_deep_in_a_streamed_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries are validated a few at a time as they are read: an error names the entry's place in the file."""
    monkeypatch.setattr(entry_chunks, "ENTRY_CHUNK", 3)  # entry 7 is in the third chunk
    root = fabricate(tmp_path / "data")
    path = next(
        p
        for p in sorted(root.rglob("results/*.json"))
        if "_canaries" not in p.parts and "results" in json.loads(p.read_text())
    )
    data = json.loads(path.read_text())
    data["results"][7]["compliant"] = "yes"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError) as raised:
        fold_verdicts([root])
    assert raised.value.path == path and "results.7.compliant" in str(raised.value)


def test_one_file_of_thousands_of_verdicts_is_never_decoded_whole(tmp_path: Path) -> None:
    """3,000 verdicts of about 1,400 characters in ONE file (5.4 MB): decoded whole it held 12.6 MB of dicts and
    strings (4.2 KB a verdict); read a piece at a time, the fold's peak is a chunk of text and 100 entries (370
    bytes a verdict when measured)."""
    per_verdict = fold_peak_per_verdict(tmp_path, 3_000, 1)
    assert per_verdict < 1_000, per_verdict


@pytest.mark.parametrize("chunk", [1, 7, 4_096])
@pytest.mark.parametrize("ascii_only", [True, False])
def test_each_element_is_read_back_alone_from_the_byte_offset_the_stream_gave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, ascii_only: bool
) -> None:
    """Offsets are bytes of the file, not characters of its text: UTF-8 of 1 to 4 bytes (pydantic writes it
    unescaped), CRLF line ends (a file written on Windows), elements cut by the reader's chunks anywhere."""
    monkeypatch.setattr(json_stream, "CHUNK", chunk)
    elements = [{"i": i, "t": ("é日😀\u2028" if i % 3 else "ab") * (i % 40), "n": i * 1.5} for i in range(400)]
    path = tmp_path / "file.json"
    text = json.dumps({"metadata": {"x": "é"}, "results": elements}, ensure_ascii=ascii_only, indent=1)
    path.write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    streamed = read_json(path, "results", offsets=True)
    assert list(streamed.items) == elements
    offsets = list(streamed.offsets or [])
    assert len(offsets) == len(elements)
    wanted = [399, 0, 137, 138, 7]
    assert list(json_stream.elements_at(path, [offsets[i] for i in wanted])) == [elements[i] for i in wanted]
    with pytest.raises(InputError, match="no JSON value starts at byte"):
        list(json_stream.elements_at(path, [offsets[5] + 4]))  # inside an element: a key, not an element
