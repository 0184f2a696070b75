"""Cancel and update of background tasks (SPEC §12), from any process sharing the memory.

A request is an item of its own in the memory's store (`requests_namespace(task_id)`,
one per request, so two processes never overwrite each other's), written whichever
process answers the control tool. The process running the task reads them before each
try and, during a try, at once when woken in-process (`runner.wake`) or at its next
poll of the store (every `REQUEST_POLL` seconds, only while a task runs there), so
another process's request is acted on within 2 seconds. `TaskControl` is the control
plane `nodes/background/control.py` calls, mixed into the process host
(`host.RunBackground`).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

from langgraph.store.base import BaseStore

from supervisor_graph.background.runner import runner
from supervisor_graph.checkpointers.urls import Storage
from supervisor_graph.declaration.errors import ThreadBusyError
from supervisor_graph.memory.background_records import requests_namespace
from supervisor_graph.memory.lease import ThreadLease
from supervisor_graph.nodes.background.tasks import FINAL_STATUSES

__all__ = ["REQUEST_POLL", "TaskControl", "cancelled", "drop_requests", "store_request", "take_requests", "watch"]

log = logging.getLogger("supervisor_graph")

# how often a running task reads the requests stored for it (another process's cancel
# or update is acted on within 2 seconds)
REQUEST_POLL = 0.5


async def store_request(store: BaseStore, task_id: str, thread_id: str, kind: str, instructions: str | None = None) -> None:
    """Store a cancel or update request for `task_id` and wake the task if it runs here."""
    value = {"task_id": task_id, "thread_id": thread_id, "kind": kind, "instructions": instructions, "at": time.time()}
    await store.aput(requests_namespace(task_id), uuid.uuid4().hex, value, index=False)
    runner.wake(task_id)


async def _requests(store: BaseStore, task_id: str) -> list[tuple[str, dict[str, Any]]]:
    items = await store.asearch(requests_namespace(task_id), limit=1_000)
    found = [(item.key, dict(item.value)) for item in items]
    return sorted(found, key=lambda pair: (pair[1].get("at") or 0, pair[0]))


async def take_requests(store: BaseStore, task_id: str) -> list[dict[str, Any]]:
    """The requests stored for `task_id`, oldest first, removed from the store."""
    found = await _requests(store, task_id)
    for key, _ in found:
        await store.adelete(requests_namespace(task_id), key)
    return [value for _, value in found]


async def drop_requests(store: BaseStore, task_id: str) -> None:
    """Forget what was asked of a task that has ended."""
    for key, _ in await _requests(store, task_id):
        await store.adelete(requests_namespace(task_id), key)


async def watch(store: BaseStore, task_id: str) -> None:
    """Returns once a request is stored for `task_id`: woken in-process at once, else
    found by reading the store every `REQUEST_POLL` seconds."""
    wakeup = runner.wakeup(task_id)
    while True:
        wakeup.clear()
        try:
            if await _requests(store, task_id):
                return
        except Exception as exc:  # noqa: BLE001 - a failed read is retried at the next poll
            log.debug("reading the requests of background task %s failed: %s", task_id, type(exc).__name__)
        try:
            await asyncio.wait_for(wakeup.wait(), REQUEST_POLL)
        except TimeoutError:
            pass


def cancelled(record: dict[str, Any], agent_id: str) -> None:
    """Mark a task's record cancelled by the supervisor."""
    record["status"], record["waiting"] = "cancelled", []
    record["result_text"] = f"The subagent {agent_id!r} was cancelled by the supervisor."


class TaskControl:
    """`check/list/cancel/update_background_task` for the tasks of one parent thread."""

    storage: Storage
    thread_id: str

    async def load(self, task_id: str) -> dict[str, Any] | None:
        raise NotImplementedError

    async def save(self, record: dict[str, Any]) -> None:
        raise NotImplementedError

    async def records(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def answer_outcomes(self, task_id: str | None = None) -> None:
        raise NotImplementedError

    async def task_records(self) -> list[dict[str, Any]]:
        return sorted(await self.records(), key=lambda r: str(r.get("task_id")))

    async def _open_record(self, task_id: str, verb: str) -> dict[str, Any] | str:
        from supervisor_graph.nodes.background.control import ControlError

        record = await self.load(task_id)
        if record is None or record.get("thread_id") != self.thread_id:
            raise ControlError(f"there is no background task {task_id!r} in this conversation")
        if record["status"] in FINAL_STATUSES:
            return f"Task {task_id} has already ended ({record['status']}); there is nothing to {verb}."
        return record

    async def cancel_task(self, task_id: str) -> str:
        record = await self._open_record(task_id, "cancel")
        if isinstance(record, str):
            return record
        await store_request(self.storage.store, task_id, self.thread_id, "cancel")
        if runner.live(task_id):
            return f"Cancel request for task {task_id} recorded; it is being cancelled and you will be notified when it has stopped."
        if await self._cancel_idle(task_id):
            return f"Task {task_id} is cancelled (it was not running: waiting for an approval, or its process had stopped)."
        return (
            f"Cancel request for task {task_id} recorded; the process running it stops it within 2 seconds, "
            "and you will be notified when it has stopped."
        )

    async def _cancel_idle(self, task_id: str) -> bool:
        """Cancel a task that no process runs (paused on approvals, or its process died):
        False when one does (its lease is held), which then acts on the stored request."""
        lease = ThreadLease(self.storage.leases, f"bg:{task_id}")
        try:
            await lease.acquire()
        except ThreadBusyError:
            return False
        try:
            record = await self.load(task_id)
            if record is None or record["status"] in FINAL_STATUSES:
                return record is not None
            cancelled(record, record.get("agent_id", ""))
            await self.save(record)
            await drop_requests(self.storage.store, task_id)
        finally:
            await lease.release()
        runner.notify(self.thread_id)
        self.answer_outcomes()
        return True

    async def update_task(self, task_id: str, instructions: str) -> str:
        record = await self._open_record(task_id, "update")
        if isinstance(record, str):
            return record
        await store_request(self.storage.store, task_id, self.thread_id, "update", instructions)
        if runner.live(task_id):
            return f"Update for task {task_id} recorded: it goes on with the new instructions (its next try starts with them)."
        if record.get("waiting"):
            return (
                f"Update for task {task_id} recorded: it waits for an approval; once that is answered, its next try "
                "starts with the new instructions."
            )
        return (
            f"Update for task {task_id} recorded: the process running it starts its next try with the new "
            "instructions within 2 seconds."
        )
