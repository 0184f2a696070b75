"""What issue 24's parity checks cost a run that starts no background task.

    python -m bench.ab_parity [--runs 100]

Interleaved A/B in one process, ours through the facade (`generate`) and through the
compiled graph (`graph.ainvoke`), workers with a tool, N=1 and 5, in memory and on
sqlite. B is the code as it is; A patches out, for the same contenders, every check
issue 24 added to a run's path: the supervisor's look for calls a cancelled run left
open (`left_open`), the background settings of the agent (`background_settings`: the
declared and the inherited ones) and the per-run subagent set (`for_request`). Runs
alternate A, B, B, A, ... so drift hits both alike; reported: median CPU ms per run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest import mock

from bench.contenders import Script, build
from bench.savers import Storage
from bench.scenarios import run_measured

__all__ = ["ab_cli", "main", "measure", "measure_built_arms"]


def _patched_out() -> ExitStack:
    from supervisor_graph.agent import Agent

    stack = ExitStack()
    stack.enter_context(mock.patch("supervisor_graph.nodes.turn.supervisor.left_open", lambda *a, **k: []))
    stack.enter_context(mock.patch.object(Agent, "background_settings", property(lambda self: None)))
    stack.enter_context(mock.patch.object(Agent, "for_request", lambda self, request_context: self))
    return stack


async def measure(runs: int, workdir: Path) -> dict[tuple[str, str, int], dict[str, float]]:
    out: dict[tuple[str, str, int], dict[str, float]] = {}
    for kind in ("memory", "sqlite"):
        for n in (1, 5):
            for name in ("ours", "ours_graph"):
                path = workdir / f"ab-{name}-{kind}-{n}.db" if kind == "sqlite" else None
                contender = await build(name, n, Storage(kind, path), Script(worker_tool=True, record_calls=False))
                samples: dict[str, list[float]] = {"A": [], "B": []}
                try:
                    for i in range(10):
                        await run_measured(contender, "warm up", f"warm-{i}")
                    for i in range(runs):
                        for arm in ("AB" if i % 2 == 0 else "BA"):
                            with _patched_out() if arm == "A" else ExitStack():
                                _, cpu = await run_measured(contender, "measured", f"{arm}-{i}")
                            samples[arm].append(cpu * 1000)
                finally:
                    await contender.aclose()
                out[(name, kind, n)] = {arm: statistics.median(v) for arm, v in samples.items()}
    return out


async def measure_built_arms(
    runs: int, workdir: Path, without: Callable[[], ExitStack]
) -> dict[tuple[str, str, int], dict[str, float]]:
    """An interleaved A/B where arm A is built and run under `without()` (what it patches
    out shapes the compiled graph too) and arm B as shipped: ours through the facade and
    the compiled graph, workers with a tool, N=1 and 5, in memory and on sqlite; median
    CPU ms per run."""
    out: dict[tuple[str, str, int], dict[str, float]] = {}
    for kind in ("memory", "sqlite"):
        for n in (1, 5):
            for name in ("ours", "ours_graph"):
                arms: dict[str, Any] = {}
                for arm in ("A", "B"):
                    path = workdir / f"ab-{name}-{kind}-{n}-{arm}.db" if kind == "sqlite" else None
                    with without() if arm == "A" else ExitStack():
                        arms[arm] = await build(name, n, Storage(kind, path), Script(worker_tool=True, record_calls=False))
                samples: dict[str, list[float]] = {"A": [], "B": []}
                try:
                    for i in range(10):  # A's first run compiles its graph: under the patch too
                        for arm in ("A", "B"):
                            with without() if arm == "A" else ExitStack():
                                await run_measured(arms[arm], "warm up", f"warm-{arm}-{i}")
                    for i in range(runs):
                        for arm in ("AB" if i % 2 == 0 else "BA"):
                            with without() if arm == "A" else ExitStack():
                                _, cpu = await run_measured(arms[arm], "measured", f"{arm}-{i}")
                            samples[arm].append(cpu * 1000)
                finally:
                    for contender in arms.values():
                        await contender.aclose()
                out[(name, kind, n)] = {arm: statistics.median(v) for arm, v in samples.items()}
    return out


def ab_cli(prog: str, measure: Callable[[int, Path], Awaitable[Any]], a_label: str, argv: list[str] | None) -> int:
    """Run an interleaved A/B's `measure(runs, workdir)` and print its table (B/A per cell)."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        result: Any = asyncio.run(measure(args.runs, Path(tmp)))
    print(f"| contender | storage | N | A: {a_label} (ms) | B: as shipped (ms) | B/A |")
    print("|---|---|---|---|---|---|")
    for (name, kind, n), arms in result.items():
        print(f"| {name} | {kind} | {n} | {arms['A']:.2f} | {arms['B']:.2f} | {arms['B'] / arms['A']:.3f} |")
    return 0


def main(argv: list[str] | None = None) -> int:
    return ab_cli("python -m bench.ab_parity", measure, "checks patched out", argv)


if __name__ == "__main__":
    raise SystemExit(main())
