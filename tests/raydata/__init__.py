"""Tests of `--org ray` and the vLLM exchange files."""

from importlib.util import find_spec

import pytest

NEEDS_RAY = pytest.mark.skipif(
    find_spec("ray") is None, reason="the ray extra is not installed (pip install 'speceval[ray]')"
)
"""Skips a module's tests without the ray extra, found without importing Ray: importing ray.data.llm (as
`pytest.importorskip` did) cost every pytest-xdist worker 2.4 s of CPU at collection; one worker runs these tests."""
