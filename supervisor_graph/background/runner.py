"""The background tasks running in this process: their asyncio tasks, the wake-ups that
tell a task a control request (cancel / update) was stored for it, and which parent
threads an until-idle stream watches. A second process has its own; the store's records
and requests and the task leases are what processes share."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

__all__ = ["Runner", "runner"]


class Runner:
    """This process's background tasks, and wake-ups for those waiting on a thread."""

    def __init__(self) -> None:
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self._events: dict[str, asyncio.Event] = {}
        # threads whose outcomes an until-idle stream answers itself (count of streams)
        self.watched: dict[str, int] = {}
        # threads with an answering run scheduled (one at a time per thread)
        self.answering: set[str] = set()
        # watched threads with an outcome left to their until-idle stream since it last looked
        self.deferred: set[str] = set()
        # tasks whose outcome an until-idle stream reported and answered while the task's
        # coroutine was still finishing (giving back its lease): its own call to have the
        # outcome answered is then spent, and must not take the thread after the stream
        self.answered: set[str] = set()
        # task id -> set when a control request was stored for the task (it reads it at once
        # instead of at its next poll of the store)
        self._wakeups: dict[str, asyncio.Event] = {}

    def live(self, task_id: str) -> bool:
        task = self.tasks.get(task_id)
        return task is not None and not task.done()

    def start(self, task_id: str, work: Coroutine[Any, Any, None]) -> bool:
        if self.live(task_id):
            work.close()
            return False
        task = asyncio.ensure_future(work)
        self.tasks[task_id] = task
        task.add_done_callback(lambda _: self.tasks.pop(task_id, None) if self.tasks.get(task_id) is task else None)
        return True

    def wakeup(self, task_id: str) -> asyncio.Event:
        """The event a running task waits on between polls of its stored requests."""
        event = self._wakeups.get(task_id)
        if event is None:
            event = self._wakeups[task_id] = asyncio.Event()
        return event

    def wake(self, task_id: str) -> None:
        """A request was stored for `task_id`: have it read its requests now."""
        event = self._wakeups.get(task_id)
        if event is not None:
            event.set()

    def forget(self, task_id: str) -> None:
        self._wakeups.pop(task_id, None)

    def event(self, thread_id: str) -> asyncio.Event:
        event = self._events.get(thread_id)
        if event is None:
            event = self._events[thread_id] = asyncio.Event()
        return event

    def notify(self, thread_id: str) -> None:
        event = self._events.pop(thread_id, None)
        if event is not None:
            event.set()


runner = Runner()
