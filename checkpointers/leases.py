"""Thread leases: one run per thread, across every process sharing a database (SPEC §19).

A run takes its thread's lease before it starts and gives it back when it ends; while
it runs, it renews the lease every `ttl / 3` seconds. A second run on the thread, from
any process, finds the lease held and is refused at once. A lease left by a process
that died is taken over: at once when the holder ran on this machine and its process is
gone, otherwise once `ttl` seconds have passed without a renewal.

The lease row also carries two facts about the thread between runs, so the next run
need not read the thread to learn them:
- `repair`: the previous run did not end cleanly (its process died), so the thread may
  hold tool calls without results; a holder that only read the thread hands this on.
- `waiting`: the last run paused on approvals (or suspended tools).
A thread with neither and no run has no row at all.

- sqlite: a row in `supervisor_graph_leases`, taken with one `INSERT ... ON CONFLICT DO
  UPDATE ... WHERE` statement (atomic on its own) on a connection of its own.
- Postgres: the same row and statement, timed by the database clock.
- in-memory storage or a checkpointer object: a lease in this process only.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "DEFAULT_LEASE_TTL",
    "Lease",
    "Leases",
    "LocalLeases",
    "PostgresLeases",
    "SqliteLeases",
    "new_owner",
]

DEFAULT_LEASE_TTL = 30.0
_HOST = socket.gethostname()


@dataclass(frozen=True, slots=True)
class Lease:
    """A lease just taken, and what the thread's row said about the previous run."""

    repair: bool = False  # the previous run's process died mid-run
    waiting: bool = False  # the previous run paused on approvals


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

    async def acquire(self, thread_id: str, owner: str) -> Lease | None:
        """Take the lease, or None when a live run holds it."""

    async def renew(self, thread_id: str, owner: str) -> bool:
        """Extend a held lease; False when it was lost (taken over)."""

    async def release(self, thread_id: str, owner: str, *, repair: bool = False, waiting: bool = False) -> None:
        """Give the lease back (no-op when it is no longer ours), saying whether the thread
        still owes a repair and whether approvals wait on it."""


class LocalLeases:
    """Leases within this process (in-memory storage, checkpointer objects): a crash
    takes the conversation with it, so nothing is ever taken over."""

    def __init__(self, ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.ttl = ttl
        self._held: dict[str, str] = {}
        self._waiting: set[str] = set()

    async def acquire(self, thread_id: str, owner: str) -> Lease | None:
        if thread_id in self._held:
            return None
        self._held[thread_id] = owner
        return Lease(waiting=thread_id in self._waiting)

    async def renew(self, thread_id: str, owner: str) -> bool:
        return self._held.get(thread_id) == owner

    async def release(self, thread_id: str, owner: str, *, repair: bool = False, waiting: bool = False) -> None:
        if self._held.get(thread_id) == owner:
            del self._held[thread_id]
            if waiting:
                self._waiting.add(thread_id)
            else:
                self._waiting.discard(thread_id)


_TABLE = """
CREATE TABLE IF NOT EXISTS supervisor_graph_leases (
    thread_id TEXT PRIMARY KEY,
    owner TEXT,
    expires_at {time} NOT NULL,
    repair BOOLEAN NOT NULL DEFAULT FALSE,
    waiting BOOLEAN NOT NULL DEFAULT FALSE
)
"""

# Take a free row, a row between runs (owner NULL) or an expired one; taking an expired
# one means its run died, so the thread owes a repair. `{p}` is the driver's placeholder,
# `{expires}` / `{now}` the driver's way to say a time (sqlite: parameters; Postgres: its clock).
_ACQUIRE = """
INSERT INTO supervisor_graph_leases AS l (thread_id, owner, expires_at) VALUES ({p}, {p}, {expires})
ON CONFLICT (thread_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at,
    repair = l.repair OR l.owner IS NOT NULL
WHERE l.owner IS NULL OR l.expires_at <= {now}
RETURNING repair, waiting
"""
_TAKE_FROM_DEAD = (
    "UPDATE supervisor_graph_leases SET owner = {p}, expires_at = {expires}, repair = TRUE "
    "WHERE thread_id = {p} AND owner = {p} RETURNING repair, waiting"
)
_RENEW = "UPDATE supervisor_graph_leases SET expires_at = {expires} WHERE thread_id = {p} AND owner = {p}"
_PARK = "UPDATE supervisor_graph_leases SET owner = NULL, repair = {p}, waiting = {p} WHERE thread_id = {p} AND owner = {p}"
_DELETE = "DELETE FROM supervisor_graph_leases WHERE thread_id = {p} AND owner = {p}"
_HOLDER = "SELECT owner FROM supervisor_graph_leases WHERE thread_id = {p}"


class _SqlLeases:
    """The lease statements over one connection of their own (sqlite or Postgres)."""

    placeholder = "?"
    expires = "?"  # a parameter: now + ttl (sqlite) / an interval from the database clock
    now = "?"

    def __init__(self, conn: Any, ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.ttl = ttl
        self._conn = conn
        self._lock = asyncio.Lock()  # one statement at a time on this connection

    def _sql(self, template: str) -> str:
        return template.format(p=self.placeholder, expires=self.expires, now=self.now, time="")

    def _times(self) -> tuple[Any, tuple[Any, ...]]:
        """The expiry parameter, and the parameters `{now}` takes."""
        now = time.time()
        return now + self.ttl, (now,)

    async def _one(self, template: str, params: tuple[Any, ...]) -> Any:
        cursor = await self._conn.execute(self._sql(template), params)
        return await cursor.fetchone()

    async def _count(self, template: str, params: tuple[Any, ...]) -> int:
        cursor = await self._conn.execute(self._sql(template), params)
        return int(cursor.rowcount or 0)

    async def acquire(self, thread_id: str, owner: str) -> Lease | None:
        expires, now = self._times()
        async with self._lock:
            row = await self._one(_ACQUIRE, (thread_id, owner, expires, *now))
            if row is None:  # held: unless by a process of this host that has died
                held = await self._one(_HOLDER, (thread_id,))
                if held is None or not _holder_is_dead(held[0]):
                    return None
                row = await self._one(_TAKE_FROM_DEAD, (owner, expires, thread_id, held[0]))
                if row is None:
                    return None
        return Lease(repair=bool(row[0]), waiting=bool(row[1]))

    async def renew(self, thread_id: str, owner: str) -> bool:
        expires, _ = self._times()
        async with self._lock:
            return bool(await self._count(_RENEW, (expires, thread_id, owner)))

    async def release(self, thread_id: str, owner: str, *, repair: bool = False, waiting: bool = False) -> None:
        async with self._lock:
            if repair or waiting:
                await self._count(_PARK, (repair, waiting, thread_id, owner))
            else:
                await self._count(_DELETE, (thread_id, owner))


class SqliteLeases(_SqlLeases):
    """Lease rows in the sqlite file."""

    @classmethod
    async def open(cls, path: str, stack: AsyncExitStack, ttl: float = DEFAULT_LEASE_TTL) -> SqliteLeases:
        import aiosqlite

        target = str(Path(path).expanduser()) if path != ":memory:" else path
        conn = await stack.enter_async_context(aiosqlite.connect(target, timeout=30.0, isolation_level=None))
        # a lease lost to a power cut is harmless (every run restarts), so skip the fsync
        await conn.execute("PRAGMA synchronous=NORMAL")
        await conn.execute(_TABLE.format(time="REAL"))
        return cls(conn, ttl)


class PostgresLeases(_SqlLeases):
    """Lease rows in the Postgres database, timed by its clock (hosts may disagree)."""

    placeholder = "%s"
    expires = "now() + %s * interval '1 second'"
    now = "now()"

    @classmethod
    async def open(cls, url: str, stack: AsyncExitStack, ttl: float = DEFAULT_LEASE_TTL) -> PostgresLeases:
        from psycopg import AsyncConnection

        conn = await stack.enter_async_context(await AsyncConnection.connect(url, autocommit=True, prepare_threshold=0))
        await conn.execute(_TABLE.format(time="TIMESTAMPTZ"))
        return cls(conn, ttl)

    def _times(self) -> tuple[Any, tuple[Any, ...]]:
        return self.ttl, ()
