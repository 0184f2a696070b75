"""What issue 28's tracing costs a run nobody traces (no tracer provider, no callbacks).

    python -m bench.ab_tracing [--runs 100]

Interleaved A/B in one process, ours through the facade (`generate`) and through the
compiled graph (`graph.ainvoke`), workers with a tool, N=1 and 5, in memory and on
sqlite. B is the code as it is; A is built and run without what issue 28 added to a
run's path: the agent identity in the compiled graph's config (`_identified`), the
identity and delegation keys in a delegation's metadata (`agent_metadata`), the custom
event checks (`announce`) and the facade's `config=` handling. Runs alternate A, B, B,
A, ... so drift hits both alike; reported: median CPU ms per run.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest import mock

from bench.ab_parity import ab_cli, measure_built_arms

__all__ = ["main", "measure"]


async def _silent(*args: Any, **kwargs: Any) -> None:
    return None


def _without_tracing() -> ExitStack:
    stack = ExitStack()
    stack.enter_context(mock.patch("supervisor_graph.compiler.build._identified", lambda agent, graph: graph))
    stack.enter_context(mock.patch("supervisor_graph.nodes.delegation.inheritance.agent_metadata", lambda *a, **k: {}))
    stack.enter_context(mock.patch("supervisor_graph.nodes.delegation.opening.announce", _silent))
    stack.enter_context(mock.patch("supervisor_graph.nodes.delegation.in_background.announce", _silent))
    stack.enter_context(mock.patch("supervisor_graph.nodes.delegation.complete.announce", _silent))
    return stack


async def measure(runs: int, workdir: Path) -> dict[tuple[str, str, int], dict[str, float]]:
    return await measure_built_arms(runs, workdir, _without_tracing)


def main(argv: list[str] | None = None) -> int:
    return ab_cli("python -m bench.ab_tracing", measure, "without tracing", argv)


if __name__ == "__main__":
    raise SystemExit(main())
