"""Serving a `RemoteAgent` over AG-UI (SPEC §21, seed 003's remote agents): the AG-UI
thread is a thread on the remote server, the remote run's stream becomes the same typed
chunks a local run produces, and the bridge's translator turns them into AG-UI events.

The remote thread's metadata holds the resource (user) that owns it, as a local thread's
checkpoints do; interrupts on the remote thread are the run's AG-UI interrupts, answered
with `RunAgentInput.resume` (a `Command(resume=...)` on the remote thread). A
`RemoteAgent(resumable=False)` refuses every resume with `RUN_ERROR` code
`REMOTE_NOT_RESUMABLE` before any request reaches its server.

`RemoteBridge.events` is such a run from its `RunAgentInput` to its terminal event.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedSuccessOutcome,
)
from langchain_core.messages import BaseMessage, convert_to_messages, message_to_dict

from supervisor_graph.agui.events import Reopen, RunSettings, RunTranslator
from supervisor_graph.agui.frontend import InputError
from supervisor_graph.agui.interrupts import Dialect, Pause, ResumeError, plan_resume
from supervisor_graph.agui.messages import new_messages
from supervisor_graph.agui.outcomes import failed, refused
from supervisor_graph.agui.tree import AgentTree
from supervisor_graph.declaration.remote import RemoteAgent
from supervisor_graph.nodes.remote.langgraph import RemoteNotResumableError
from supervisor_graph.nodes.text import text_of_content
from supervisor_graph.run.chunks import FinishChunk, StreamChunk, Usage, make_chunk
from supervisor_graph.run.results import GenerateResult, PendingItem

__all__ = ["RemoteBridge", "RemoteStream"]



def _value(item: dict[str, Any], graph_id: str) -> dict[str, Any]:
    """A remote interrupt's value in this library's shape (a foreign one becomes an approval)."""
    value = item.get("value")
    if isinstance(value, dict) and value.get("kind") in ("approval", "suspend"):
        return value
    return {"kind": "approval", "tool_call_id": item.get("id"), "tool_name": graph_id, "args": {}, "payload": value}


class RemoteBridge:
    """The remote server as the AG-UI bridge sees it."""

    def __init__(self, remote: RemoteAgent) -> None:
        self.remote = remote
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self.remote.spec().client()
        return self._client

    @staticmethod
    def thread_id(ag_ui_thread: str) -> str:
        """The remote thread of an AG-UI thread (servers want UUIDs)."""
        try:
            return str(uuid.UUID(ag_ui_thread))
        except ValueError:
            return str(uuid.uuid5(uuid.NAMESPACE_URL, f"supervisor-graph-agui:{ag_ui_thread}"))

    async def owner(self, thread: str) -> str | None:
        from langgraph_sdk.errors import NotFoundError

        try:
            found = await self.client.threads.get(thread)
        except NotFoundError:
            return None
        return str((found.get("metadata") or {}).get("resource_id") or "")

    async def open(self, thread: str, resource: str) -> dict[str, Any]:
        """Create the thread for `resource` if it is new; its state."""
        await self.client.threads.create(thread_id=thread, if_exists="do_nothing", metadata={"resource_id": resource})
        return dict(await self.client.threads.get_state(thread))

    def pauses(self, state: dict[str, Any]) -> list[Pause]:
        return [Pause.of_value(str(item.get("id")), _value(item, self.remote.graph_id)) for item in state.get("interrupts") or ()]

    @staticmethod
    def stored(state: dict[str, Any]) -> list[BaseMessage]:
        values = state.get("values")
        messages = values.get("messages") if isinstance(values, dict) else None
        return list(convert_to_messages(messages or []))

    def stream(self, thread: str, run_input: dict[str, Any], run_id: str, abort: Any) -> RemoteStream:
        return RemoteStream(self, thread, run_input, run_id, abort)

    async def events(
        self, input: RunAgentInput, resource: Callable[[], Awaitable[str]], dialect: Dialect, abort: Any
    ) -> AsyncGenerator[BaseEvent, None]:
        """A run's AG-UI events after `RUN_STARTED` (SPEC §21): the AG-UI thread is a
        thread on the server, owned by the resource `resource()` names."""
        try:
            user = await resource()
            if input.resume and not self.remote.resumable:  # refused before any request reaches the server
                raise ResumeError(
                    RemoteNotResumableError.code,
                    f"The remote agent {self.remote.id!r} cannot be resumed (RemoteAgent(resumable=False)); "
                    "nothing was sent to it.",
                )
            thread = self.thread_id(input.thread_id)
            owner = await self.owner(thread)
            if owner is not None and owner != user:
                raise InputError("THREAD_FORBIDDEN", "This thread belongs to another user.")
            state = await self.open(thread, user)
            pending = self.pauses(state)
            reopen: dict[tuple[str, str], Reopen] = {}
            if input.resume:
                answers, chosen = plan_resume(input.resume, pending, dialect)
                for pause in chosen:
                    reopen[(pause.namespace, pause.tool_call_id)] = Reopen(
                        full=pause.kind == "approval", tool_name=pause.tool_name, args=pause.args
                    )
                run_input: dict[str, Any] = {"command": {"resume": answers}}
            else:
                if pending:
                    raise InputError(
                        "INTERRUPT_PENDING",
                        f"{len(pending)} interrupt(s) are waiting on this thread; answer them with RunAgentInput.resume first.",
                    )
                fresh = new_messages(input.messages, self.stored(state))
                if not fresh:
                    yield RunFinishedEvent(
                        thread_id=input.thread_id, run_id=input.run_id, outcome=RunFinishedSuccessOutcome(), timestamp=int(time.time() * 1000)
                    )
                    return
                run_input = {"input": {"messages": to_input(fresh)}}
        except Exception as exc:  # noqa: BLE001 - refused before anything ran, or the server is unreachable
            yield refused(exc, bool(input.resume), input.run_id, " on the remote server")
            return
        settings = RunSettings(
            dialect=dialect,
            attributed=False,
            omit_subagent_results=False,
            parts=input.protocol_version == PROTOCOL_VERSION,
            frontend_tools=frozenset(),
            tree=AgentTree(self.remote),
        )
        translator = RunTranslator(settings, input.thread_id, input.run_id, reopen)
        stream = self.stream(thread, run_input, input.run_id, abort)
        try:
            async for chunk in stream.full_stream:
                for event in translator.on_chunk(chunk):
                    yield event
            result = await stream.result()
        except Exception as exc:  # noqa: BLE001 - the remote run failed: RUN_ERROR, details in the log
            for event in failed(translator, exc, input.run_id, " on the remote server"):
                yield event
            return
        for event in translator.finish(result):
            yield event


class RemoteStream:
    """One remote run as typed chunks (what `AgentStream` gives for a local run)."""

    def __init__(self, bridge: RemoteBridge, thread: str, run_input: dict[str, Any], run_id: str, abort: Any) -> None:
        self.bridge, self.thread, self.run_input, self.run_id, self.abort = bridge, thread, run_input, run_id, abort
        self._result: GenerateResult | None = None
        self.path = (bridge.remote.id,)

    @property
    async def full_stream(self) -> AsyncIterator[StreamChunk]:  # type: ignore[misc]
        queue: asyncio.Queue[StreamChunk | None] = asyncio.Queue()
        task = asyncio.ensure_future(self._pump(queue))
        try:
            while (chunk := await queue.get()) is not None:
                yield chunk
        finally:
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def result(self) -> GenerateResult:
        assert self._result is not None, "read full_stream first"
        return self._result

    def _chunk(self, type_: str, payload: dict[str, Any]) -> StreamChunk:
        return make_chunk(type_, payload, self.run_id, self.path)

    async def _pump(self, queue: asyncio.Queue[StreamChunk | None]) -> None:
        client, remote = self.bridge.client, self.bridge.remote
        put = queue.put_nowait
        created: list[str] = []
        seen: set[str] = set()
        last_values: dict[str, Any] = {}
        aborted = False
        try:
            put(self._chunk("start", {"thread_id": self.thread}))
            runner = asyncio.ensure_future(self._read(client, remote, created, seen, put, last_values))
            stop = asyncio.ensure_future(self.abort.wait()) if self.abort is not None else None
            waiters = {runner, *([stop] if stop is not None else [])}
            done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            if stop is not None and stop in done and runner not in done:
                aborted = True
                runner.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await runner
                if created:
                    with contextlib.suppress(Exception):
                        await client.runs.cancel(self.thread, created[-1])
            else:
                if stop is not None:
                    stop.cancel()
                runner.result()
            state = dict(await client.threads.get_state(self.thread))
            self._result = self._outcome(state, aborted)
            put(
                FinishChunk(
                    payload={
                        "finish_reason": self._result.finish_reason,
                        "usage_by_agent": {path: u.model_dump() for path, u in self._result.usage_by_agent.items()},
                    },
                    run_id=self.run_id,
                    agent_path=self.path,
                    finish_reason=self._result.finish_reason,
                    usage=self._result.usage,
                )
            )
        finally:
            put(None)

    async def _read(self, client: Any, remote: RemoteAgent, created: list[str], seen: set[str], put: Any, last: dict[str, Any]) -> None:
        async for part in client.runs.stream(
            self.thread,
            remote.graph_id,
            stream_mode=["messages-tuple", "updates", "values"],
            on_run_created=lambda meta: created.append(str(meta["run_id"])),
            **self.run_input,
        ):
            if part.event == "error":
                raise RuntimeError("the remote run failed")
            if part.event == "messages" and isinstance(part.data, list) and len(part.data) == 2:
                chunk, meta = part.data
                if "|" in str((meta or {}).get("langgraph_checkpoint_ns", "")) or not isinstance(chunk, dict):
                    continue
                if chunk.get("type") in ("AIMessageChunk", "ai"):
                    text = text_of_content(chunk.get("content"))
                    if text:
                        put(self._chunk("text-delta", {"text": text, "message_id": chunk.get("id")}))
            elif part.event == "updates" and isinstance(part.data, dict):
                for update in part.data.values():
                    for message in (update or {}).get("messages", []) if isinstance(update, dict) else []:
                        self._tool_events(message, seen, put)
            elif part.event == "values" and isinstance(part.data, dict):
                last.clear()
                last.update(part.data)

    def _tool_events(self, message: Any, seen: set[str], put: Any) -> None:
        if not isinstance(message, dict) or message.get("id") in seen:
            return
        seen.add(str(message.get("id")))
        if message.get("type") == "ai":
            for call in message.get("tool_calls") or ():
                payload = {"tool_call_id": call.get("id"), "tool_name": call.get("name"), "args": call.get("args") or {}}
                put(self._chunk("tool-call", {**payload, "message_id": message.get("id")}))
        elif message.get("type") == "tool":
            kind = "tool-error" if message.get("status") == "error" else "tool-result"
            put(self._chunk(kind, {"tool_call_id": message.get("tool_call_id"), "tool_name": message.get("name"), "result": message.get("content")}))

    def _outcome(self, state: dict[str, Any], aborted: bool) -> GenerateResult:
        values = state.get("values") if isinstance(state.get("values"), dict) else {}
        messages = [m for m in (values or {}).get("messages") or [] if isinstance(m, dict)]
        last_ai = next((m for m in reversed(messages) if m.get("type") == "ai"), None)
        usage = Usage()
        if last_ai is not None and last_ai.get("usage_metadata"):
            usage = Usage(**{k: int(last_ai["usage_metadata"].get(k) or 0) for k in ("input_tokens", "output_tokens", "total_tokens")})
        pending = []
        for item in state.get("interrupts") or ():
            value = _value(item, self.bridge.remote.graph_id)
            pending.append(
                PendingItem(
                    kind=value["kind"],
                    interrupt_id=str(item.get("id")),
                    tool_call_id=value.get("tool_call_id"),
                    tool_name=value.get("tool_name"),
                    args=value.get("args") or {},
                    agent_path=tuple(value.get("agent_path") or self.path),
                    run_id=value.get("run_id") or "",
                    payload=value.get("payload"),
                    resume_schema=value.get("resume_schema"),
                    namespace=value.get("namespace") or "",
                )
            )
        reason = "abort" if aborted else "suspended" if pending else "stop"
        return GenerateResult(
            text=text_of_content(last_ai.get("content")) if last_ai is not None and not pending else "",
            messages=[],
            usage=usage,
            usage_by_agent={"/".join(self.path): usage},  # the remote's tree is opaque: all of it under its path
            finish_reason=reason,
            run_id=self.run_id,
            thread_id=self.thread,
            suspended=pending,
        )


def to_input(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as a server's run input."""
    return [message_to_dict(m)["data"] | {"type": m.type} for m in messages]
