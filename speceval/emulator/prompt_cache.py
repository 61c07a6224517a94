"""Prompt caching as the emulated providers report it: which input tokens of a request came from a cache.

Real providers cache a prompt's prefix when a later request for the same model repeats it within a few minutes,
across requests and batches of the same organisation. The emulator models that with one cache per emulator
(not persisted: a restarted emulator starts cold, as an expired cache would), filled by each job's requests in
the order they are executed, at the job's end time; an entry lives `TTL_SECONDS` after its last use. The rules
follow the providers' prompt caching guides (OpenAI "Prompt caching", Anthropic "Prompt caching", Gemini "Context
caching"):

- OpenAI caches automatically: prompts of 1,024 tokens or more, the cached part being the longest previously
  seen prefix in 128-token steps (1,024, 1,152, ...). Reported as `prompt_tokens_details.cached_tokens`
  (`input_tokens_details` on /v1/responses), included in the prompt tokens.
- Anthropic caches only what a request marks with `cache_control` (`{"type": "ephemeral"}`): the prompt up to
  the end of the last marked block, when that is at least the model's minimum (1,024 tokens; 2,048 for the
  Haiku 3 models; 4,096 for Haiku 4.5 and Opus 4.5+). The first request writes it
  (`cache_creation_input_tokens`), later ones read it (`cache_read_input_tokens`); both are reported apart from
  `input_tokens`.
- Gemini caches implicitly: like OpenAI, from 1,024 tokens (4,096 for Pro models), reported as
  `usageMetadata.cachedContentTokenCount`, included in `promptTokenCount`.

Tokens are the emulator's estimate (four characters each), so 128 tokens are 512 characters of prompt text.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

TOKEN_CHARS = 4
TTL_SECONDS = 300.0
"""Anthropic's default (`ephemeral`, 5 minutes, refreshed on use); OpenAI and Gemini evict after minutes too."""
BLOCK_TOKENS = 128
AUTOMATIC_MINIMUM = 1024

_ANTHROPIC_MINIMUM = (
    (re.compile(r"claude-3-(5-)?haiku"), 2048),
    (re.compile(r"claude-(haiku-4-5|opus-4-[5-9])"), 4096),
)


@dataclass(frozen=True)
class CacheUse:
    """Input tokens of one request read from, and written to, the prompt cache."""

    read: int = 0
    written: int = 0


NO_CACHE = CacheUse()


def anthropic_minimum(model: str) -> int:
    """The shortest prefix (tokens) an Anthropic model caches."""
    return next((tokens for pattern, tokens in _ANTHROPIC_MINIMUM if pattern.search(model)), AUTOMATIC_MINIMUM)


class PrefixCache:
    """The prefixes requests have put in the cache, with the time each was last used."""

    def __init__(self) -> None:
        self._last_used: dict[bytes, float] = {}
        self._now = 0.0
        self._scope = b""

    def _hit(self, key: bytes) -> bool:
        """Whether `key` is cached (and not expired); either way it is cached from now on."""
        key = self._scope + key
        last = self._last_used.get(key)
        self._last_used[key] = self._now
        return last is not None and self._now - last <= TTL_SECONDS

    def automatic(self, prompt: str, minimum: int = AUTOMATIC_MINIMUM) -> CacheUse:
        """OpenAI / Gemini: the longest already-cached prefix in 128-token steps, of at least `minimum` tokens."""
        block = BLOCK_TOKENS * TOKEN_CHARS
        digest = hashlib.sha256()
        cached = 0
        for blocks, start in enumerate(range(0, len(prompt) - block + 1, block), start=1):
            digest.update(prompt[start : start + block].encode("utf-8", "surrogatepass"))
            if self._hit(b"auto:" + digest.copy().digest()) and blocks * BLOCK_TOKENS >= minimum:
                cached = blocks * BLOCK_TOKENS
        return CacheUse(read=cached)

    def explicit(self, prompt: str, breakpoint: int | None, minimum: int) -> CacheUse:
        """Anthropic: the prompt up to `breakpoint` (characters) is read if cached before, else written."""
        if breakpoint is None or breakpoint // TOKEN_CHARS < minimum:
            return NO_CACHE
        tokens = breakpoint // TOKEN_CHARS
        if self._hit(b"mark:" + hashlib.sha256(prompt[:breakpoint].encode("utf-8", "surrogatepass")).digest()):
            return CacheUse(read=tokens)
        return CacheUse(written=tokens)

    def use(self, provider: str, model: str, prompt: str, breakpoint: int | None, now: float = 0.0) -> CacheUse:
        """What `provider` would report for this request at time `now`, given what was cached before it.

        Caches are per provider and model, as the providers' are.
        """
        self._now, self._scope = now, f"{provider}\x00{model}\x00".encode("utf-8", "surrogatepass")
        if provider == "anthropic":
            return self.explicit(prompt, breakpoint, anthropic_minimum(model))
        if provider in ("openai", "gemini", "vertex"):
            return self.automatic(prompt, 4096 if provider != "openai" and "pro" in model else AUTOMATIC_MINIMUM)
        return NO_CACHE
