"""`$SPECEVAL_OFFLINE_TURNAROUND`: how long an offline job takes, and the polls that follow it."""

from __future__ import annotations

import pytest

from speceval.errors import ConfigError
from speceval.offline import (
    OFFLINE_TURNAROUND_SECONDS,
    TURNAROUND_VARIABLE,
    offline_emulator,
    offline_poll_interval,
    offline_turnaround,
)


def test_unset_means_the_demo_second_and_half_second_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TURNAROUND_VARIABLE, raising=False)
    assert offline_turnaround() == OFFLINE_TURNAROUND_SECONDS == 1.0
    assert offline_poll_interval() == 0.5


def test_a_set_value_reaches_the_emulator_and_the_polls(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv(TURNAROUND_VARIABLE, "3")
    assert offline_poll_interval() == 1.5
    with offline_emulator(tmp_path) as emulator:
        assert emulator.faults.turnaround_seconds == 3.0
    monkeypatch.setenv(TURNAROUND_VARIABLE, "0")
    assert offline_poll_interval() == 0.05  # never a busy loop


@pytest.mark.parametrize("value", ["fast", "-1", "1e9", "nan"])
def test_a_bad_value_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(TURNAROUND_VARIABLE, value)
    with pytest.raises(ConfigError, match=TURNAROUND_VARIABLE):
        offline_turnaround()
