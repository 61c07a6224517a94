"""The local provider emulator: OpenAI, Anthropic and Gemini batch APIs on one loopback port.

    with Emulator(faults=FaultConfig(turnaround_seconds=0.1)) as emu:
        client = openai.OpenAI(api_key="sk-test", base_url=emu.openai_base_url)

Answers are deterministic synthetic text (see `responder`); faults are configured with `FaultConfig`.
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
