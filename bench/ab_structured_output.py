"""What structured output (issue 37) costs a run without an output schema.

    python -m bench.ab_structured_output [--runs 100]

Interleaved A/B in one process (bench/ab_parity.py's `measure_built_arms`): ours
through the facade and the compiled graph, workers with a tool, N=1 and 5, in memory
and on sqlite. B is the code as it is; A is built and run without what issue 37 added
to every run: the graph state's `structured_response` / `structured_output_error`
channels (a state without them) and the supervisor's and the direct loop's schema
lookups (no schema to find). Reported: median CPU ms per run.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any, get_type_hints
from unittest import mock

from typing_extensions import TypedDict

from bench.ab_parity import ab_cli, measure_built_arms
from supervisor_graph.nodes.state import SupervisorState

__all__ = ["main", "measure"]


# `SupervisorState` as it was before issue 37: the same channels, less the two it added
_StateBefore = TypedDict(  # type: ignore[misc]
    "_StateBefore",
    {
        name: hint
        for name, hint in get_type_hints(SupervisorState, include_extras=True).items()
        if name not in ("structured_response", "structured_output_error")
    },
    total=False,
)


def _without_structured_output() -> ExitStack:
    stack = ExitStack()
    stack.enter_context(mock.patch("supervisor_graph.nodes.background.tasks.SupervisorState", _StateBefore))
    return stack


async def measure(runs: int, workdir: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    return await measure_built_arms(runs, workdir, _without_structured_output)


def main(argv: list[str] | None = None) -> int:
    return ab_cli("python -m bench.ab_structured_output", measure, "without structured output", argv)


if __name__ == "__main__":
    raise SystemExit(main())
