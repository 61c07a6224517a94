"""A JSON file read a piece at a time: its top-level object's keys decoded up to one array (`key`), then that array's
elements one at a time (issue 25).

A results file of 5,000 verdicts is 12.5 MB of JSON; decoded whole it took about 50 MB of dicts and strings at
once, and a million verdicts' report peaked there. Read this way, what is held is a buffer of the file's text (a
few dozen kilobytes, more only for a bigger element) and the element being decoded. Values are decoded by the same
decoder `json.loads` uses, so every number and string is what `json.loads` gives. A file that is not valid JSON is
decoded whole once more, so its error is the one `json.loads` reports, with the line and column of the whole file.
"""

from __future__ import annotations

import io
import json
import re
from array import array
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NoReturn

from speceval.errors import InputError

CHUNK = 1 << 16
"""Characters of the file read at a time (a bigger element reads more, doubling, until it is whole). A megabyte
held 2 MB more at once (the buffer, and its copy as the next chunk joins it) and read no faster."""

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER_PART = re.compile(r"[0-9.eE+-]*")

_DECODER = json.JSONDecoder()


class _Incomplete(Exception):
    """The text ended, or was not JSON, where a value or a delimiter was expected (`read_json` says which)."""


class _Reader:
    """The file's text from the current position on, read a chunk at a time."""

    def __init__(self, handle: IO[str], chunk: int | None = None) -> None:
        self._handle = handle
        self._chunk = CHUNK if chunk is None else chunk
        self._text = ""
        self._at = 0
        self._ended = False
        # Where the buffer starts in the file, in bytes, and a cursor (characters, bytes) into it: a position in
        # the text is turned into one in the file by encoding only what lies between the cursor and it (nothing,
        # when the buffer is ASCII, as `json.dumps` writes by default).
        self._base = 0
        self._cursor = (0, 0)
        self._ascii = True
        self.offsets: array[int] | None = None
        """When set: the byte offset in the file of every array element `run`/`value` decode, appended."""

    def byte_offset(self, at: int) -> int:
        """The byte offset in the file of the buffer's character `at` (at or past the last one asked)."""
        if self._ascii:
            return self._base + at
        chars, size = self._cursor
        size += len(self._text[chars:at].encode("utf-8", "surrogatepass"))
        self._cursor = (at, size)
        return self._base + size

    def _more(self) -> bool:
        """Read more text (at least as much as is buffered: an element longer than a chunk costs log reads);
        False at the end of the file."""
        if self._ended:
            return False
        chunk = self._handle.read(max(self._chunk, len(self._text) - self._at))
        if not chunk:
            self._ended = True
            return False
        self._base = self.byte_offset(self._at)
        self._text = self._text[self._at :] + chunk  # what was decoded already is let go
        self._at = 0
        self._cursor = (0, 0)
        self._ascii = self._text.isascii()
        return True

    def next_char(self) -> str:
        """The next character that is not whitespace ('' at the end of the file), not consumed."""
        while True:
            self._at = _WHITESPACE.match(self._text, self._at).end()  # type: ignore[union-attr]  # always matches
            if self._at < len(self._text):
                return self._text[self._at]
            if not self._more():
                return ""

    @property
    def at(self) -> int:
        return self._at

    def take(self, char: str) -> None:
        if self.next_char() != char:
            raise _Incomplete
        self._at += 1

    def run(self) -> Generator[Any, None, bool]:
        """The elements of an array, from the current position (the start of one), that the buffer holds with the
        `,` or `]` after them (so not cut), decoded without `value`'s calls (a million verdicts: seconds less):
        True when the array's `]` is reached; False, at the start of the next element, when `value` must decode it
        (it may be cut by the buffer's end)."""
        text, at, offsets = self._text, self._at, self.offsets
        scan, space = _DECODER.scan_once, _WHITESPACE.match  # type: ignore[attr-defined]  # set by its __init__
        while True:
            at = space(text, at).end()  # type: ignore[union-attr]  # always matches
            try:
                found, end = scan(text, at)
            except (StopIteration, json.JSONDecodeError):
                break  # not a value here: `value` says why, or reads the rest of it
            after = space(text, end).end()  # type: ignore[union-attr]
            if after >= len(text) or text[after] not in ",]":  # a number may go on in the next chunk
                break
            if offsets is not None:
                offsets.append(self.byte_offset(at))
            self._at = after + 1
            yield found
            if text[after] == "]":
                return True
            at = after + 1
        self._at = at
        return False

    def value(self) -> Any:
        """Decode the value at the current position. A value cut by the buffer's end is decoded again with more
        text: a string or container fails to decode; a number decodes short (`1.5` of `1.5e3`, `1` of `12`), so a
        number followed by number characters up to the buffer's end is decoded again too."""
        self.next_char()
        while True:
            try:
                found, end = _DECODER.raw_decode(self._text, self._at)
            except json.JSONDecodeError:
                if self._more():
                    continue
                raise _Incomplete from None
            number_end = _NUMBER_PART.match(self._text, end).end()  # type: ignore[union-attr]  # always matches
            cut = end == len(self._text) or (type(found) in (int, float) and number_end == len(self._text))
            if not cut or not self._more():
                self._at = end
                return found


@dataclass(eq=False)
class StreamedJson:
    """A JSON file whose top level is an object (`head`: its keys, `items`: the elements of its array `key` when it
    has one, after which any keys that follow it are added to `head`) or an array (`head` None; `items` its
    elements). `pending` says whether the array `key` of an object is still to be read through `items`.

    `items` must be read (or `close` called) before the next file is opened: the file stays open until then."""

    file: Path
    key: str
    _handle: IO[str]
    _reader: _Reader
    head: dict[str, Any] | None
    pending: bool

    @property
    def items(self) -> Iterator[Any]:
        return self._items()

    @property
    def offsets(self) -> array[int] | None:
        """With `read_json(..., offsets=True)`: the byte offset in the file of each element `items` gave so far
        (`elements_at` reads them back)."""
        return self._reader.offsets

    def _items(self) -> Iterator[Any]:
        try:
            if self.head is None or self.pending:
                yield from self._elements()
                if self.head is not None:
                    self._rest_of_object()
            if self._reader.next_char() != "":
                raise _Incomplete  # something after the top-level value
        except _Incomplete:
            _raise_as_json_loads(self.file)
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(self.file, f"not a readable JSON results file: {exc}") from None
        finally:
            self.close()

    def whole(self) -> Any:
        """The whole document, decoded (what `json.loads` gives, key order aside): for the files that are not read
        a piece at a time."""
        if self.head is None:
            return list(self.items)
        if not self.pending:
            for _ in self.items:  # nothing to read but the end: checks that nothing follows
                pass
            return self.head
        elements = list(self.items)
        return {**self.head, self.key: elements}

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> StreamedJson:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _elements(self) -> Iterator[Any]:
        reader = self._reader
        reader.take("[")
        if reader.next_char() == "]":
            reader.take("]")
            return
        while True:
            ended = yield from reader.run()
            if ended:
                return
            if reader.offsets is not None:
                reader.next_char()
                reader.offsets.append(reader.byte_offset(reader.at))
            yield reader.value()  # one that may be cut by the buffer's end, decoded with its checks
            if reader.next_char() == "]":
                reader.take("]")
                return
            reader.take(",")

    def _rest_of_object(self) -> None:
        """The keys after the array (the file's writer put none there, a hand-made file may)."""
        assert self.head is not None
        self.pending = False
        if self._reader.next_char() == ",":
            self._reader.take(",")
            _members(self._reader, self.head, ())
        else:
            self._reader.take("}")


def _members(reader: _Reader, head: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    """Decode an object's members into `head` up to its end (None) or up to the first array named in `keys` (its
    name: the reader is left at its `[`)."""
    if reader.next_char() == "}":
        reader.take("}")
        return None
    while True:
        name = reader.value()
        if not isinstance(name, str):
            raise _Incomplete
        reader.take(":")
        if name in keys and reader.next_char() == "[":
            return name
        head[name] = reader.value()
        if reader.next_char() == "}":
            reader.take("}")
            return None
        reader.take(",")


def read_json(
    file: Path, key: str | tuple[str, ...], *, offsets: bool = False, chunk: int | None = None
) -> StreamedJson:
    """Open `file` for reading its array `key` an element at a time (see `StreamedJson`); of several keys, the
    first of them the file holds as an array (a results file is a compliance file's `results` or a ranking file's
    `rankings`: `StreamedJson.key` says which). `offsets`: keep where in the file each element starts
    (`StreamedJson.offsets`); `chunk`: characters read at a time (`CHUNK`). Raises `InputError` naming the file
    (and, as `json.loads` does, the line and column) when it is not JSON."""
    keys = (key,) if isinstance(key, str) else key
    try:
        # newline="": no newline is translated, so a position in the text is one in the file (see `offsets`)
        handle = open(file, encoding="utf-8", newline="")  # noqa: SIM115  (closed by StreamedJson once read)
    except OSError as exc:
        raise InputError(file, f"not a readable JSON results file: {exc}") from None
    reader = _Reader(handle, chunk)
    if offsets:
        reader.offsets = array("Q")
    try:
        first = reader.next_char()
        if first == "[":
            return StreamedJson(file, keys[0], handle, reader, None, pending=False)
        if first != "{":
            raise _Incomplete
        reader.take("{")
        head: dict[str, Any] = {}
        found = _members(reader, head, keys)
        return StreamedJson(file, found or keys[0], handle, reader, head, pending=found is not None)
    except _Incomplete:
        handle.close()
        _raise_as_json_loads(file)
    except (OSError, ValueError) as exc:
        handle.close()
        raise InputError(file, f"not a readable JSON results file: {exc}") from None
    except BaseException:
        handle.close()
        raise


READ_BACK_CHUNK = 1 << 12
"""Characters read first for one element read back (a verdict is a few kilobytes; more is read if it is longer)."""


def elements_at(file: Path, offsets: Iterable[int]) -> Iterator[Any]:
    """The elements that start at `offsets` (byte offsets `StreamedJson.offsets` gave) of `file`, in the order
    asked, each read and decoded alone: a page's few thousand samples out of a million verdicts, without reading
    the rest. Raises `InputError` when something other than an element starts there (the file changed)."""
    try:
        with open(file, "rb") as raw:
            for offset in offsets:
                raw.seek(offset)
                text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
                reader = _Reader(text, READ_BACK_CHUNK)
                try:
                    found = reader.value()
                    if reader.next_char() not in (",", "]"):  # not an element of an array: not what was read
                        raise _Incomplete
                except (_Incomplete, UnicodeDecodeError):
                    raise InputError(
                        file, f"no JSON value starts at byte {offset}: the file changed while it was read"
                    ) from None
                finally:
                    text.detach()  # the raw file stays open for the next element
                yield found
    except OSError as exc:
        raise InputError(file, f"not a readable JSON results file: {exc}") from None


def _raise_as_json_loads(file: Path) -> NoReturn:
    """The file is not valid JSON: decode it whole to raise the error `json.loads` gives (its line and column)."""
    try:
        json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(file, f"not a readable JSON results file: {exc}") from None
    raise InputError(file, "not a readable JSON results file: it could not be read a piece at a time")
