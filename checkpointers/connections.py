"""sqlite connections (aiosqlite) that never keep a process alive.

Since aiosqlite 0.22 each connection runs its jobs on a non-daemon thread that ends only
when the connection is closed, and Python joins non-daemon threads before it runs
`atexit`. A program that never closes its `Memory`, and whose event loop is closed
without `shutdown_asyncgens()` (which is what closes a `Memory` left open: a loop made
with `new_event_loop()`, a test runner's or a framework's loop), finished its work and
then never exited. The project's own CI hung that way for 90 minutes after its suite had
passed.

Here the connection's thread is a daemon, so it never blocks the exit, and an `atexit`
hook closes the connections still open, each with `close()`, which queues behind the
jobs already given to the connection: a commit that was queued still reaches the file.
What was never queued is lost as in any crash; sqlite's WAL keeps the file whole.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import weakref
from typing import Any

import aiosqlite

__all__ = ["close_open_connections", "connect", "worker_thread"]

log = logging.getLogger(__name__)

# How long the exit waits for open connections to finish their queued jobs.
CLOSE_AT_EXIT_S = 10.0

_open: weakref.WeakSet[aiosqlite.Connection] = weakref.WeakSet()


def connect(database: str, **kwargs: Any) -> aiosqlite.Connection:
    """`aiosqlite.connect(database, **kwargs)`, whose thread does not keep the process
    alive and which is closed at exit if nobody closed it."""
    conn = aiosqlite.connect(database, **kwargs)
    worker_thread(conn).daemon = True
    _open.add(conn)
    return conn


def worker_thread(conn: aiosqlite.Connection) -> Any:
    """The thread that runs `conn`'s jobs (aiosqlite < 0.22: the connection is itself the
    thread, a daemon there already)."""
    return getattr(conn, "_thread", conn)


async def _close(conns: list[aiosqlite.Connection]) -> None:
    results = await asyncio.wait_for(
        asyncio.gather(*(conn.close() for conn in conns), return_exceptions=True), CLOSE_AT_EXIT_S
    )
    for result in results:
        if isinstance(result, BaseException):
            log.debug("closing a sqlite connection at exit failed: %r", result)


@atexit.register
def close_open_connections() -> None:
    """Close the connections nobody closed (at exit; callable any time no loop runs in
    this thread)."""
    conns = [conn for conn in list(_open) if worker_thread(conn).is_alive()]
    if not conns:
        return
    try:
        # `close()` works from any loop: aiosqlite answers each job on the loop that asked.
        asyncio.run(_close(conns))
    except Exception as exc:  # noqa: BLE001 - at exit, nothing is left to tell
        log.debug("closing %d sqlite connection(s) at exit failed: %r", len(conns), exc)
