"""The optional Mastra contender (issue 17): it installs its pinned packages outside the
repository, runs checked Mastra runs in Node, and the report says so when it cannot."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.mastra_peer import MastraResult, mastra_timing


async def test_mastra_runs_checked_runs_in_node(tmp_path: Path) -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("Node.js and npm are needed for the Mastra contender; .ci/run's machine has them")
    result = await mastra_timing(("memory", "sqlite"), (1, 2), runs=2, warmup=0, workdir=tmp_path)
    # bench.mjs throws (and the result says why) unless every run made N+1 supervisor calls,
    # N worker calls and gave the final answer.
    assert result.unavailable is None, result.unavailable
    assert set(result.cells) == {("memory", 1), ("memory", 2), ("sqlite", 1), ("sqlite", 2)}
    assert all(len(samples) == 2 and min(samples) > 0 for samples in result.cells.values())
    assert result.versions["@mastra/core"] == "1.71.0"
    assert result.node_base > 0 and result.python_base > 0


def test_the_report_says_loudly_when_mastra_was_not_measured() -> None:
    from bench.report import _mastra

    class R:
        mastra = MastraResult(unavailable="Node.js and npm are not on PATH")

    lines = _mastra(R(), {})  # type: ignore[arg-type]
    assert any("Not measured: Node.js and npm are not on PATH" in line for line in lines)
