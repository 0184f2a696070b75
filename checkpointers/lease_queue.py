"""The queue of callers waiting for a busy thread, in the lease database (SPEC §29,
double texting; the leases themselves: `leases.py`).

A waiter is a row of `supervisor_graph_lease_waiters`, kept alive by its looks (`claim`,
every `WAIT_POLL` seconds) and gone `WAITER_TTL` seconds after its last one (at once when
its process died on this host). Callers with a stop request (`interrupt`, `rollback`)
come before plain waiters (`enqueue`), each kind in arrival order. A releasing holder
hands the lease straight to the first live waiter (`HAND_OVER`; the release statement
itself says whether there is one: `NO_WAITER`). A waiter with a stop request names the
current holder in its row (`stops`); each process looks for requests naming its holders
with one query every `STOP_POLL` seconds while it holds some lease (`watch`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from supervisor_graph.checkpointers.outages import StorageUnavailableError

__all__ = ["HAND_OVER", "LOST", "NO_WAITER", "STOP_POLL", "WAITERS", "WAITERS_INDEX", "WAITER_TTL", "WAIT_POLL", "SqlQueue"]

log = logging.getLogger(__name__)

# seconds between a holder process's looks for stop requests, and between a waiter's
# looks for its turn; a waiter's row outlives its last look by WAITER_TTL seconds
STOP_POLL = 0.2
WAIT_POLL = 0.1
WAITER_TTL = 5.0
# what `watch`'s callback hears when the lease database became unreachable
LOST = "lost"

# The queue of callers waiting for a busy thread (double texting). `stops`: the holder a
# waiter with a stop request asks to stop. Releases consult it in the same statement
# (no extra round trip): with a live waiter, nothing is deleted and the lease is handed over.
WAITERS = """
CREATE TABLE IF NOT EXISTS supervisor_graph_lease_waiters (
    place {serial} PRIMARY KEY,
    thread_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    stop TEXT,
    stops TEXT,
    expires_at {time} NOT NULL
)
"""
WAITERS_INDEX = (
    "CREATE INDEX IF NOT EXISTS supervisor_graph_lease_waiters_thread ON supervisor_graph_lease_waiters (thread_id)"
)
NO_WAITER = (
    " AND NOT EXISTS (SELECT 1 FROM supervisor_graph_lease_waiters w WHERE w.thread_id = {p} AND w.expires_at > {now})"
)
_JOIN = (
    "INSERT INTO supervisor_graph_lease_waiters (thread_id, owner, stop, expires_at) VALUES ({p}, {p}, {p}, {expires}) "
    "RETURNING place"
)
# A waiter's look: its row kept alive (and pointed at the current holder), or put back in
# its place when it lapsed and went (its loop was held up). One upsert, not an UPDATE then
# an INSERT: with statements of one process running side by side (Postgres' pool), two
# statements never race to put the same place back (a UniqueViolation at run start).
_KEEP_WAITING = (
    "INSERT INTO supervisor_graph_lease_waiters (place, thread_id, owner, stop, stops, expires_at) "
    "VALUES ({p}, {p}, {p}, {p}, {p}, {expires}) "
    "ON CONFLICT (place) DO UPDATE SET expires_at = EXCLUDED.expires_at, stops = EXCLUDED.stops"
)
_QUEUE = (
    "SELECT place, owner FROM supervisor_graph_lease_waiters WHERE thread_id = {p} AND expires_at > {now} "
    "ORDER BY (stop IS NULL), place"
)
_ROW = "SELECT owner, repair, waiting FROM supervisor_graph_leases WHERE thread_id = {p}"
_LEAVE = "DELETE FROM supervisor_graph_lease_waiters WHERE thread_id = {p} AND owner = {p}"
_DROP_WAITER = "DELETE FROM supervisor_graph_lease_waiters WHERE place = {p}"
HAND_OVER = (
    "UPDATE supervisor_graph_leases SET owner = {p}, expires_at = {expires}, repair = {p}, waiting = {p} "
    "WHERE thread_id = {p} AND owner = {p}"
)
_STOPS = "SELECT stops, stop FROM supervisor_graph_lease_waiters WHERE stops IS NOT NULL AND expires_at > {now}"


class SqlQueue:
    """The queue's part of the SQL leases (`leases._SqlLeases`): it provides the
    connection, its lock, the statement helpers and `_acquire`."""

    _conn: Any
    _lock: AbstractAsyncContextManager[Any]
    _watchers: dict[str, Callable[[str], None]]
    _poller: asyncio.Task[None] | None

    def _sql(self, template: str) -> str:
        raise NotImplementedError

    def _times(self, seconds: float | None = None) -> tuple[Any, tuple[Any, ...]]:
        raise NotImplementedError

    async def _one(self, template: str, params: tuple[Any, ...]) -> Any:
        raise NotImplementedError

    async def _count(self, template: str, params: tuple[Any, ...]) -> int:
        raise NotImplementedError

    async def _all(self, template: str, params: tuple[Any, ...]) -> list[Any]:
        raise NotImplementedError

    async def _acquire(self, thread_id: str, owner: str) -> Any:
        raise NotImplementedError

    async def release(self, thread_id: str, owner: str, *, repair: bool = False, waiting: bool = False) -> None:
        raise NotImplementedError

    def _lease(self, repair: bool, waiting: bool) -> Any:
        raise NotImplementedError

    def _dead(self, owner: str) -> bool:
        raise NotImplementedError

    async def _head(self, thread_id: str) -> tuple[int, str] | None:
        """The first live waiter (place, owner); waiters whose process died on this host
        leave the queue here."""
        _, now = self._times()
        for place, owner in await self._all(_QUEUE, (thread_id, *now)):
            if not self._dead(owner):
                return int(place), str(owner)
            await self._count(_DROP_WAITER, (place,))
        return None

    async def join(self, thread_id: str, owner: str, stop: str | None) -> int:
        expires, _ = self._times(WAITER_TTL)
        async with self._lock:
            row = await self._one(_JOIN, (thread_id, owner, stop, expires))
        return int(row[0])

    async def claim(self, thread_id: str, owner: str, place: int, stop: str | None) -> Any:
        async with self._lock:
            row = await self._one(_ROW, (thread_id,))
            got: Any = None
            if row is not None and row[0] == owner:  # handed over by the last holder
                got = self._lease(bool(row[1]), bool(row[2]))
            else:
                head = await self._head(thread_id)
                if head is not None and head[0] == place:
                    got = await self._acquire(thread_id, owner)
            if got is not None:
                await self._count(_LEAVE, (thread_id, owner))
                return got
            stops = row[0] if stop is not None and row is not None else None
            expires, _ = self._times(WAITER_TTL)
            await self._count(_KEEP_WAITING, (place, thread_id, owner, stop, stops, expires))
            return None

    async def leave(self, thread_id: str, owner: str) -> None:
        async with self._lock:
            await self._count(_LEAVE, (thread_id, owner))
            row = await self._one(_ROW, (thread_id,))
        if row is not None and row[0] == owner:  # handed over meanwhile: pass it on
            await self.release(thread_id, owner, repair=bool(row[1]), waiting=bool(row[2]))

    def watch(self, thread_id: str, owner: str, on_stop: Callable[[str], None]) -> None:
        self._watchers[owner] = on_stop
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll_stops())

    def unwatch(self, thread_id: str, owner: str) -> None:
        # the poller is left to end at its next wake-up with nobody to watch: runs one
        # after another would otherwise start and cancel a task each
        self._watchers.pop(owner, None)

    async def _poll_stops(self) -> None:
        """One query per `STOP_POLL` for every run this process holds a lease for. The
        same query notices a database that went away: the runs holding leases then hear
        `LOST` (they can save nothing more, so they end now, not at their next write)."""
        while self._watchers:
            await asyncio.sleep(STOP_POLL)
            if not self._watchers:
                return
            _, now = self._times()
            try:
                async with self._lock:
                    rows = await self._all(_STOPS, now)
            except StorageUnavailableError as exc:
                if exc.reason == "unreachable":  # not "timeout": a busy pool still serves
                    holders = list(self._watchers.values())
                    log.warning("the lease database is unreachable: ending the %d run(s) holding a lease", len(holders))
                    for tell in holders:
                        tell(LOST)
                continue
            except Exception:  # noqa: BLE001 - looked for again at the next poll
                continue
            for stops, stop in rows:
                on_stop = self._watchers.get(stops)
                if on_stop is not None:
                    on_stop(stop)

    async def wait_change(self, thread_id: str) -> None:
        await asyncio.sleep(WAIT_POLL)

    def stop_polling(self) -> None:
        """Cancel the poller (the connection is closing)."""
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None
