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
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from supervisor_graph.checkpointers.compat import is_resuming, read_channel
from supervisor_graph.nodes.budget import spend
from supervisor_graph.nodes.context import RUN_IDENTITY_KEYS
from supervisor_graph.nodes.delegation_complete import finish_delegation
from supervisor_graph.nodes.delegation_result import DelegationRecord
from supervisor_graph.nodes.delegation_view import apply_message_filter, model_view
from supervisor_graph.nodes.errors import log_failure
from supervisor_graph.nodes.events import EVENT_KEY, Emitter
from supervisor_graph.nodes.options import RunContext, RunHandle
from supervisor_graph.nodes.otel import traceparent_headers
from supervisor_graph.nodes.scope import run_scope
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.state import zero_usage
from supervisor_graph.nodes.tracing import announce

__all__ = ["A2ASpec", "a2a_context_id", "make_a2a_node"]

log = logging.getLogger("supervisor_graph")

# task ids this process started, by context id: a resumed node finds its task without a
# `tasks/list` (which not every A2A server offers); bounded, oldest dropped first
_TASKS: dict[str, str] = {}
_TASKS_KEPT = 1024


@dataclass(frozen=True, slots=True)
class A2ASpec:
    """What the node needs of an `A2AAgent`."""

    agent_id: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float = 300.0
    connect_timeout: float = 10.0
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

    async def send(
        self, message: Any, emit: Emitter, path: tuple[str, ...], namespace: str, handle: RunHandle
    ) -> _Answer:
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
                if emit.active and text.startswith(emitted) and len(text) > len(emitted):
                    emit.writer(  # type: ignore[misc]
                        {
                            EVENT_KEY: True,
                            "type": "text-delta",
                            "payload": {"text": text[len(emitted) :], "message_id": answer.task_id or None},
                            "agent_path": path,
                            "run_id": handle.run_id,
                            "namespace": namespace,
                        }
                    )
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
    if len(waiting) == 1 and waiting[0].get("tool_name"):
        tool_name, args = str(waiting[0]["tool_name"]), dict(waiting[0].get("args") or {})
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
    agent_id = spec.agent_id

    async def run_a2a(task: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        from a2a.helpers.proto_helpers import new_message, new_text_part
        from a2a.types.a2a_pb2 import Role

        opts, handle = run_scope(parent, config, runtime)
        call = task["call"]
        tool_call_id = call["id"] or ""
        prompt = task["prompt"]
        configurable = config.get("configurable") or {}
        namespace = configurable.get("checkpoint_ns", "")
        context_id = a2a_context_id(configurable.get("thread_id"), namespace, tool_call_id)
        record = DelegationRecord(
            tool_call_id=tool_call_id,
            key=key,
            agent_id=agent_id,
            prompt=prompt,
            sub_agent_thread_id=context_id,
            usage=zero_usage(),
        )
        handle.delegations[tool_call_id] = record
        emit = Emitter(runtime, handle)
        announced = {
            "tool_call_id": tool_call_id,
            "agent_key": key,
            "agent_id": agent_id,
            "prompt": prompt,
            "namespace": namespace,
        }
        emit("delegation-start", announced)
        await announce(config, "delegation-start", announced, handle.agent_path)
        sub_path = (*handle.agent_path, agent_id)
        task_id = ""
        try:
            parent_messages: list[BaseMessage] = read_channel(config, "messages") or []
            chosen = await apply_message_filter(
                opts, handle, [*handle.context_messages, *parent_messages], agent_id, prompt, tool_call_id
            )
            values = task.get("request_context")
            context = dict(values) if values is not None else handle.request_context.fork(RUN_IDENTITY_KEYS).to_dict()
            context = {k: v for k, v in context.items() if k not in RUN_IDENTITY_KEYS}
            metadata = {
                "request_context": context,
                "parent_messages": [{"role": m.type, "content": m.content} for m in model_view(chosen)],
            }
            async with _Session(spec, traceparent_headers(config)) as session:
                answer = await session.find(context_id) if is_resuming(config) else None
                if answer is not None:
                    for _ in range(max(answer.users - 1, 0)):  # the answers this task already has
                        interrupt(_request(answer, spec, handle, namespace, _))
                    rounds = max(answer.users - 1, 0)
                else:
                    message = new_message([new_text_part(prompt)], context_id=context_id, role=Role.ROLE_USER)
                    message.metadata.update(metadata)
                    answer, rounds = await session.send(message, emit, sub_path, namespace, handle), 0
                task_id = answer.task_id
                while answer.state in ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"):
                    value = interrupt(_request(answer, spec, handle, namespace, rounds))
                    answer, rounds = (
                        await session.send(_reply(value, answer), emit, sub_path, namespace, handle),
                        rounds + 1,
                    )
                    task_id = answer.task_id or task_id
            if answer.state != "TASK_STATE_COMPLETED":
                raise RuntimeError(f"the A2A task ended in {answer.state or 'no state'}")
            record.text, record.finish_reason = answer.text, "stop"
            record.usage = _usage_of(answer.usage)
            spend(handle.budget, record.usage)  # counted against this run's budgets once it has ended (SPEC §25)
        except GraphBubbleUp:
            raise  # this graph's own pause: the parent's caller answers it
        except Exception as exc:  # noqa: BLE001 - an unreachable or failing agent is a failed delegation
            record.success, record.error, record.finish_reason = False, exc, "error"
            log_failure(log, logging.WARNING, "A2A delegation to %r failed", exc, agent_id)

        artifact = {
            "agent_id": agent_id,
            "success": record.success,
            "usage": record.usage,
            "finish_reason": record.finish_reason,
            "sub_agent_thread_id": context_id,
            "remote": {"url": spec.url, "protocol": "a2a", "task_id": task_id},
        }
        return await finish_delegation(config, opts, handle, record, call, key, artifact, emit, namespace)

    run_a2a.__name__ = key
    return run_a2a
