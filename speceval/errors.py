"""The exception tree of speceval, drawn in one place.

    SpecevalError
    ├── UsageError                 the user can fix it; the CLI prints it without a traceback, exit 2
    │   ├── InputError             a file we read is wrong: names the file, line and field
    │   ├── ConfigError            a flag, YAML key or environment variable is wrong or missing
    │   │   ├── MissingCredentialsError   no API key: names the variable and the --offline alternative
    │   │   └── ModelMismatchError        a model given to a pipeline is not the one its config describes
    │   └── RunStateError          a run directory cannot be resumed as asked (changed inputs, wrong run)
    ├── ProviderError              a provider call failed: status, provider message, retry-after
    │   └── TransientProviderError 429, 5xx, timeouts, connection errors: worth retrying later
    ├── UnmatchedResultsError      a finished job's results cannot be matched to its requests: the run stops
    └── BudgetExceeded             the next job would cross --budget-usd (not an error of the user's)

Nothing here ever carries an API key: messages that come from a provider pass through
`speceval.redaction.redact` before they reach an exception.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class SpecevalError(Exception):
    """Base class of every error speceval raises on purpose."""


class UsageError(SpecevalError):
    """Bad input or usage: nothing was submitted; the user can fix it and run again (exit code 2)."""


class InputError(UsageError):
    """A file we read is malformed. The message names the file, the line (when known) and the field.

    Attributes:
        path: the file that is wrong.
        line: 1-based line number, or None when the problem is with the whole file.
        field: the JSON field (dotted path) that is wrong, or None when the whole line is.
        reason: what is wrong, in words a user can act on.
    """

    def __init__(self, path: str | Path, reason: str, *, line: int | None = None, field: str | None = None):
        self.path = Path(path)
        self.line = line
        self.field = field
        self.reason = reason
        where = str(self.path)
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", field '{field}'"
        super().__init__(f"{where}: {reason}")

    @classmethod
    def not_utf8(cls, path: str | Path, data: bytes, exc: UnicodeDecodeError, hint: str) -> InputError:
        """The error for a file that is not UTF-8 text: the line and byte of the first bad byte, and `hint`
        (how to save the file as UTF-8)."""
        line = data.count(b"\n", 0, exc.start) + 1
        return cls(path, f"not UTF-8 text (byte 0x{data[exc.start]:02x}); {hint}", line=line)


def read_utf8_text(path: Path, what: str, hint: str) -> str:
    """A small file a person wrote, as text: a byte-order mark is dropped; a file that cannot be read or is not
    UTF-8 is an `InputError` naming it (`what`: what the file holds; `hint`: how to save it as UTF-8)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot read the {what}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError.not_utf8(path, data, exc, hint) from None


class ConfigError(UsageError):
    """A command-line flag, YAML key or environment variable is wrong or missing."""


class MissingCredentialsError(ConfigError):
    """The API key a provider needs is not set."""

    def __init__(self, provider: str, variables: tuple[str, ...]):
        self.provider = provider
        self.variables = variables
        names = " or ".join(variables)
        super().__init__(
            f"No API key for {provider}: set {names} in the environment, "
            "or pass --offline (offline=True in GenerationConfig or JudgeSettings) to run against the built-in "
            "emulator (synthetic answers, no cost)."
        )


class ModelMismatchError(ConfigError):
    """A model given to a pipeline differs from its config in name, provider or sampling parameters.

    Refused because the run's `run.json` and output paths are written from the config: running the other model
    would file its answers under the wrong name, provider or temperature.

    Attributes:
        role: whose model it is ('candidate', 'judge').
        differences: (what, the model's value, the config's value) for each difference.
    """

    def __init__(self, role: str, differences: list[tuple[str, object, object]]):
        self.role = role
        self.differences = differences
        listed = "; ".join(f"{what}: the model has {got!r}, the config {want!r}" for what, got, want in differences)
        super().__init__(
            f"the {role} model given is not the one the config describes ({listed}); let the pipeline build it "
            "(run() without a model, or connect()), or change the config"
        )


class RunStateError(UsageError):
    """A run directory cannot be used as asked (for example its spec or inputs changed since it started)."""


class ProviderError(SpecevalError):
    """A call to a provider failed in a way that retrying right away will not fix.

    Attributes:
        provider: 'openai', 'anthropic', 'gemini', ...
        operation: what we were doing ('create batch', 'download results', ...).
        status_code: the HTTP status, when there was a response.
        provider_message: the provider's own message (redacted of any credential).
        retry_after: seconds the provider asked us to wait, when it said.
    """

    def __init__(
        self,
        provider: str,
        operation: str,
        provider_message: str,
        *,
        status_code: int | None = None,
        retry_after: float | None = None,
    ):
        self.provider = provider
        self.operation = operation
        self.status_code = status_code
        self.provider_message = provider_message
        self.retry_after = retry_after
        status = f" (HTTP {status_code})" if status_code is not None else ""
        super().__init__(f"{provider}: {operation} failed{status}: {provider_message}")


class TransientProviderError(ProviderError):
    """A provider failure worth retrying later: rate limits, server errors, timeouts, lost connections."""


class UnmatchedResultsError(SpecevalError):
    """A job ended with results, but none of them can be matched to a request it was sent.

    Not a `ProviderError`: the engine would record every request as missing and pay for them again, and the
    provider would answer the same way again. The run stops instead, naming the job and where its output is.

    Attributes:
        provider: 'vertex', ...
        batch_id: the job whose results could not be matched.
        rows: how many result rows it returned.
    """

    def __init__(self, provider: str, batch_id: str, rows: int, detail: str):
        self.provider = provider
        self.batch_id = batch_id
        self.rows = rows
        super().__init__(
            f"{provider}: none of the {rows} row(s) of job {batch_id} can be matched to a request: {detail}"
        )


class BudgetExceeded(SpecevalError):
    """Submitting the next job would exceed the run's budget; running jobs are left to finish."""


def first_problem(exc: ValidationError) -> tuple[str, str]:
    """The first problem pydantic found in a value: its field path, dotted ("" for the value as a whole), and its
    message. Every error we raise from a validation names one field, the first, so a person fixes one at a time."""
    error = exc.errors()[0]
    return ".".join(str(part) for part in error["loc"]), error["msg"]
