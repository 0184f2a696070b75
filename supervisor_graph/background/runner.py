"""The background tasks running in this process: their asyncio tasks, control requests
(cancel / update) addressed to them, and which parent threads an until-idle stream
watches. A second process has its own; the store's records and the task leases are
what processes share."""

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
        # task id -> why its asyncio task is being cancelled ("cancel" or "update")
        self.requests: dict[str, str] = {}

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

# how long an outcome waits for a busy thread before the thread's next call reports it
