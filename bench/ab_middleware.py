"""What two no-op LangChain middleware cost a run (issue 49, SPEC §33).

    python -m bench.ab_middleware [--runs 100]

Interleaved A/B in one process: arm A is every agent of the contender (the supervisor
and its workers, which inherit them) built with two pass-through `AgentMiddleware`
(`awrap_model_call` and `awrap_tool_call` that only call the handler); arm B is the same
contender as shipped, with none. Ours through the facade and the compiled graph,
workers with a tool, N=1 and 5 delegations, in memory and on sqlite; median CPU ms per
run (`bench/ab_parity.py`). B/A below 1 is what the two middleware cost.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest import mock

from langchain.agents.middleware import AgentMiddleware

from bench.ab_parity import ab_cli, measure_built_arms
from supervisor_graph.compiler import steps as compiler_steps

__all__ = ["PassThrough", "main", "measure"]


class PassThrough(AgentMiddleware):
    """Calls the handler and nothing else, around each model and tool call."""

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)


_TWO = (PassThrough(), PassThrough())


def _with_two_middleware() -> ExitStack:
    shipped = compiler_steps.steps_of

    def steps_of(*args: Any, **kwargs: Any) -> Any:
        kwargs["middleware"] = (*_TWO, *kwargs.get("middleware", ()))
        return shipped(*args, **kwargs)

    stack = ExitStack()
    stack.enter_context(mock.patch("supervisor_graph.compiler.build.steps_of", steps_of))
    return stack


async def measure(runs: int, workdir: Path) -> dict[tuple[str, str, int], dict[str, float]]:
    return await measure_built_arms(runs, workdir, _with_two_middleware)


def main(argv: list[str] | None = None) -> int:
    return ab_cli("python -m bench.ab_middleware", measure, "with two no-op middleware", argv)


if __name__ == "__main__":
    raise SystemExit(main())
