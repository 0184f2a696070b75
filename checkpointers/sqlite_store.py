"""The sqlite store (working memory, versions, background task records, the tool-call
journal): LangGraph's `AsyncSqliteStore`, made safe beside other writers of its file.

Its batches run in deferred transactions (`BEGIN`), so a batch that reads before it
writes fails at once with "database is locked" when another connection to the file (the
checkpointer, the thread leases, another process) committed in between: sqlite cannot
upgrade a read snapshot that is no longer the newest, and its busy timeout does not
apply. Several background tasks of one turn saving their records while the parent's run
checkpoints hit exactly that (issue 24). A failed batch is rolled back and run again
from the start: every operation of a batch is a read or an upsert, so running it again
is safe. A file still locked after `retry_for` seconds, a full disk or a disk I/O error
raises `StorageUnavailableError` (outages.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Iterable
from typing import Any

from langgraph.store.base import Op, Result
from langgraph.store.sqlite.aio import AsyncSqliteStore

from supervisor_graph.checkpointers.outages import unavailable

__all__ = ["SqliteStore"]

# how long a batch keeps trying before the error reaches the caller
RETRY_FOR = 30.0


def _contended(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


class SqliteStore(AsyncSqliteStore):
    """`AsyncSqliteStore` whose batches wait out other writers (module docstring)."""

    def __init__(self, conn: Any, *, retry_for: float = RETRY_FOR, **kwargs: Any) -> None:
        super().__init__(conn, **kwargs)
        self.retry_for = retry_for

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        batch = list(ops)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.retry_for
        delay = 0.005
        while True:
            try:
                return await super().abatch(batch)
            except sqlite3.OperationalError as exc:
                if not _contended(exc) or loop.time() >= deadline:
                    with contextlib.suppress(sqlite3.Error):  # the batch's own error is the one to tell
                        await self._roll_back()
                    error = unavailable(exc, "the sqlite database")
                    if error is None:
                        raise
                    raise error from exc
                await self._roll_back()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)

    async def _roll_back(self) -> None:
        # a failed COMMIT leaves the transaction open; the next batch's BEGIN would fail
        async with self.lock:
            if self.conn.in_transaction:
                await self.conn.rollback()
