"""Thread leases: one run per thread, across every process sharing a database (SPEC §19).

A run takes its thread's lease before it starts and gives it back when it ends; while
it runs, it renews the lease every `ttl / 3` seconds. A second run on the thread, from
any process, finds the lease held and is refused at once. A lease left by a process
that died is taken over: at once when the holder ran on this machine and its process is
gone, otherwise once `ttl` seconds have passed without a renewal. A lease that was taken
over tells the new run that the previous one did not end cleanly, so it can repair the
thread first; a caller that only reads the thread hands that news on (`keep_marker`) to
the next run instead of swallowing it.

- sqlite: a row in `supervisor_graph_leases`, taken in a `BEGIN IMMEDIATE` transaction
  on a connection of its own.
- Postgres: the same row, taken with one `INSERT ... ON CONFLICT DO UPDATE ... WHERE`
  statement, timed by the database clock.
- in-memory storage or a checkpointer object: a lease in this process only.
"""

from __future__ import annotations

import asyncio
import enum
import os
import socket
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Protocol

__all__ = ["DEFAULT_LEASE_TTL", "Acquired", "Leases", "LocalLeases", "PostgresLeases", "SqliteLeases", "new_owner"]

DEFAULT_LEASE_TTL = 30.0
_HOST = socket.gethostname()


class Acquired(enum.Enum):
    """How a lease was taken."""

    FREE = "free"
    TAKEN_OVER = "taken_over"  # from a holder that died: its run did not end cleanly


def new_owner() -> str:
    """An owner id naming this host and process (so a dead local holder is recognised)."""
    return f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _holder_is_dead(owner: str | None) -> bool:
    if not owner:
        return False
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != _HOST or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class Leases(Protocol):
    ttl: float

    async def acquire(self, thread_id: str, owner: str) -> Acquired | None:
        """Take the lease, or None when a live run holds it."""

    async def renew(self, thread_id: str, owner: str) -> bool:
        """Extend a held lease; False when it was lost (taken over)."""

    async def release(self, thread_id: str, owner: str, *, keep_marker: bool = False) -> None:
        """Give the lease back (no-op when it is no longer ours). `keep_marker`: the thread
        still needs the repair a taken-over lease announced; the next taker is told so."""


class LocalLeases:
    """Leases within this process (in-memory storage, checkpointer objects): a crash
    takes the conversation with it, so there is nothing to take over."""

    def __init__(self, ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.ttl = ttl
        self._held: dict[str, str] = {}

    async def acquire(self, thread_id: str, owner: str) -> Acquired | None:
        if thread_id in self._held:
            return None
        self._held[thread_id] = owner
        return Acquired.FREE

    async def renew(self, thread_id: str, owner: str) -> bool:
        return self._held.get(thread_id) == owner

    async def release(self, thread_id: str, owner: str, *, keep_marker: bool = False) -> None:
        if self._held.get(thread_id) == owner:
            del self._held[thread_id]


_SQLITE_TABLE = """
CREATE TABLE IF NOT EXISTS supervisor_graph_leases (
    thread_id TEXT PRIMARY KEY,
    owner TEXT,
    expires_at REAL NOT NULL
)
"""


class SqliteLeases:
    """Lease rows in the sqlite file, on a connection of their own."""

    def __init__(self, conn: Any, ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.ttl = ttl
        self._conn = conn
        self._lock = asyncio.Lock()  # one transaction at a time on this connection

    @classmethod
    async def open(cls, path: str, stack: AsyncExitStack, ttl: float = DEFAULT_LEASE_TTL) -> SqliteLeases:
        import aiosqlite

        target = str(Path(path).expanduser()) if path != ":memory:" else path
        conn = await stack.enter_async_context(aiosqlite.connect(target, timeout=30.0, isolation_level=None))
        # a lease lost to a power cut is harmless (every run restarts), so skip the fsync
        await conn.execute("PRAGMA synchronous=NORMAL")
        await conn.execute(_SQLITE_TABLE)
        return cls(conn, ttl)

    async def acquire(self, thread_id: str, owner: str) -> Acquired | None:
        now = time.time()
        async with self._lock:
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                async with self._conn.execute(
                    "SELECT owner, expires_at FROM supervisor_graph_leases WHERE thread_id = ?", (thread_id,)
                ) as cursor:
                    row = await cursor.fetchone()
                if row is not None and row[0] is not None and row[1] > now and not _holder_is_dead(row[0]):
                    await self._conn.execute("ROLLBACK")
                    return None
                await self._conn.execute(
                    "INSERT OR REPLACE INTO supervisor_graph_leases (thread_id, owner, expires_at) VALUES (?, ?, ?)",
                    (thread_id, owner, now + self.ttl),
                )
                await self._conn.execute("COMMIT")
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
        return Acquired.FREE if row is None else Acquired.TAKEN_OVER

    async def renew(self, thread_id: str, owner: str) -> bool:
        async with self._lock:
            cursor = await self._conn.execute(
                "UPDATE supervisor_graph_leases SET expires_at = ? WHERE thread_id = ? AND owner = ?",
                (time.time() + self.ttl, thread_id, owner),
            )
            return bool(cursor.rowcount)

    async def release(self, thread_id: str, owner: str, *, keep_marker: bool = False) -> None:
        async with self._lock:
            if keep_marker:
                await self._conn.execute(
                    "UPDATE supervisor_graph_leases SET owner = NULL WHERE thread_id = ? AND owner = ?", (thread_id, owner)
                )
            else:
                await self._conn.execute(
                    "DELETE FROM supervisor_graph_leases WHERE thread_id = ? AND owner = ?", (thread_id, owner)
                )


_PG_TABLE = """
CREATE TABLE IF NOT EXISTS supervisor_graph_leases (
    thread_id TEXT PRIMARY KEY,
    owner TEXT,
    expires_at TIMESTAMPTZ NOT NULL
)
"""


class PostgresLeases:
    """Lease rows in the Postgres database, timed by its clock (hosts may disagree)."""

    def __init__(self, conn: Any, ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.ttl = ttl
        self._conn = conn
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, url: str, stack: AsyncExitStack, ttl: float = DEFAULT_LEASE_TTL) -> PostgresLeases:
        from psycopg import AsyncConnection

        conn = await stack.enter_async_context(await AsyncConnection.connect(url, autocommit=True, prepare_threshold=0))
        await conn.execute(_PG_TABLE)
        return cls(conn, ttl)

    async def acquire(self, thread_id: str, owner: str) -> Acquired | None:
        async with self._lock:
            held = await (
                await self._conn.execute(
                    "SELECT owner FROM supervisor_graph_leases WHERE thread_id = %s AND expires_at > now()", (thread_id,)
                )
            ).fetchone()
            # a dead local holder's row counts as expired
            expired_owner = held[0] if held is not None and held[0] and _holder_is_dead(held[0]) else ""
            row = await (
                await self._conn.execute(
                    """
                    INSERT INTO supervisor_graph_leases AS l (thread_id, owner, expires_at)
                    VALUES (%s, %s, now() + %s * interval '1 second')
                    ON CONFLICT (thread_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
                    WHERE l.owner IS NULL OR l.expires_at <= now() OR l.owner = EXCLUDED.owner OR l.owner = %s
                    RETURNING (xmax <> 0) AS replaced
                    """,
                    (thread_id, owner, self.ttl, expired_owner),
                )
            ).fetchone()
        if row is None:
            return None
        return Acquired.TAKEN_OVER if row[0] else Acquired.FREE

    async def renew(self, thread_id: str, owner: str) -> bool:
        async with self._lock:
            cursor = await self._conn.execute(
                "UPDATE supervisor_graph_leases SET expires_at = now() + %s * interval '1 second' "
                "WHERE thread_id = %s AND owner = %s",
                (self.ttl, thread_id, owner),
            )
            return bool(cursor.rowcount)

    async def release(self, thread_id: str, owner: str, *, keep_marker: bool = False) -> None:
        async with self._lock:
            if keep_marker:
                await self._conn.execute(
                    "UPDATE supervisor_graph_leases SET owner = NULL WHERE thread_id = %s AND owner = %s", (thread_id, owner)
                )
            else:
                await self._conn.execute(
                    "DELETE FROM supervisor_graph_leases WHERE thread_id = %s AND owner = %s", (thread_id, owner)
                )
