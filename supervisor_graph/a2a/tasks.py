"""Where A2A tasks live: `MemoryTaskStore`, an `a2a-sdk` `TaskStore` on the agent's memory.

A task is one record of the memory's LangGraph store (the same sqlite file or Postgres
database as the threads; an in-process store for `Memory(":memory:")`) under
`A2A_TASKS_NAMESPACE`, keyed by task id: the task as its 1.0 JSON, its owner, context
and state. So `tasks/get` answers after a server restart, and an `input-required` task
can still be answered (its approval waits on the thread, in the same database).

Every task belongs to the user (resource) of the request that created it: `get`,
`list` and `delete` see only the caller's own tasks, so another user's task id is
"task not found", as an unknown one is. The owner is the bridge's `resource_id` called
with the SDK's `ServerCallContext` (a request it names no user for owns `""`: it can
only fail, with `RESOURCE_REQUIRED`).

`TaskContextBuilder` gives a message that names a task but no context (A2A 1.0 allows
that) the stored task's context, so the follow-up continues that task's thread instead
of one the SDK would make up.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from a2a.server.agent_execution import RequestContext, SimpleRequestContextBuilder
from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, SendMessageRequest, Task
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import InvalidParamsError
from a2a.utils.task import ListTasksCursor, decode_list_tasks_cursor, encode_list_tasks_cursor
from google.protobuf.json_format import MessageToDict, ParseDict
from langgraph.store.base import BaseStore

__all__ = ["A2A_TASKS_NAMESPACE", "MemoryTaskStore", "TaskContextBuilder", "resource_owner"]

A2A_TASKS_NAMESPACE = ("supervisor_graph", "a2a_tasks")
# the most tasks of one user `list` sorts in one call (ListTasks pages through them)
LIST_LIMIT = 10_000

Owner = Callable[[ServerCallContext], Awaitable[str]]


def resource_owner(resource_id: str | Callable[[Any], Any]) -> Owner:
    """The owner of a call: `resource_id` itself, or what it returns for the call's
    context; `""` when it names nobody (or fails)."""

    async def owner(context: ServerCallContext) -> str:
        try:
            value = resource_id(context) if callable(resource_id) else resource_id
            if inspect.isawaitable(value):
                value = await value
        except Exception:  # noqa: BLE001 - a callable that cannot read the call names nobody
            return ""
        return value if isinstance(value, str) else ""

    return owner


def _sort_key(timestamp_ns: int | None, task_id: str) -> tuple[bool, int, str]:
    """ListTasks order (newest first, tasks without a timestamp last), as the SDK's own stores."""
    return (timestamp_ns is not None, timestamp_ns or 0, task_id)


class MemoryTaskStore(TaskStore):
    """A2A tasks in a LangGraph store, one record per task, scoped by owner (module docstring).

    `store` is an async callable that returns the store for the running event loop
    (`Memory.store`: database connections belong to one loop).
    """

    def __init__(self, store: Callable[[], Awaitable[BaseStore]], owner: Owner) -> None:
        self._store = store
        self._owner = owner

    async def save(self, task: Task, context: ServerCallContext) -> None:
        owner = await self._owner(context)
        store = await self._store()
        found = await store.aget(A2A_TASKS_NAMESPACE, task.id)
        if found is not None and found.value.get("owner") != owner:
            # never overwrite another user's task (ids are the client's to choose)
            raise InvalidParamsError(message=f"Task {task.id} belongs to another user.")
        stamp = task.status.timestamp.ToNanoseconds() if task.status.HasField("timestamp") else None
        value = {
            "owner": owner,
            "context_id": task.context_id,
            "state": int(task.status.state),
            "timestamp_ns": stamp,
            "task": MessageToDict(task),
        }
        await store.aput(A2A_TASKS_NAMESPACE, task.id, value, index=False)

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        if not task_id:
            return None
        store = await self._store()
        found = await store.aget(A2A_TASKS_NAMESPACE, task_id)
        if found is None or found.value.get("owner") != await self._owner(context):
            return None
        return ParseDict(found.value["task"], Task(), ignore_unknown_fields=True)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        found: dict[str, Any] = {"owner": await self._owner(context)}
        if params.context_id:
            found["context_id"] = params.context_id
        if params.status:
            found["state"] = int(params.status)
        store = await self._store()
        items = await store.asearch(A2A_TASKS_NAMESPACE, filter=found, limit=LIST_LIMIT)
        after_ns = params.status_timestamp_after.ToNanoseconds() if params.HasField("status_timestamp_after") else None
        rows = [
            (_sort_key(item.value.get("timestamp_ns"), item.key), item.value["task"])
            for item in items
            if after_ns is None or (item.value.get("timestamp_ns") or -1) >= after_ns
        ]
        rows.sort(key=lambda row: row[0], reverse=True)
        start = 0
        if params.page_token:
            cursor = decode_list_tasks_cursor(params.page_token)
            if cursor is None:
                raise InvalidParamsError(message=f"Invalid page token: {params.page_token}")
            after = cursor.sort_key()
            start = next((i for i, row in enumerate(rows) if row[0] < after), len(rows))
        size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
        page = rows[start : start + size]
        more = start + size < len(rows)
        token = None
        if more and page:
            has, stamp, last = page[-1][0]
            token = encode_list_tasks_cursor(ListTasksCursor(timestamp_ns=stamp if has else None, task_id=last))
        return ListTasksResponse(
            tasks=[ParseDict(task, Task(), ignore_unknown_fields=True) for _, task in page],
            next_page_token=token,
            total_size=len(rows),
            page_size=size,
        )

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        store = await self._store()
        found = await store.aget(A2A_TASKS_NAMESPACE, task_id)
        if found is not None and found.value.get("owner") == await self._owner(context):
            await store.adelete(A2A_TASKS_NAMESPACE, task_id)


class TaskContextBuilder(SimpleRequestContextBuilder):
    """Builds the SDK's `RequestContext`; a message naming a task without a context
    takes the stored task's context (module docstring)."""

    def __init__(self, tasks: TaskStore) -> None:
        super().__init__()
        self._tasks = tasks

    async def build(
        self,
        context: ServerCallContext,
        params: SendMessageRequest | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
        task: Task | None = None,
    ) -> RequestContext:
        if task_id and not context_id:
            # the handler has already refused an unknown (or another user's) task id
            stored = task if task is not None else await self._tasks.get(task_id, context)
            if stored is not None and stored.context_id:
                context_id = stored.context_id
        return await super().build(context, params, task_id, context_id, task)
