"""`speceval run`: a failed experiment leaves its cause (redacted) in `<output_dir>/logs/experiment.log`."""

from __future__ import annotations

from pathlib import Path

from speceval.cli.main import main as speceval_main
from speceval.redaction import MARKER
from tests.conftest import TEST_KEY
from tests.experiments import one_input_experiment
from tests.independent.openai_server import IndependentOpenAIServer


def test_a_refused_experiment_logs_the_refusal_and_points_to_the_log(tmp_path: Path, monkeypatch, capsys) -> None:
    experiment = one_input_experiment(
        tmp_path,
        "refused",
        """candidates:
  - model: gpt-4.1-mini-2025-04-14
  - model: gpt-4o-mini-2024-07-18
judges:
  - model: gpt-4.1-2025-04-14
""",
    )
    refusal = (
        401,
        {
            "error": {
                "message": f"Incorrect API key provided: {TEST_KEY}",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        },
    )
    with IndependentOpenAIServer(create_error=refusal) as server:
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("SPECEVAL_POLL_INTERVAL", "0.1")
        code = speceval_main(["run", str(experiment)])
    captured = capsys.readouterr()
    log = tmp_path / "out" / "logs" / "experiment.log"
    assert code == 1
    assert str(log) in captured.err.replace("\n", "")
    text = log.read_text()
    assert "HTTP 401" in text and f"Incorrect API key provided: {MARKER}" in text and "Traceback" in text
    assert TEST_KEY not in captured.out + captured.err
    for path in (tmp_path / "out").rglob("*"):
        assert not path.is_file() or TEST_KEY.encode() not in path.read_bytes(), path
