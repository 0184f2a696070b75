"""`MemoryTaskStore` on every storage (in-process, sqlite, Postgres): a task saved is read
back whole by its owner, by nobody else, across a new `Memory` on the same database;
`list` filters and pages; `delete` is the owner's only. And the `--a2a-compat` flag."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.helpers.proto_helpers import new_task, new_text_message
from a2a.server.context import ServerCallContext
from a2a.types import ListTasksRequest, Role, TaskState
from a2a.utils.errors import InvalidParamsError

from supervisor_graph import Memory
from supervisor_graph.a2a.tasks import MemoryTaskStore, resource_owner


def _call(user: str | None) -> ServerCallContext:
    return ServerCallContext(state={"headers": {"x-user": user} if user else {}})


def _store(memory: Memory) -> MemoryTaskStore:
    return MemoryTaskStore(memory.store, resource_owner(lambda call: call.state["headers"]["x-user"]))


def _task(task_id: str, context_id: str, state: Any = TaskState.TASK_STATE_COMPLETED) -> Any:
    message = new_text_message(f"hello from {task_id}", context_id=context_id, task_id=task_id, role=Role.ROLE_USER)
    task = new_task(task_id, context_id, state, history=[message])
    task.status.timestamp.GetCurrentTime()
    return task


async def test_tasks_are_kept_for_their_owner(storage: str) -> None:
    memory = Memory(storage)
    store = _store(memory)
    ann, bob = _call("ann"), _call("bob")
    waiting = _task("t-1", "c-1", TaskState.TASK_STATE_INPUT_REQUIRED)
    await store.save(waiting, ann)
    await store.save(_task("t-2", "c-1"), ann)
    await store.save(_task("t-3", "c-2"), ann)
    await store.save(_task("t-4", "c-1"), bob)
    assert await store.get("t-1", ann) == waiting
    assert await store.get("t-1", bob) is None and await store.get("t-1", _call(None)) is None
    assert await store.get("nope", ann) is None
    # a task id is never taken over by another user
    with pytest.raises(InvalidParamsError, match="another user"):
        await store.save(_task("t-1", "c-9"), bob)

    in_context = await store.list(ListTasksRequest(context_id="c-1"), ann)
    assert sorted(t.id for t in in_context.tasks) == ["t-1", "t-2"] and in_context.total_size == 2
    paused = await store.list(ListTasksRequest(status=TaskState.TASK_STATE_INPUT_REQUIRED), ann)
    assert [t.id for t in paused.tasks] == ["t-1"]
    first = await store.list(ListTasksRequest(page_size=2), ann)
    rest = await store.list(ListTasksRequest(page_size=2, page_token=first.next_page_token), ann)
    assert len(first.tasks) == 2 and first.next_page_token and [t.id for t in rest.tasks]
    assert {t.id for t in [*first.tasks, *rest.tasks]} == {"t-1", "t-2", "t-3"} and not rest.next_page_token

    await store.delete("t-2", bob)  # not bob's: nothing happens
    assert await store.get("t-2", ann) is not None
    await store.delete("t-2", ann)
    assert await store.get("t-2", ann) is None
    if memory.kind != "memory":  # what another process opening the database sees
        again = Memory(storage)
        assert await _store(again).get("t-1", ann) == waiting
        await again.aclose()
    await memory.aclose()


def test_the_serve_command_takes_a2a_compat_only_with_a2a() -> None:
    from supervisor_graph.cli.main import main

    assert main(["serve", "tests/agui/served.py:supervisor", "--a2a-compat", "0.3"]) != 0
    with pytest.raises(SystemExit):
        main(["serve", "tests/agui/served.py:supervisor", "--a2a", "--a2a-compat", "0.2"])
