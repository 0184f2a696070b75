"""The event loop every sync twin runs on (`Agent.generate_sync`, `Memory.list_threads_sync`,
...): one thread for the process, so database connections opened for one call serve the
next, and sync calls work inside notebooks that run a loop of their own.

Imports nothing of this package: the facade (`run/`) and `memory/` both use it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["iterate_sync", "run_sync"]

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="supervisor-graph-sync", daemon=True).start()
        return _loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion from synchronous code."""
    return asyncio.run_coroutine_threadsafe(coro, _background_loop()).result()


async def _next(items: AsyncIterator[T]) -> T:
    return await items.__anext__()


def iterate_sync(items: AsyncIterator[T]) -> Iterator[T]:
    """Iterate an async iterator living on the sync loop from synchronous code."""
    loop = _background_loop()
    while True:
        try:
            yield asyncio.run_coroutine_threadsafe(_next(items), loop).result()
        except StopAsyncIteration:
            return
