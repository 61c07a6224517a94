"""A small `multipart/form-data` parser (the stdlib `cgi` module is deprecated).

Parsed by hand rather than with the `email` package so that file bytes come back exactly as sent
(no line-ending normalisation).
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import Message


@dataclass(frozen=True)
class Part:
    """One form field."""

    name: str
    filename: str | None
    content_type: str | None
    data: bytes

    @property
    def text(self) -> str:
        """The field's value as text."""
        return self.data.decode("utf-8", errors="replace")


def _params(header_value: str, header_name: str) -> Message:
    message = Message()
    message[header_name] = header_value
    return message


def parse_multipart(body: bytes, content_type: str) -> dict[str, Part]:
    """Parse a `multipart/form-data` body into fields by name.

    Raises:
        ValueError: the content type has no boundary or the body is not multipart.
    """
    boundary = _params(content_type, "content-type").get_param("boundary", header="content-type")
    if not isinstance(boundary, str) or not boundary:
        raise ValueError("multipart body without a boundary")
    delimiter = b"\r\n--" + boundary.encode("latin-1")
    sections = (b"\r\n" + body).split(delimiter)
    if len(sections) < 3:
        raise ValueError("not a multipart/form-data body")
    parts: dict[str, Part] = {}
    for section in sections[1:]:
        if section.startswith(b"--"):
            break  # the closing delimiter
        head, separator, data = section.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        if not separator:
            raise ValueError("multipart section without a header block")
        headers: dict[str, str] = {}
        for line in head.decode("latin-1").split("\r\n"):
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        disposition = _params(headers.get("content-disposition", ""), "content-disposition")
        name = disposition.get_param("name", header="content-disposition")
        filename = disposition.get_filename()
        if not isinstance(name, str):
            raise ValueError("multipart section without a field name")
        parts[name] = Part(name=name, filename=filename, content_type=headers.get("content-type"), data=data)
    return parts
