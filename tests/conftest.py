"""Shared fixtures: a clean provider environment, sample data in a temp folder, and the emulator."""

from __future__ import annotations

import compileall
import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests import forked, forked_workers

pytest_plugins = ("tests.longest_first",)  # the longest tests first, one worker each (see that module)

REPO = Path(__file__).resolve().parent.parent
SAMPLE_SPEC = REPO / "data" / "specs" / "openai" / "jsonl" / "openai.jsonl"
SAMPLE_INPUTS = REPO / "data" / "inputs" / "openai"
TEST_KEY = "sk-test-DO-NOT-LEAK-0123456789abcdef"
OFFLINE_TURNAROUND = 0.1
"""Seconds an offline job takes in the suite (the emulator fixture's turnaround too)."""
# Offline runs (`--offline`, `offline=True`) finish a job in OFFLINE_TURNAROUND seconds instead of the demo's one
# second: most of the suite's offline tests wait on that turnaround, stage after stage. Set for the whole process
# (module-scoped fixtures run offline jobs too) and inherited by every command a test starts; a test that needs a
# job in flight for longer sets the variable itself. 0.1 s (0.2 s until 2026-11-28): offline polls follow at half the
# turnaround, and 0.05 s is the shortest poll interval an offline run takes.
os.environ["SPECEVAL_OFFLINE_TURNAROUND"] = str(OFFLINE_TURNAROUND)
# The command line's rich consoles are module-level objects (speceval/cli/console.py), built when it is imported: one
# built while COLUMNS is set keeps that width for good, one built without it reads COLUMNS at each print. The commands
# the suite forks (tests/forked.py) inherit the test process's consoles, so the suite's process never has COLUMNS (a
# terminal's, exported by the developer's shell): a test that wants a width sets it in its command's environment.
os.environ.pop("COLUMNS", None)


def _fsync_skipped(fd: int) -> None:
    """`os.fsync` in the suite: the descriptor is checked (a closed one still raises), nothing is flushed."""
    os.fstat(fd)


# fsync (speceval/atomic.py's writes and their folders, the batch journal) makes a write survive a power loss, which
# no test can cause or observe: a SIGKILL or a crash leaves the page cache, and so the file, as it was. Each call
# still waited for the disk: 5 ms of wall on this machine (2026-11-29, 0.3 ms of CPU), and the inner loop makes
# thousands. Replaced here, in the test process and so in every worker and command forked from it (tests/forked.py);
# a fresh interpreter (Ray, `via`) fsyncs as shipped. `FSYNC=1` in the environment keeps the real one.
if os.environ.get("FSYNC") != "1":
    os.fsync = _fsync_skipped

# Hypothesis's defaults include two clocks: a 200 ms deadline per example and the `too_slow` health check on data
# generation. On a 2-core machine shared with other work a worker can wait longer than that for a core, and the
# property tests (tests/unit/test_paths.py, tests/engine/test_properties.py) then failed at random with
# DeadlineExceeded / "Unreliable test timings" (FlakyFailure) or FailedHealthCheck: a timing assertion, which the
# suite does not make. Every other setting (examples, health checks on the data itself) stays Hypothesis's.
# Registered here, at module level, before any test module's @settings (Hypothesis deprecates registering later).
settings.register_profile("speceval", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("speceval")

_PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "SPECEVAL_POLL_INTERVAL",
)


@pytest.fixture(autouse=True)
def clean_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test ever sees a real key or base URL from the developer's shell, and loopback skips proxies."""
    for name in _PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def emulator() -> Iterator[object]:
    """A fresh emulator on a free loopback port, with fast turnaround."""
    from speceval.emulator import Emulator, FaultConfig

    with Emulator(faults=FaultConfig(turnaround_seconds=OFFLINE_TURNAROUND)) as emu:
        yield emu


@pytest.fixture
def sample_data(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the shipped sample spec and inputs that a test may modify."""
    spec = tmp_path / "spec" / "openai.jsonl"
    spec.parent.mkdir()
    shutil.copy(SAMPLE_SPEC, spec)
    inputs = tmp_path / "inputs"
    shutil.copytree(SAMPLE_INPUTS, inputs)
    return spec, inputs


def write_inputs(directory: Path, statements: dict[str, list[str]]) -> Path:
    """Write one `<statement_id>.json` per statement."""
    directory.mkdir(parents=True, exist_ok=True)
    for statement_id, inputs in statements.items():
        (directory / f"{statement_id}.json").write_text(json.dumps({"inputs": inputs}), encoding="utf-8")
    return directory


def write_spec(path: Path, statement_ids: list[str]) -> Path:
    """A minimal valid spec with the given statement ids."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": sid, "text": f"Statement {sid}."}) for sid in statement_ids]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def cli_env(**extra: str) -> dict[str, str]:
    """Environment for a CLI subprocess: this process's (already cleaned) environment plus `extra`."""
    env = dict(os.environ)
    env.update(extra)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_generation(
    args: list[str], env: dict[str, str], timeout: float = 120, via: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Run `python -m batched_examples.run_batched_generation ARGS` to completion (`via`: a module that runs it,
    as `python -m VIA batched_examples.run_batched_generation ARGS`). A child forked from this process (see
    tests/forked.py) unless `via` asks for a fresh interpreter."""
    return (subprocess.run if via else forked.run)(
        [sys.executable, "-m", *via, "batched_examples.run_batched_generation", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def interruptible() -> None:
    """`preexec_fn` of a child a test interrupts with SIGINT: a test run started in the background by a
    non-interactive shell inherits SIGINT *ignored*, and Python then installs no KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_generation(args: list[str], env: dict[str, str], via: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    """Start the generation CLI in the background (for kill and interrupt tests; `via` as for `run_generation`)."""
    return (subprocess.Popen if via else forked.Popen)(
        [sys.executable, "-m", *via, "batched_examples.run_batched_generation", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        preexec_fn=interruptible,
    )


def only_run_dir(output_base: Path) -> Path:
    """The single run directory under an output base (`{base}/{spec}/{model}/{stamp}`)."""
    runs = [p.parent for p in output_base.glob("*/*/*/run.json")]
    assert len(runs) == 1, runs
    return runs[0]


def doc_text() -> str:
    """The README and every page under docs/, as one text (walk-throughs are found by their markers)."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    return "\n".join(page.read_text(encoding="utf-8") for page in pages)


SLOW = (
    "tests/raydata/",
    "tests/conformance/",
    "tests/e2e/test_crash.py",
    "tests/e2e/test_realtime_cli.py",
    "tests/e2e/test_judging_cli.py",
    "tests/e2e/test_same_run.py",
    "tests/e2e/test_original_configs.py",
    "tests/experiments/",
    "tests/realtime/test_rate_control.py",
    "tests/realtime/test_realtime_judge.py",
    "tests/library/test_readme_library.py",
    "tests/analysis/test_experiment_statistics.py",
    "tests/faults/",
    # Several offline runs, kills and resumes each (2026-11-26: the inner loop took 177 s with them, target 90 s).
    "tests/conversations/test_generation_rounds.py",
    "tests/conversations/test_simulated_user.py",
    "tests/conversations/test_conversation_commands.py",
    "tests/analysis/test_evidence.py",
    "tests/analysis/test_report_stream.py::test_the_csvs_are_the_same_bytes_under_any_string_hash_seed",
    "tests/e2e/test_generation_cli.py",
    "tests/e2e/test_diagnostics.py",
    "tests/inputgen/test_inputs_independent.py",
    "tests/independent/test_anthropic_independent.py",
    "tests/judging/test_canaries.py",
    # The slowest of the inner loop on 2026-11-28 (`--durations`, seconds on a machine loaded by other agents, load
    # average 17-20 on 2 cores): walk-throughs run verbatim, several offline runs or reports each, kills, and a
    # property test of many engine runs. Each stays in the full suite.
    "tests/e2e/test_spec_health_walkthrough.py",  # 301 s: the docs' walk-through, verbatim
    "tests/analysis/test_keyed_tables.py::test_the_same_folder_twice_or_inside_another_is_counted_once",  # 200 s
    "tests/analysis/test_keyed_tables.py::test_every_csv_the_report_writes_leads_with_its_key_and_says_its_data_kind",
    "tests/independent/test_health_independent.py",  # 172 s: the whole chain against independent servers
    "tests/analysis/test_judge_quality.py::test_label_sheet_then_report_with_labels",  # 128 s
    "tests/library/test_own_provider.py::test_a_plugin_provider_survives_sigkill_resume_and_status",  # a kill
    "tests/interop/test_inspect_docs.py",  # 115 s: the docs' worked example, verbatim
    "tests/library/test_library_settings.py::test_two_system_prompts_from_a_script_are_reported_apart_not_pooled",
    "tests/engine/test_properties.py::test_results_in_any_order_land_on_their_own_inputs",  # 92 s: many engine runs
    "tests/pipelines/test_streamed_judge.py::test_a_candidate_whose_answers_all_succeeded_holds_no_array_of_their_",
    "tests/conversations/test_one_judge_two_scopes.py",  # 71 s: two judge runs over conversations
    "tests/analysis/test_coverage_matrix.py::test_every_registered_estimator_has_scenarios_in_the_matrix",  # 70 s
    "tests/e2e/test_output_paths.py::test_report_and_results_files_follow_the_umask",  # 63 s
    "tests/independent/test_evidence_independent.py",  # 60 s
    # 2026-11-28, measured by CPU (the machine was shared): a whole report over an experiment's original export (4 s
    # of CPU, most of it the report's figures); tests/analysis/test_keyed_tables.py's
    # test_an_original_export_of_synthetic_verdicts_reads_back_synthetic keeps the round trip in the inner loop.
    "tests/interop/test_original_export.py::test_the_synthetic_flag_comes_back_with_the_report_over_the_export",
    # 2026-11-29, CPU per test in the inner loop (loaded machine; about 1.3x an idle one's), over 2 s idle each:
    # 200 draws of five candidates' spread (3.5 s; the coverage matrix's `spread` family checks the same coverage, the
    # two structural spread tests stay in the inner loop), and an experiment's every log part written by both `.eval`
    # writers (3.4 s; test_an_inspect_sources_epochs_and_errored_samples_read_back_the_same keeps the comparison).
    "tests/analysis/test_spread.py::test_five_alike_candidates_spread_is_covered_where_the_picked_pairs_interval_is_not",
    "tests/interop/test_inspect_zip.py::test_an_experiments_parts_read_back_as_inspect_ais_own_writer_writes_them",
)
"""Test files that start Ray, kill and resume processes, drive whole experiments or time rate limits: the
`slow` marker, so `pytest -m "not slow"` is an inner loop (README.md says what it measured)."""


FIRST = ("tests/raydata/", "tests/analysis/test_experiment_statistics.py", "tests/analysis/test_coverage_matrix.py")
"""Tests that start first. pytest-xdist's worksteal hands each worker a contiguous quarter of the collection and
lets an idle worker take the tail half of a busy one's queue. The Ray tests mostly wait on Ray, a minute or more:
at the front they overlap the other workers' CPU work; at their alphabetical place they ended the run alone. The
experiment statistics' five tests share one module-scoped experiment (9 s): at a queue's tail they were stolen
apart and the experiment ran on all four workers; at its head they run on one. The coverage matrix's families (up
to 12 s of CPU each, a minute of wall at load 10) at the front too: at the end of a queue they ended the run alone."""


def pytest_configure(config: pytest.Config) -> None:
    """Bytecode caches, also where the environment sets PYTHONDONTWRITEBYTECODE (this machine's does): without them
    every pytest-xdist worker compiled the package and assertion-rewrote every test module again, 17 s of CPU each
    before its first test (7 s with them), and every command a test starts in a fresh interpreter compiled the
    package too. The process that starts the workers compiles the package first (about a second); the
    `__pycache__` folders are git-ignored."""
    sys.dont_write_bytecode = False  # this process and the workers (each loads this file) write their caches
    if not hasattr(config, "workerinput"):  # not a worker: before any worker or command starts
        for folder in ("speceval", "batched_examples", "tests"):
            compileall.compile_dir(REPO / folder, quiet=1)
        workers = getattr(config.option, "numprocesses", None)
        if isinstance(workers, int) and workers > 0 and getattr(config.option, "dist", "no") != "no":
            forked_workers.park(workers, session_test_files(config))  # the workers start forked, the imports done once


def session_test_files(config: pytest.Config) -> list[Path]:
    """The test modules the session's arguments name (folders searched as pytest searches them), in order."""
    patterns = config.getini("python_files")
    found: dict[Path, None] = {}
    for argument in config.args:
        path = Path(config.invocation_params.dir, argument.split("::")[0])
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            if "__pycache__" not in file.parts and any(fnmatch.fnmatch(file.name, p) for p in patterns):
                found[file.resolve()] = None
    return list(found)


def pytest_unconfigure(config: pytest.Config) -> None:
    """End the parked worker processes no worker took (see tests/forked_workers.py)."""
    forked_workers.release()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of the files in `SLOW`; the tests of `FIRST` first (the same order in every worker)."""
    for item in items:
        if item.nodeid.startswith(SLOW):
            item.add_marker(pytest.mark.slow)

    def place(item: pytest.Item) -> int:
        return next((i for i, prefix in enumerate(FIRST) if item.nodeid.startswith(prefix)), len(FIRST))

    items.sort(key=place)  # stable: otherwise collection order
