"""The local provider emulator, a public API: OpenAI, Anthropic, Gemini and Vertex batch APIs (and realtime chat)
on one loopback port, answering the official SDKs with the real providers' field names, states and error shapes.

Start it in-process and point a pipeline at it (no key, no network, no cost; answers are synthetic):

    from speceval.emulator import Emulator, FaultConfig

    with Emulator(faults=FaultConfig(turnaround_seconds=0.5)) as emulator:
        with pipeline.connect(base_url=emulator.openai_base_url, api_key="sk-test") as model:
            summary = pipeline.run(model)

`GenerationConfig(offline=True)` and `JudgeSettings(offline=True)` do this for you: `run()` starts an emulator
that keeps its state in the run directory (`.emulator/`), so a later resume finds the jobs it created. The SDKs
can also be pointed at it directly, e.g. `openai.OpenAI(api_key="sk-test", base_url=emulator.openai_base_url)`,
or through their environment variables (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `GOOGLE_GEMINI_BASE_URL`).
`speceval emulator --port N` (or `serve()`) runs the same server in the foreground.

Public names:
    Emulator: the server, used as a context manager (or `start()`/`close()`). Properties: `openai_base_url`,
        `anthropic_base_url`, `gemini_base_url`, `vertex_base_url`; `faults` (assign a new `FaultConfig` to
        change them while running); `stats` (`EmulatorStats`: jobs created, requests per route, uploads);
        `list_jobs(provider)` (`JobInfo` per job); `vertex_objects` (its Cloud Storage stand-in); `realtime`
        (what the chat endpoints saw). `state_dir=` persists files and jobs across restarts; `responder=`
        replaces the synthetic answers.
    FaultConfig / HttpFault: misbehaviour to inject (turnaround, shuffled, dropped or duplicated results,
        per-request errors, expiry, cancellation, 429/5xx with retry-after, truncated downloads, ...).
    Responder / respond: `(model, prompt) -> text`, and the default one (judge prompts get well-formed verdicts).
    ERROR_MARKER / TIMEOUT_ONCE_MARKER: text that makes a request fail (or time out once) when put in a prompt.
    serve: run the emulator in the foreground until interrupted.
"""

from speceval.emulator.context import EmulatorStats
from speceval.emulator.faults import ERROR_MARKER, TIMEOUT_ONCE_MARKER, FaultConfig, HttpFault
from speceval.emulator.responder import Responder, respond
from speceval.emulator.server import Emulator, JobInfo, serve

__all__ = [
    "ERROR_MARKER",
    "Emulator",
    "EmulatorStats",
    "FaultConfig",
    "HttpFault",
    "JobInfo",
    "Responder",
    "TIMEOUT_ONCE_MARKER",
    "respond",
    "serve",
]
