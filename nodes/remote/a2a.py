"""The A2A subagent node (SPEC §27): a delegation to an agent served over the A2A
protocol, driven with the `a2a-sdk` client (imported on first use: it is the optional
`supervisor-graph[a2a]` extra).

The prompt goes out as one A2A message (`message/stream` when the agent's card says it
streams, else `message/send`) in a context whose id is derived from the delegation. The
agent's text (artifact parts, or its reply message) streams into the parent's stream as
the subagent's chunks; the final text is the result. A task that stops in
`input-required` becomes an `interrupt()` here, so the parent pauses with it; the answer
is sent to the same task (a data part holding the answer, and for an approval a text part
`approved` / `declined`). Run again on resume, the node finds its task again (by the
task id it remembers, else by listing the context's tasks) and replays the answers
already sent (one per earlier user message in the task's history) before asking anew.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph.types import interrupt

from supervisor_graph.checkpointers.compat import is_resuming
from supervisor_graph.nodes.observability.otel import traceparent_headers
from supervisor_graph.nodes.options import RunHandle
from supervisor_graph.nodes.remote.delegation import RemoteDelegation, RemoteEndpoint, remote_delegation_node
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.state import zero_usage

__all__ = ["A2ASpec", "a2a_context_id", "make_a2a_node"]

# task ids this process started, by context id: a resumed node finds its task without a
# `tasks/list` (which not every A2A server offers); bounded, oldest dropped first
_TASKS: dict[str, str] = {}
_TASKS_KEPT = 1024


@dataclass(frozen=True, slots=True)
class A2ASpec(RemoteEndpoint):
    """What the node needs of an `A2AAgent`."""

    streaming: bool = True


def a2a_context_id(parent_thread: Any, namespace: str, tool_call_id: str) -> str:
    """The A2A context of one delegation (a UUID)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"supervisor-graph-a2a:{parent_thread}|{namespace}|{tool_call_id}"))


def _remember(context_id: str, task_id: str) -> None:
    _TASKS.pop(context_id, None)
    _TASKS[context_id] = task_id
    while len(_TASKS) > _TASKS_KEPT:
        _TASKS.pop(next(iter(_TASKS)))


def _texts(parts: Any) -> str:
    return "".join(part.text for part in parts if part.HasField("text"))


def _data(parts: Any) -> list[Any]:
    from google.protobuf.json_format import MessageToDict

    return [MessageToDict(part.data) for part in parts if part.HasField("data")]


@dataclass
class _Answer:
    """What one exchange with the agent has produced so far."""

    task_id: str = ""
    context_id: str = ""
    state: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)
    status_text: str = ""
    status_data: list[Any] = field(default_factory=list)
    reply: str | None = None
    users: int = 0  # user messages in the task's history (answers sent = users - 1)
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        if self.reply is not None:
            return self.reply
        return "".join(self.artifacts.values()) or (self.status_text if self.state == "TASK_STATE_COMPLETED" else "")

    def take_task(self, task: Any) -> None:
        from a2a.types.a2a_pb2 import Role, TaskState
        from google.protobuf.json_format import MessageToDict

        self.task_id, self.context_id = task.id, task.context_id
        self.take_status(TaskState.Name(task.status.state), task.status)
        for artifact in task.artifacts:
            self.artifacts[artifact.artifact_id] = _texts(artifact.parts)
        self.users = sum(1 for m in task.history if m.role == Role.ROLE_USER)
        self._usage(MessageToDict(task.metadata) if task.HasField("metadata") else {})

    def take_status(self, state: str, status: Any) -> None:
        self.state = state
        if status.HasField("message"):
            self.status_text, self.status_data = _texts(status.message.parts), _data(status.message.parts)

    def take(self, event: Any) -> None:
        """One `StreamResponse` of the agent."""
        from a2a.types.a2a_pb2 import TaskState
        from google.protobuf.json_format import MessageToDict

        kind = event.WhichOneof("payload")
        if kind == "task":
            self.take_task(event.task)
        elif kind == "message":
            self.reply, self.state = _texts(event.message.parts), "TASK_STATE_COMPLETED"
        elif kind == "status_update":
            update = event.status_update
            self.task_id, self.context_id = update.task_id or self.task_id, update.context_id or self.context_id
            self.take_status(TaskState.Name(update.status.state), update.status)
            self._usage(MessageToDict(update.metadata) if update.HasField("metadata") else {})
        elif kind == "artifact_update":
            artifact = event.artifact_update.artifact
            before = self.artifacts.get(artifact.artifact_id, "") if event.artifact_update.append else ""
            self.artifacts[artifact.artifact_id] = before + _texts(artifact.parts)

    def _usage(self, metadata: Mapping[str, Any]) -> None:
        usage = metadata.get("usage")
        if isinstance(usage, Mapping):
            self.usage = dict(usage)


class _Session:
    """The a2a-sdk client of one delegation's node run."""

    def __init__(self, spec: A2ASpec, headers: dict[str, str]) -> None:
        self.spec, self.headers = spec, headers
        self.http: Any = None
        self.client: Any = None

    async def __aenter__(self) -> _Session:
        import httpx
        from a2a.client import ClientConfig, create_client

        timeout = httpx.Timeout(self.spec.timeout, connect=self.spec.connect_timeout)
        self.http = httpx.AsyncClient(headers={**dict(self.spec.headers), **self.headers}, timeout=timeout)
        try:
            config = ClientConfig(streaming=self.spec.streaming, httpx_client=self.http)
            self.client = await create_client(self.spec.url, config)
        except BaseException:
            await self.http.aclose()
            raise
        return self

    async def __aexit__(self, *exc: Any) -> None:
        with contextlib.suppress(Exception):
            await self.client.close()
        await self.http.aclose()

    async def find(self, context_id: str) -> _Answer | None:
        """The task of a delegation run before (its node runs again on resume)."""
        from a2a.types.a2a_pb2 import GetTaskRequest, ListTasksRequest

        known = _TASKS.get(context_id)
        task = None
        if known:
            task = await self.client.get_task(GetTaskRequest(id=known))
        else:
            with contextlib.suppress(Exception):  # a server without `tasks/list`: start again
                page = await self.client.list_tasks(ListTasksRequest(context_id=context_id))
                task = page.tasks[0] if page.tasks else None
        if task is None:
            return None
        answer = _Answer()
        answer.take_task(task)
        return answer

    async def send(self, message: Any, delegation: RemoteDelegation) -> _Answer:
        """One message to the agent, its text streamed as the subagent's; the remote task
        is cancelled when the run is."""
        from a2a.types.a2a_pb2 import CancelTaskRequest, SendMessageRequest

        answer, emitted = _Answer(), ""
        try:
            async for event in self.client.send_message(SendMessageRequest(message=message)):
                answer.take(event)
                if answer.task_id and answer.context_id:
                    _remember(answer.context_id, answer.task_id)
                text = answer.text
                if delegation.emit.active and text.startswith(emitted) and len(text) > len(emitted):
                    delegation.text_delta(text[len(emitted) :], answer.task_id or None)
                    emitted = text
        except asyncio.CancelledError:
            if answer.task_id:  # the run was aborted: cancel the remote task too
                cancel = self.client.cancel_task(CancelTaskRequest(id=answer.task_id))
                with contextlib.suppress(Exception):
                    await asyncio.shield(asyncio.wait_for(cancel, self.spec.connect_timeout))
            raise
        return answer


def _request(answer: _Answer, spec: A2ASpec, handle: RunHandle, namespace: str, round_: int) -> dict[str, Any]:
    """An `input-required` task as this graph's own pause (what the parent's caller answers)."""
    args: dict[str, Any] = {"question": answer.status_text}
    if answer.status_data:
        args["data"] = answer.status_data
    tool_name = spec.agent_id
    # a supervisor-graph agent (`serve --a2a`) lists what waits in a data part: one item is named
    waiting = [
        i
        for d in answer.status_data
        if isinstance(d, Mapping)
        for i in d.get("interrupts") or ()
        if isinstance(i, Mapping)
    ]
    # `toolName` since A2A 1.0's camelCase; `tool_name` from servers before it
    named = (waiting[0].get("toolName") or waiting[0].get("tool_name")) if len(waiting) == 1 else None
    if named:
        tool_name, args = str(named), dict(waiting[0].get("args") or {})
    return {
        "kind": "approval",
        "tool_call_id": f"a2a-{answer.task_id}-{round_}",
        "tool_name": tool_name,
        "args": args,
        "agent_path": [*handle.agent_path, spec.agent_id],
        "run_id": handle.run_id,
        "namespace": namespace,
        "payload": {"question": answer.status_text, "data": answer.status_data, "state": answer.state},
        "remote": {"url": spec.url, "task_id": answer.task_id, "context_id": answer.context_id},
    }


def _reply(value: Any, answer: _Answer) -> Any:
    """The parent's answer as the user message that continues the remote task."""
    from a2a.helpers.proto_helpers import new_data_part, new_message, new_text_part
    from a2a.types.a2a_pb2 import Role

    parts = []
    if isinstance(value, Mapping):
        parts.append(new_data_part(dict(value)))
        if isinstance(value.get("approved"), bool):
            parts.append(new_text_part("approved" if value["approved"] else "declined"))
    else:
        parts.append(new_text_part(str(value)))
    return new_message(parts, context_id=answer.context_id, task_id=answer.task_id, role=Role.ROLE_USER)


def _usage_of(reported: Mapping[str, Any]) -> dict[str, int]:
    usage = zero_usage()
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        with contextlib.suppress(TypeError, ValueError):
            usage[key] += int(reported.get(key) or 0)
    if not usage["total_tokens"]:
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
    return usage


def make_a2a_node(parent: AgentSpec, key: str, spec: A2ASpec) -> Any:
    async def exchange(delegation: RemoteDelegation) -> None:
        from a2a.helpers.proto_helpers import new_message, new_text_part
        from a2a.types.a2a_pb2 import Role

        record, handle, namespace = delegation.record, delegation.handle, delegation.namespace
        context_id = str(record.sub_agent_thread_id)
        metadata = {
            "request_context": delegation.request_context(),
            "parent_messages": await delegation.parent_messages(),
        }
        async with _Session(spec, traceparent_headers(delegation.config)) as session:
            answer = await session.find(context_id) if is_resuming(delegation.config) else None
            if answer is not None:
                for _ in range(max(answer.users - 1, 0)):  # the answers this task already has
                    interrupt(_request(answer, spec, handle, namespace, _))
                rounds = max(answer.users - 1, 0)
            else:
                message = new_message([new_text_part(delegation.prompt)], context_id=context_id, role=Role.ROLE_USER)
                message.metadata.update(metadata)
                answer, rounds = await session.send(message, delegation), 0
            delegation.remote["task_id"] = answer.task_id
            while answer.state in ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"):
                value = interrupt(_request(answer, spec, handle, namespace, rounds))
                answer, rounds = await session.send(_reply(value, answer), delegation), rounds + 1
                delegation.remote["task_id"] = answer.task_id or delegation.remote["task_id"]
        if answer.state != "TASK_STATE_COMPLETED":
            raise RuntimeError(f"the A2A task ended in {answer.state or 'no state'}")
        record.text, record.finish_reason = answer.text, "stop"
        record.usage = _usage_of(answer.usage)

    return remote_delegation_node(
        parent,
        key,
        spec.agent_id,
        thread_of=a2a_context_id,
        remote={"url": spec.url, "protocol": "a2a", "task_id": ""},
        exchange=exchange,
        protocol="A2A",
    )
