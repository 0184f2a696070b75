"""A run's hold on its thread: taken before the run starts, renewed while it runs, given
back when it ends (SPEC §19, "one run per thread"). The leases themselves live in the
memory's database (`checkpointers/leases.py`), so they hold across processes.

A caller that finds the thread busy may wait its turn in the thread's queue instead
(`wait_turn`, SPEC §29 double texting), asking the run that holds it to stop; a run's
lease taken with `stoppable=True` hears such a request (`stop`, `stopped`).

A run whose lease database went away (the renewal failed, or the process's poll of stop
requests found the database unreachable) cannot save anything more: its lease records
the `StorageUnavailableError` (`failure`) and wakes the run as a stop request would, and
the run ends with that error instead of waiting for its next write."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from supervisor_graph.checkpointers.fence import LeaseLapsedError
from supervisor_graph.checkpointers.leases import LOST, Lease, Leases, new_owner
from supervisor_graph.declaration.errors import StorageUnavailableError, ThreadBusyError

__all__ = ["ThreadLease"]

log = logging.getLogger("supervisor_graph")

# A write starting later than this share of the ttl after the last renewal was sent checks
# with the database first: the rest of the ttl is the margin for the write itself.
HELD_SHARE = 0.8


class ThreadLease:
    """One run's lease on one thread."""

    __slots__ = (
        "leases",
        "thread_id",
        "owner",
        "acquired",
        "_heartbeat",
        "_first_beat",
        "stop",
        "stopped",
        "waker",
        "failure",
        "held_until",
        "owes_repair",
    )

    def __init__(self, leases: Leases, thread_id: str, *, stoppable: bool = False) -> None:
        self.leases = leases
        self.thread_id = thread_id
        self.owner = new_owner()
        self.acquired: Lease | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        # a timer until the first renewal: most runs end before it, and a timer costs a
        # run far less than a task started and cancelled
        self._first_beat: asyncio.TimerHandle | None = None
        # what a waiting caller asked of this run ("interrupt" / "rollback"), once it has
        self.stop: str | None = None
        self.stopped: asyncio.Event | None = asyncio.Event() if stoppable else None
        # called at once when a stop is asked (`Run.until_aborted` cancels the run with it)
        self.waker: Callable[[], None] | None = None
        # the lease database went away while the run held the thread (module docstring)
        self.failure: StorageUnavailableError | None = None
        # the run ended without closing its tool calls (its repair could not be saved): the
        # release flags the thread, so its next run closes them first
        self.owes_repair = False
        # monotonic time until which the lease is surely this run's: the saver asks before
        # each write (checkpointers/fence.py)
        self.held_until = 0.0

    async def acquire(self) -> Lease:
        """Take the thread, or raise `ThreadBusyError` naming it."""
        sent = time.monotonic()
        got = await self.leases.acquire(self.thread_id, self.owner)
        if got is None:
            raise ThreadBusyError(
                f"thread {self.thread_id!r} already has a run in progress (in this or another process); "
                "wait for it or use another thread"
            )
        self._hold(got, sent)
        return got

    async def wait_turn(self, stop: str | None, abort: Any = None) -> Lease:
        """Queue for the busy thread and take it when its turn comes (`stop`: "interrupt"
        or "rollback", asked of the run holding it meanwhile; None: wait for it to end).
        `abort` (an event) set while waiting leaves the queue with `ThreadBusyError`."""
        place = await self.leases.join(self.thread_id, self.owner, stop)
        try:
            while True:
                sent = time.monotonic()
                got = await self.leases.claim(self.thread_id, self.owner, place, stop)
                if got is not None:
                    self._hold(got, sent)
                    return got
                if abort is not None and abort.is_set():
                    raise ThreadBusyError(
                        f"the call was aborted while it waited for thread {self.thread_id!r}; nothing ran"
                    )
                await self.leases.wait_change(self.thread_id)
        except BaseException:
            if self.acquired is None:
                await asyncio.shield(self.leases.leave(self.thread_id, self.owner))
            raise

    def _hold(self, got: Lease, sent: float) -> None:
        self.acquired = got
        self.held_until = sent + self.leases.ttl * HELD_SHARE
        self._first_beat = asyncio.get_running_loop().call_later(self.leases.ttl / 3, self._beat)
        if self.stopped is not None:
            self.leases.watch(self.thread_id, self.owner, self._on_stop)

    def _on_stop(self, kind: str) -> None:
        if kind == LOST:
            self._lose(StorageUnavailableError("the memory's database became unreachable while the run held its thread"))
            return
        if self.stop != "rollback":  # a rollback asked for is never weakened to an interrupt
            self.stop = kind
        assert self.stopped is not None
        self.stopped.set()
        if self.waker is not None:
            self.waker()

    def _lose(self, error: StorageUnavailableError) -> None:
        """End the run: its lease (and everything it would save) is out of reach."""
        if self.failure is not None or self.acquired is None:
            return
        self.failure = error
        if self.stopped is not None:
            self.stopped.set()
        if self.waker is not None:
            self.waker()

    def _beat(self) -> None:
        self._first_beat = None
        self._heartbeat = asyncio.ensure_future(self._renew())

    async def _renew(self) -> None:
        busy_once = False  # a pool with no connection free in time: tried again next period
        while True:
            try:
                sent = time.monotonic()
                if not await self.leases.renew(self.thread_id, self.owner):
                    # the process was held up past the ttl: another run has the thread, and
                    # this one must save nothing more (checkpointers/fence.py)
                    log.warning("the lease on thread %r was taken over while this run held it; ending the run", self.thread_id)
                    self._lose(LeaseLapsedError(self.thread_id))
                    return
                self.held_until = sent + self.leases.ttl * HELD_SHARE
                busy_once = False
            except StorageUnavailableError as exc:
                if exc.reason == "timeout" and not busy_once:
                    busy_once = True
                    log.warning("renewing the lease on thread %r failed: %s; trying again", self.thread_id, exc)
                    await asyncio.sleep(self.leases.ttl / 3)
                    continue
                # unrenewed, the lease lapses and another run may take the thread: stop here
                log.warning("renewing the lease on thread %r failed: %s; ending the run", self.thread_id, exc)
                self._lose(exc)
                return
            except Exception as exc:  # noqa: BLE001 - a missed renewal is retried next period
                log.warning("renewing the lease on thread %r failed: %s", self.thread_id, type(exc).__name__)
            await asyncio.sleep(self.leases.ttl / 3)

    async def ensure_held(self) -> None:
        """Before a write, once `held_until` has passed (the renewals are late: the
        process was held up): renew now, or raise `LeaseLapsedError` when another run
        took the thread meanwhile. A lease already given back is not checked."""
        if self.acquired is None:
            return
        if self.failure is not None:
            raise self.failure
        sent = time.monotonic()
        if await self.leases.renew(self.thread_id, self.owner):
            self.held_until = sent + self.leases.ttl * HELD_SHARE
            return
        error = LeaseLapsedError(self.thread_id)
        log.warning("the lease on thread %r was taken over while this run held it; its write is refused", self.thread_id)
        self._lose(error)
        raise error

    async def release(self, *, ran: bool = True, waiting: bool | None = None) -> None:
        """Give the thread back. `ran=False`: this holder only read the thread, so a repair
        the lease announced is still owed to the next run. `waiting`: the run ended paused
        on approvals (None: as it was when the lease was taken). A database that cannot
        be reached does not fail the release: it is retried in the background."""
        acquired = self.acquired
        if acquired is None:
            return
        self.acquired = None
        if self.stopped is not None:
            self.leases.unwatch(self.thread_id, self.owner)
        if self._first_beat is not None:
            self._first_beat.cancel()
            self._first_beat = None
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
        repair = self.owes_repair or (not ran and acquired.repair)
        waiting = acquired.waiting if waiting is None else waiting
        try:
            await self.leases.release(self.thread_id, self.owner, repair=repair, waiting=waiting)
        except StorageUnavailableError as exc:
            # Not an error of the caller's (its run, or its write, is over): given back as
            # soon as the database is back, so the thread's next run need not wait for the
            # lease to lapse; flagged for repair, as the run may have ended before its tool
            # calls were answered (SPEC §19).
            log.warning("thread %r could not be given back now (%s); retried in the background", self.thread_id, exc)
            task = asyncio.ensure_future(self._release_later(waiting))
            _RELEASING.add(task)
            task.add_done_callback(_RELEASING.discard)

    async def _release_later(self, waiting: bool) -> None:
        """Retry a release the database refused, every `RELEASE_RETRY` seconds until the
        lease would have lapsed anyway (the next run then takes it over, repair included)."""
        deadline = asyncio.get_running_loop().time() + self.leases.ttl
        while asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(RELEASE_RETRY)
            try:
                await self.leases.release(self.thread_id, self.owner, repair=True, waiting=waiting)
                log.info("the lease on thread %r was given back once the database was back", self.thread_id)
                return
            except StorageUnavailableError:
                continue
            except Exception as exc:  # noqa: BLE001 - the lease lapses on its own
                log.warning("giving back the lease on thread %r failed: %s", self.thread_id, type(exc).__name__)
                return


# seconds between two tries to give back a lease the database refused
RELEASE_RETRY = 0.5
# releases retried in the background (kept here so they are not garbage-collected)
_RELEASING: set[asyncio.Task[None]] = set()
