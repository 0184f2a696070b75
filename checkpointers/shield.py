"""Storage statements that a cancelled caller lets finish (issue 46).

A run's task is cancelled when its client goes away (the event stream closed mid-run),
when a double-texting waiter stops it, or when a timeout fires. If that cancellation
lands inside a psycopg statement, psycopg sends the server a cancel request and waits
for the statement to end; a second cancellation meanwhile makes it close the connection
("query cancellation interrupted (CancelledError): closing connection"), and the pool
then takes that for the database going away. Worse, one landing while a pipeline
(LangGraph's `AsyncPostgresSaver.aput` / `aput_writes`, the store's batches) sends its
Sync leaves the connection in libpq's pipeline mode with the Sync unsent or unread:
psycopg forgets the pipeline, the pool sees an idle connection and lends it again, and
every later statement on it joins one implicit transaction that is never committed. Its
row locks (a lease row) then block every other connection's statement on that row: the
server hangs.

So a pooled statement runs in a task of its own: a cancelled caller waits for it to end
(at most `SHIELD_LIMIT` seconds), and only then raises its `CancelledError`. The
connection goes back to the pool idle, and the statements of a cancelled run are all
done (or all undone) before its cancellation finishes, so the next run on the thread
(which takes the lease the cancelled run releases afterwards) never races them.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["SHIELD_LIMIT", "finish_before_cancel", "shielding"]

log = logging.getLogger(__name__)

T = TypeVar("T")
C = TypeVar("C", bound=type)

# seconds a cancelled caller waits for its statement; a statement that takes longer
# (blocked on a lock, a database that stopped answering) goes on in the background and
# gives its connection back when it ends
SHIELD_LIMIT = 30.0


def _undo(undo: Callable[[Any], Awaitable[Any]], task: asyncio.Future[Any]) -> None:
    if task.cancelled() or task.exception() is not None:
        return
    undoing = asyncio.ensure_future(undo(task.result()))
    _UNDOING.add(undoing)
    undoing.add_done_callback(_UNDOING.discard)
    undoing.add_done_callback(_retrieve)


# undos in flight (kept here so they are not garbage-collected)
_UNDOING: set[asyncio.Future[Any]] = set()


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: the caller is gone, nobody else will read it


async def finish_before_cancel(work: Awaitable[T], undo: Callable[[T], Awaitable[Any]] | None = None) -> T:
    """`await work`, run as a task of its own that a cancellation of the caller does not
    cancel: the caller then waits for it (up to `SHIELD_LIMIT` seconds, however often it
    is cancelled meanwhile) and raises `CancelledError` once it is done. `undo(result)`
    then takes back what the finished work got that its cancelled caller will never
    know of (a lease taken)."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if undo is not None:
            task.add_done_callback(functools.partial(_undo, undo))
        task.add_done_callback(_retrieve)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SHIELD_LIMIT
        while not task.done():
            left = deadline - loop.time()
            if left <= 0:
                log.warning("a cancelled storage statement still runs after %.0f s; left to finish on its own", SHIELD_LIMIT)
                break
            try:
                await asyncio.wait((task,), timeout=left)
            except asyncio.CancelledError:
                continue  # cancelled again: still waiting for the statement
        raise


def _coroutine(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        return await finish_before_cancel(fn(*args, **kwargs))

    return call


def _generator(fn: Callable[..., Any]) -> Callable[..., Any]:
    """An async generator read to its end in a task of its own, then its items given:
    its connection is never held across the caller's iterations (a caller that stops
    early or is cancelled would otherwise hold the checkout until the generator is
    collected, its cursor mid-read)."""

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async def read() -> list[Any]:
            return [item async for item in fn(*args, **kwargs)]

        for item in await finish_before_cancel(read()):
            yield item

    return call


def shielding(cls: C, methods: tuple[str, ...]) -> C:
    """A subclass of `cls` whose `methods` (coroutines or async generators) run as
    `finish_before_cancel` says."""
    wrapped: dict[str, Any] = {}
    for name in methods:
        fn = getattr(cls, name, None)
        if inspect.isasyncgenfunction(fn):
            wrapped[name] = _generator(fn)  # type: ignore[arg-type]
        elif inspect.iscoroutinefunction(fn):
            wrapped[name] = _coroutine(fn)  # type: ignore[arg-type]
    return type(cls.__name__, (cls,), {"__module__": cls.__module__, **wrapped})  # type: ignore[return-value]
