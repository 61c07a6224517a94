"""The two redaction nets: every log handler (messages, tracebacks, stacks) and every console write."""

from __future__ import annotations

import io
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from speceval.cli.console import FILE_ONLY, close_logging, console, log_file, setup_logging, stdout
from speceval.redaction import MARKER, RedactingFilter, redact, register_secret_env

KEY = "sk-test-unit-REDACT-0123456789"


@pytest.fixture
def key_in_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


def handler_output(record_fn) -> str:
    """What a plain handler with the run log's formatter writes for the records `record_fn` logs."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("speceval.test_redaction")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        record_fn(logger)
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


def test_tracebacks_stacks_and_arguments_are_redacted_in_log_records(key_in_env):
    def log(logger: logging.Logger) -> None:
        try:
            raise RuntimeError(f"server said: bad key {key_in_env}")
        except RuntimeError:
            logger.exception("call failed for %s", key_in_env)
        logger.error("no traceback object", exc_info=ValueError(key_in_env))
        record = logger.makeRecord(
            logger.name,
            logging.ERROR,
            __file__,
            1,
            "stacked",
            None,
            None,
            sinfo=f"Stack (most recent call last):\n  frame with {key_in_env}",
        )
        logger.handle(record)

    text = handler_output(log)
    assert KEY not in text
    assert f"call failed for {MARKER}" in text and f"RuntimeError: server said: bad key {MARKER}" in text
    assert f"ValueError: {MARKER}" in text and f"frame with {MARKER}" in text


def test_every_console_write_is_redacted(key_in_env, capsys):
    console.print(f"provider said {key_in_env}")
    stdout.print(f"result {key_in_env}")
    console.file.write(f"raw {key_in_env}\n")  # what rich's live display and log handler write through
    captured = capsys.readouterr()
    assert KEY not in captured.out + captured.err
    assert f"provider said {MARKER}" in captured.err and f"result {MARKER}" in captured.out


def test_variables_named_later_are_secrets(monkeypatch):
    monkeypatch.setenv("SOME_GATEWAY_TOKEN", "gw-token-0123456789")
    assert redact("gw-token-0123456789") == "gw-token-0123456789"
    register_secret_env("SOME_GATEWAY_TOKEN")
    assert redact("x gw-token-0123456789 y") == f"x {MARKER} y"


def test_file_only_errors_reach_the_log_file_with_traceback_but_not_the_quiet_terminal(
    tmp_path: Path, key_in_env, capsys
):
    path = tmp_path / "logs" / "run.log"
    setup_logging(verbose=False, log_file=path)
    try:
        assert log_file() == path
        logger = logging.getLogger("speceval.cli")
        try:
            raise KeyError(key_in_env)
        except KeyError:
            logger.error("crashed", exc_info=True, extra=FILE_ONLY)
        logger.warning("a warning for the screen")
    finally:
        close_logging()
    assert log_file() is None
    written = path.read_text()
    assert "ERROR speceval.cli: crashed" in written and f"KeyError: '{MARKER}'" in written and KEY not in written
    err = capsys.readouterr().err
    assert "a warning for the screen" in err and "crashed" not in err


def test_vertex_oauth_tokens_are_secrets_now_and_after_each_refresh(monkeypatch):
    from google.oauth2.credentials import Credentials

    from speceval.providers.vertex_batch import VertexBatchedModel

    tokens = iter(["ya29.second-token-0123456789"])
    in_an_hour = datetime.now(UTC).replace(tzinfo=None) + timedelta(hours=1)  # google-auth wants naive UTC
    credentials = Credentials(
        token="ya29.first-token-0123456789", refresh_handler=lambda request, scopes: (next(tokens), in_an_hour)
    )
    VertexBatchedModel(
        "gemini-2.0-flash-001",
        project="p",
        location="us-central1",
        input_bucket="i",
        output_bucket="o",
        credentials=credentials,
    )
    assert redact("Bearer ya29.first-token-0123456789") == f"Bearer {MARKER}"
    credentials.refresh(None)  # what the SDKs do when the token expires
    assert credentials.token == "ya29.second-token-0123456789"
    assert redact("Bearer ya29.second-token-0123456789") == f"Bearer {MARKER}"


def test_warnings_and_thread_crashes_quoting_a_key_go_through_the_redacting_handlers(
    tmp_path: Path, key_in_env, capsys
):
    import threading
    import warnings

    path = tmp_path / "run.log"
    setup_logging(verbose=False, log_file=path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            # What pydantic prints when a response field holds a string it did not expect (here: the key).
            warnings.warn(f"Expected `int` but got `str` with value `{key_in_env}`", UserWarning, stacklevel=1)

        def crash() -> None:
            raise RuntimeError(f"worker saw {key_in_env}")

        worker = threading.Thread(target=crash, name="worker-1")
        worker.start()
        worker.join()
    finally:
        close_logging()
    written = path.read_text()
    err = capsys.readouterr().err
    assert KEY not in written and KEY not in err
    assert f"got `str` with value `{MARKER}`" in written and f"got `str` with value `{MARKER}`" in err
    assert "uncaught exception in thread worker-1" in written and f"RuntimeError: worker saw {MARKER}" in written
