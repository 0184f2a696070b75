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
- Postgres: the same row and statement, timed by the database clock (`PostgresLeases`,
  in `postgres.py` beside the connection pool it uses).
- in-memory storage or a checkpointer object: a lease in this process only.

Double texting (SPEC §29): a call that finds the thread busy may wait for it instead of
being refused. It joins the thread's queue (`join`; sqlite and Postgres: a row in
`supervisor_graph_lease_waiters`, kept alive by the waiter's looks), and looks (`claim`)
until its turn: the holder that releases the lease hands it straight to the first live
waiter (a stop request, `interrupt` or `rollback`, before plain `enqueue` waiters, each
kind in arrival order), so no third caller slips in between. A waiter with a stop
request names the current holder in its row; a holder learns of it through `watch`
(sqlite and Postgres: one query every `STOP_POLL` seconds per process while some run
holds a lease, for all its runs at once; in-process: at once).
"""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypeVar

from supervisor_graph.checkpointers.lease_queue import (
    HAND_OVER,
    LOST,
    NO_WAITER,
    STOP_POLL,
    WAIT_POLL,
    WAITERS,
    WAITERS_INDEX,
    SqlQueue,
)
from supervisor_graph.checkpointers.outages import unavailable

__all__ = [
    "DEFAULT_BUSY_TIMEOUT",
    "DEFAULT_LEASE_TTL",
    "LOST",
    "STOP_POLL",
    "WAIT_POLL",
    "Lease",
    "Leases",
    "LocalLeases",
    "SqliteLeases",
    "new_owner",
]

DEFAULT_LEASE_TTL = 30.0
# how long a sqlite statement waits for a file another connection holds locked (seconds)
DEFAULT_BUSY_TIMEOUT = 30.0
_HOST = socket.gethostname()
T = TypeVar("T")


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
        still owes a repair and whether approvals wait on it; with waiters queued, the
        first one gets it."""

    async def join(self, thread_id: str, owner: str, stop: str | None) -> int:
        """Queue `owner` for the thread (`stop`: "interrupt" or "rollback", asked of the
        run holding it, or None to wait for it to end); its place in the queue."""

    async def claim(self, thread_id: str, owner: str, place: int, stop: str | None) -> Lease | None:
        """The lease once it is `owner`'s turn (handed over, or free with `owner` first in
        the queue), the waiter then gone from the queue; otherwise None, the waiter kept
        and its stop request pointed at the current holder."""

    async def leave(self, thread_id: str, owner: str) -> None:
        """Leave the queue; a lease handed over meanwhile is given back."""

    def watch(self, thread_id: str, owner: str, on_stop: Callable[[str], None]) -> None:
        """Call `on_stop(kind)` when a waiter asks the holder `owner` to stop, or
        `on_stop(LOST)` when the lease database cannot be reached."""

    def unwatch(self, thread_id: str, owner: str) -> None:
        """Stop watching for `owner` (its lease is released)."""

    async def wait_change(self, thread_id: str) -> None:
        """Sleep until the thread's lease may have changed hands (at most a poll)."""


@dataclass(slots=True)
class _Waiter:
    owner: str
    place: int
    stop: str | None


class LocalLeases:
    """Leases within this process (in-memory storage, checkpointer objects): a crash
    takes the conversation with it, so nothing is ever taken over."""

    def __init__(self, ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.ttl = ttl
        self._held: dict[str, str] = {}
        self._waiting: set[str] = set()
        self._queues: dict[str, list[_Waiter]] = {}
        self._watchers: dict[str, Callable[[str], None]] = {}
        self._changed: dict[str, asyncio.Event] = {}
        self._places = 0

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
            queue = self._queues.get(thread_id)
            if queue:  # handed over: the waiter takes it at its next look
                self._held[thread_id] = queue[0].owner
            changed = self._changed.pop(thread_id, None)
            if changed is not None:
                changed.set()

    async def join(self, thread_id: str, owner: str, stop: str | None) -> int:
        self._places += 1
        queue = self._queues.setdefault(thread_id, [])
        queue.append(_Waiter(owner, self._places, stop))
        queue.sort(key=lambda w: (w.stop is None, w.place))
        return self._places

    async def claim(self, thread_id: str, owner: str, place: int, stop: str | None) -> Lease | None:
        queue = self._queues.get(thread_id) or []
        holder = self._held.get(thread_id)
        if holder == owner or (holder is None and queue and queue[0].owner == owner):
            self._held[thread_id] = owner
            self._drop(thread_id, owner)
            return Lease(waiting=thread_id in self._waiting)
        on_stop = self._watchers.get(holder) if stop is not None and holder is not None else None
        if on_stop is not None:
            on_stop(stop)  # type: ignore[arg-type]
        return None

    def _drop(self, thread_id: str, owner: str) -> None:
        queue = [w for w in self._queues.get(thread_id) or () if w.owner != owner]
        if queue:
            self._queues[thread_id] = queue
        else:
            self._queues.pop(thread_id, None)

    async def leave(self, thread_id: str, owner: str) -> None:
        self._drop(thread_id, owner)
        if self._held.get(thread_id) == owner:
            await self.release(thread_id, owner, waiting=thread_id in self._waiting)

    def watch(self, thread_id: str, owner: str, on_stop: Callable[[str], None]) -> None:
        self._watchers[owner] = on_stop

    def unwatch(self, thread_id: str, owner: str) -> None:
        self._watchers.pop(owner, None)

    async def wait_change(self, thread_id: str) -> None:
        changed = self._changed.setdefault(thread_id, asyncio.Event())
        try:
            await asyncio.wait_for(changed.wait(), WAIT_POLL)
        except TimeoutError:
            pass


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

class _SqlLeases(SqlQueue):
    """The lease statements over one connection of their own (sqlite or Postgres)."""

    placeholder = "?"
    expires = "?"  # a parameter: now + ttl (sqlite) / an interval from the database clock
    now = "?"

    def __init__(self, conn: Any, ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.ttl = ttl
        self._conn = conn
        self._lock: AbstractAsyncContextManager[Any] = asyncio.Lock()  # one statement at a time on this connection
        self._watchers: dict[str, Callable[[str], None]] = {}
        self._poller: asyncio.Task[None] | None = None

    def _sql(self, template: str) -> str:
        return template.format(p=self.placeholder, expires=self.expires, now=self.now, time="")

    def _times(self, seconds: float | None = None) -> tuple[Any, tuple[Any, ...]]:
        """The expiry parameter (`seconds`, default the ttl, from now), and the parameters
        `{now}` takes."""
        now = time.time()
        return now + (self.ttl if seconds is None else seconds), (now,)

    async def _one(self, template: str, params: tuple[Any, ...]) -> Any:
        cursor = await self._conn.execute(self._sql(template), params)
        return await cursor.fetchone()

    async def _count(self, template: str, params: tuple[Any, ...]) -> int:
        cursor = await self._conn.execute(self._sql(template), params)
        return int(cursor.rowcount or 0)

    async def _all(self, template: str, params: tuple[Any, ...]) -> list[Any]:
        cursor = await self._conn.execute(self._sql(template), params)
        return list(await cursor.fetchall())

    async def acquire(self, thread_id: str, owner: str) -> Lease | None:
        async with self._lock:
            return await self._acquire(thread_id, owner)

    async def _acquire(self, thread_id: str, owner: str) -> Lease | None:
        expires, now = self._times()
        row = await self._one(_ACQUIRE, (thread_id, owner, expires, *now))
        if row is None:  # held: unless by a process of this host that has died
            held = await self._one(_HOLDER, (thread_id,))
            if held is None or not _holder_is_dead(held[0]):
                return None
            row = await self._one(_TAKE_FROM_DEAD, (owner, expires, thread_id, held[0]))
            if row is None:
                return None
        return Lease(repair=bool(row[0]), waiting=bool(row[1]))

    def _lease(self, repair: bool, waiting: bool) -> Lease:
        return Lease(repair=repair, waiting=waiting)

    def _dead(self, owner: str) -> bool:
        return _holder_is_dead(owner)

    async def renew(self, thread_id: str, owner: str) -> bool:
        expires, _ = self._times()
        async with self._lock:
            return bool(await self._count(_RENEW, (expires, thread_id, owner)))

    async def release(self, thread_id: str, owner: str, *, repair: bool = False, waiting: bool = False) -> None:
        _, now = self._times()
        async with self._lock:
            if repair or waiting:
                done = await self._count(_PARK + NO_WAITER, (repair, waiting, thread_id, owner, thread_id, *now))
            else:
                done = await self._count(_DELETE + NO_WAITER, (thread_id, owner, thread_id, *now))
            if done:
                return
            # a waiter is queued (or the lease is no longer ours: then nothing below matches)
            head = await self._head(thread_id)
            if head is not None:
                expires, _ = self._times()
                await self._count(HAND_OVER, (head[1], expires, repair, waiting, thread_id, owner))
            elif repair or waiting:
                await self._count(_PARK, (repair, waiting, thread_id, owner))
            else:
                await self._count(_DELETE, (thread_id, owner))

class SqliteLeases(_SqlLeases):
    """Lease rows in the sqlite file, written from the event loop's own thread.

    A lease statement is one tiny write (tens of microseconds); handing it to a
    connection thread, as aiosqlite does, cost a run ~0.3 ms of CPU for its acquire and
    as much for its release (measured, issue 41). The loop never blocks on the file: the
    connection does not wait for a lock (`timeout=0`), a busy file is tried again after
    an asyncio sleep (`busy_timeout` seconds in all, as the other connections wait), and it never
    checkpoints the WAL (whose fsync the checkpoint connection's own thread does)."""

    busy_timeout = DEFAULT_BUSY_TIMEOUT

    @classmethod
    async def open(
        cls, path: str, stack: AsyncExitStack, ttl: float = DEFAULT_LEASE_TTL, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    ) -> SqliteLeases:
        target = str(Path(path).expanduser()) if path != ":memory:" else path
        conn = sqlite3.connect(target, timeout=0, isolation_level=None, check_same_thread=False)
        stack.callback(conn.close)
        leases = cls(conn, ttl)
        leases.busy_timeout = busy_timeout
        stack.callback(leases.stop_polling)
        # a lease lost to a power cut is harmless (every run restarts), so skip the fsync
        for statement in (
            "PRAGMA synchronous=NORMAL",
            "PRAGMA wal_autocheckpoint=0",
            _TABLE.format(time="REAL"),
            WAITERS.format(time="REAL", serial="INTEGER"),
            WAITERS_INDEX,
        ):
            await leases._retry(partial(conn.execute, statement))
        return leases

    async def _retry(self, statement: Callable[[], T]) -> T:
        """`statement()`, tried again while another connection holds the file's lock
        (`busy_timeout` seconds in all); `StorageUnavailableError` when the file stays
        locked, or the disk is full or failing."""
        delay, deadline = 0.0005, time.monotonic() + self.busy_timeout
        while True:
            try:
                return statement()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    error = unavailable(exc, "the sqlite database")
                    if error is None:
                        raise
                    raise error from exc
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)

    # fetchall: a statement run to its end commits (RETURNING rows are read, not left open)
    async def _one(self, template: str, params: tuple[Any, ...]) -> Any:
        sql = self._sql(template)
        rows = await self._retry(lambda: self._conn.execute(sql, params).fetchall())
        return rows[0] if rows else None

    async def _count(self, template: str, params: tuple[Any, ...]) -> int:
        sql = self._sql(template)
        return await self._retry(lambda: int(self._conn.execute(sql, params).rowcount or 0))

    async def _all(self, template: str, params: tuple[Any, ...]) -> list[Any]:
        sql = self._sql(template)
        return await self._retry(lambda: self._conn.execute(sql, params).fetchall())


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    return getattr(exc, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in str(exc)
