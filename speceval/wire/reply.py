"""`Reply`: what a provider's response body says, read the same way by every transport.

The batch adapters wrap it into a lean `Answer` per result line, the realtime clients into a `Completion`; the
text, the token counts and the reason there is no text come from one parser per provider (`speceval.wire.*`).
"""

from __future__ import annotations

from typing import NamedTuple

from speceval.wire.usage import Tokens


class Reply(NamedTuple):
    """The answer text of one response body and its token counts, or why it has no text.

    Attributes:
        text: the answer, or None when the response carries none.
        usage: the tokens the request consumed (zeros when the body reports none).
        code: when `text` is None, a short code for why (`empty_response`, `malformed_response`, ...).
        message: when `text` is None, what happened in words.
    """

    text: str | None
    usage: Tokens
    code: str | None = None
    message: str | None = None


def no_text(usage: Tokens, code: str, message: str) -> Reply:
    """A reply without an answer."""
    return Reply(None, usage, code, message)
