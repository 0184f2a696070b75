"""Synchronous twins of the graph's async nodes, so `invoke`, `stream`, `batch`, a sync
parent graph and a sync `as_tool` call run the compiled graph like `ainvoke` does.

LangGraph runs a sync node in the calling thread or in its executor's threads. Each such
thread gets one event loop of its own, kept for the thread's life (model clients and
connections opened by one call serve the next); a thread that already runs a loop (a
notebook calling `graph.invoke`) hands the node to a helper thread instead. Contextvars
(LangGraph's config, `interrupt`, the stream writer) travel with the coroutine.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from supervisor_graph.checkpointers.compat import node_runnable

__all__ = ["with_sync_twin"]

_local = threading.local()
_helpers: ThreadPoolExecutor | None = None
_helpers_lock = threading.Lock()


def _thread_loop() -> asyncio.AbstractEventLoop:
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
    return loop


def _run_here(coro: Coroutine[Any, Any, Any]) -> Any:
    return _thread_loop().run_until_complete(coro)


def _helper_threads() -> ThreadPoolExecutor:
    global _helpers
    with _helpers_lock:
        if _helpers is None:
            _helpers = ThreadPoolExecutor(thread_name_prefix="supervisor-graph-node")
        return _helpers


def _sync_twin(afunc: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Any]:
    @functools.wraps(afunc)  # the same parameters: LangGraph injects config and runtime by name
    def node(*args: Any, **kwargs: Any) -> Any:
        coro = afunc(*args, **kwargs)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return _run_here(coro)
        context = contextvars.copy_context()
        return _helper_threads().submit(context.run, _run_here, coro).result()

    return node


def with_sync_twin(name: str, afunc: Callable[..., Coroutine[Any, Any, Any]]) -> Any:
    """Node `name` as a runnable with `afunc` for async drivers and its sync twin."""
    return node_runnable(name, _sync_twin(afunc), afunc)
