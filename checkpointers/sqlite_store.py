"""The sqlite store (working memory, versions, background task records, the tool-call
journal): LangGraph's `AsyncSqliteStore`, made safe beside other writers of its file.

Its batches run in deferred transactions (`BEGIN`), so a batch that reads before it
writes fails at once with "database is locked" when another connection to the file (the
checkpointer, the thread leases, another process) committed in between: sqlite cannot
upgrade a read snapshot that is no longer the newest, and its busy timeout does not
apply. Several background tasks of one turn saving their records while the parent's run
checkpoints hit exactly that (issue 24). A failed batch is rolled back and run again
from the start: every operation of a batch is a read or an upsert, so running it again
is safe.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable

from langgraph.store.base import Op, Result
from langgraph.store.sqlite.aio import AsyncSqliteStore

__all__ = ["SqliteStore"]

# how long a batch keeps trying before the error reaches the caller
RETRY_FOR = 30.0


def _contended(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


class SqliteStore(AsyncSqliteStore):
    """`AsyncSqliteStore` whose batches wait out other writers (module docstring)."""

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        batch = list(ops)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RETRY_FOR
        delay = 0.005
        while True:
            try:
                return await super().abatch(batch)
            except sqlite3.OperationalError as exc:
                if not _contended(exc) or loop.time() >= deadline:
                    raise
                await self._roll_back()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)

    async def _roll_back(self) -> None:
        # a failed COMMIT leaves the transaction open; the next batch's BEGIN would fail
        async with self.lock:
            if self.conn.in_transaction:
                await self.conn.rollback()
