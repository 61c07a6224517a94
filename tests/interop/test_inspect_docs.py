"""docs/inspect.md's worked example, run verbatim on an Inspect log built with inspect_ai's API: the compliance
judge judges every answered sample of both epochs (canaries beside them), the report reads the verdicts, and the
export gives Inspect logs whose samples are those verdicts (the round trip Inspect → speceval → Inspect)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from speceval.analysis.reading.load import load_verdicts
from tests import forked
from tests.conftest import REPO, cli_env
from tests.interop.inspect_reader import list_eval_logs, read_eval_log
from tests.interop.test_inspect_answers import MODEL, build_log


def worked_example() -> list[str]:
    text = (REPO / "docs" / "inspect.md").read_text(encoding="utf-8")
    block = text.split("<!-- inspect-worked-example:", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip()]


def test_the_worked_example_judges_every_answered_sample_and_exports_it_back(tmp_path):
    shutil.copytree(REPO / "data" / "specs", tmp_path / "data" / "specs")
    (tmp_path / "logs").mkdir()
    log = build_log(tmp_path / "logs" / "2026-11-27T00-00-00+00-00_model-spec.eval")
    env = cli_env()
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    commands = worked_example()
    assert len(commands) == 3
    for command in commands:
        done = forked.run_shell(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL
        )
        assert done.returncode == 0, (command, done.stderr[-3000:])
    answered = [s for s in log.samples if s.error is None]
    verdicts = load_verdicts([tmp_path / "judged"])
    assert len(verdicts.compliance) == len(answered)
    assert verdicts.canaries  # the spec's own examples were judged beside them
    assert (tmp_path / "judged" / "report" / "summary.md").is_file()
    (back,) = [read_eval_log(info.name) for info in list_eval_logs(str(tmp_path / "inspect_logs"))]
    # The round trip keeps what Inspect had: the model's provider prefix, the epochs in one log, the errored sample.
    assert back.eval.model == MODEL and back.eval.config.epochs == 2
    assert back.eval.metadata["speceval"]["epochs"] == [1, 2]
    assert sorted(s.epoch for s in back.samples) == sorted(s.epoch for s in log.samples)
    # A conversation comes back with every message (it came back as its first question and last answer).
    talks = {s.epoch: s for s in log.samples if s.id == "sycophancy-talk"}
    for sample in back.samples:
        if sample.id == "avoid_sycophancy_3":
            was = [(m.role, m.text) for m in talks[sample.epoch].messages]
            assert [(m.role, m.text) for m in sample.messages] == was and len(was) == 4
    (errored,) = [s for s in back.samples if s.error is not None]
    assert (errored.id, errored.epoch, errored.error.message) == ("avoid_errors_1", 1, "rate limited")
    assert not errored.scores
    judge = "gpt-4.1-2025-04-14"
    for sample in back.samples:
        if sample.error is None:
            assert set(sample.scores) | set(sample.metadata["not_judged"]) == {judge}
