"""Sync twins for scripts and notebooks: one background event loop serves every call."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from supervisor_graph.run.chunks import StreamChunk

if TYPE_CHECKING:
    from supervisor_graph.agent import Agent

__all__ = ["run_sync", "stream_sync"]

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    """One event loop thread for every sync call, so database connections opened for
    one call serve the next (and work inside notebooks that run their own loop)."""
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="supervisor-graph-sync", daemon=True).start()
        return _loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion from synchronous code."""
    return asyncio.run_coroutine_threadsafe(coro, _background_loop()).result()


async def _next(chunks: AsyncIterator[StreamChunk]) -> StreamChunk:
    return await chunks.__anext__()


def stream_sync(agent: Agent, prompt: Any, **options: Any) -> Iterator[StreamChunk]:
    """`stream` for synchronous code: yields full-stream chunks."""
    from supervisor_graph.run.facade import stream

    loop = _background_loop()
    agent_stream = run_sync(stream(agent, prompt, **options))
    chunks = agent_stream.full_stream.__aiter__()
    while True:
        try:
            yield asyncio.run_coroutine_threadsafe(_next(chunks), loop).result()
        except StopAsyncIteration:
            return
