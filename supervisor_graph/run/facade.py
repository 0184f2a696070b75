"""The facade's entries (SPEC §5): `generate`, `stream`, a resume, and the sync twin of
`stream`. Each starts one `Run` (`call.py`) and drives it, directly or through an
`AgentStream`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from supervisor_graph.run.call import Run
from supervisor_graph.run.chunks import StreamChunk
from supervisor_graph.run.results import GenerateResult, PendingItem
from supervisor_graph.run.streaming import AgentStream, FinishedStream
from supervisor_graph.sync_loop import iterate_sync, run_sync

if TYPE_CHECKING:
    from supervisor_graph.agent import Agent

__all__ = [
    "AgentStream",
    "FinishedStream",
    "GenerateResult",
    "PendingItem",
    "generate",
    "run_sync",
    "stream",
    "stream_sync",
]


async def generate(agent: Agent, prompt: Any, **options: Any) -> GenerateResult:
    """Run `agent` on `prompt` to the end (see `Agent.generate`)."""
    run = await Run.start(agent, prompt, options)
    return await run.generate()


async def stream(agent: Agent, prompt: Any, **options: Any) -> AgentStream:
    """Start `agent` on `prompt` and stream it (see `Agent.stream`)."""
    return AgentStream(await Run.start(agent, prompt, options))


def stream_sync(agent: Agent, prompt: Any, **options: Any) -> Iterator[StreamChunk]:
    """`stream` for synchronous code: yields full-stream chunks."""
    agent_stream = run_sync(stream(agent, prompt, **options))  # starts at the first next(), as a generator does
    yield from iterate_sync(agent_stream.full_stream.__aiter__())
