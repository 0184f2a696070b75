"""Streaming a run: `AgentStream` and its typed chunks (SPEC §5)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, AIMessageChunk

from supervisor_graph.checkpointers.naming import stable_namespace
from supervisor_graph.nodes.observability.events import EVENT_KEY
from supervisor_graph.nodes.text import text_of
from supervisor_graph.nodes.turn.leaf import AGENT_PATH_KEY, NAMESPACE_KEY
from supervisor_graph.nodes.turn.routing import SUPERVISOR_NODE
from supervisor_graph.run.chunks import FinishChunk, StreamChunk, make_chunk
from supervisor_graph.run.partial import PartialObjects, json_value
from supervisor_graph.run.repair import repair_after
from supervisor_graph.run.results import GenerateResult, PendingItem, run_schema

if TYPE_CHECKING:
    from supervisor_graph.run.call import Run
    pass

__all__ = ["AgentStream"]


class AgentStream:
    """A run in progress: iterate `full_stream` or `text_stream` (both may be read, each
    from the start), then `await stream.result()`."""

    def __init__(self, run: Run) -> None:
        self._run = run
        self._chunks: list[StreamChunk] = []
        self._changed = asyncio.Event()
        self._done = False
        self._result: GenerateResult | None = None
        self._error: BaseException | None = None
        self._paths: dict[tuple[str, ...], tuple[str, ...]] = {(): (run.agent.id,)}
        # a delegation's namespace as its start announced it, by that namespace without task ids
        self._announced: dict[str, str] = {}
        self._task = asyncio.ensure_future(self._pump())

    @property
    def run_id(self) -> str:
        return self._run.run_id

    def _push(self, chunk: StreamChunk) -> None:
        self._chunks.append(chunk)
        self._changed.set()

    def _where(self, ns: tuple[str, ...]) -> str:
        """The namespace a chunk from `ns` names: the one its delegation's start announced.
        A subagent with a thread per parent thread runs as a `checkpointer=True` subgraph,
        whose namespace LangGraph keeps without the task id, while its start names the
        task: its chunks take the start's, so clients pair them with their invocation."""
        where = "|".join(ns)
        if self._announced:
            for end in range(len(ns), 0, -1):
                if ":" not in ns[end - 1]:
                    announced = self._announced.get(stable_namespace("|".join(ns[:end])))
                    if announced is not None:
                        return "|".join((announced, *ns[end:]))
        return where

    def _agent_path(self, ns: tuple[str, ...]) -> tuple[str, ...]:
        path = self._paths.get(ns)
        if path is None:
            agent: Any = self._run.agent
            ids = [agent.id]
            for part in ns:
                key = part.split(":")[0]
                sub = agent.agents.get(key)
                if sub is None:  # a graph embedded by the user, not one of ours
                    break
                agent = sub
                ids.append(agent.id)
            path = self._paths[ns] = tuple(ids)
        return path

    async def _pump(self) -> None:
        run = self._run
        emit = self._push
        emit(make_chunk("start", {"thread_id": run.thread_id}, run.run_id, (run.agent.id,)))
        schema = run_schema(run)
        # partial answers of the top agent, only when it has an output schema (SPEC §28)
        partials = PartialObjects(schema) if schema is not None else None
        try:
            last_values, aborted = await self._read_graph(partials)
            if aborted:
                last_values = await run.repair()
                emit(make_chunk("abort", {"reason": run.abort_reason}, run.run_id, (run.agent.id,)))
            self._finish(await run.finish(last_values, aborted))
        except BaseException as exc:  # surfaced to readers as an error chunk and by result()
            self._error = exc
            if isinstance(exc, Exception):
                await repair_after(run, exc)
            emit(make_chunk("error", {"error": type(exc).__name__, "message": str(exc)}, run.run_id, (run.agent.id,)))
            if not isinstance(exc, Exception):
                raise
        finally:
            try:
                await run.release()
            finally:  # readers wait for this, whatever the release did
                self._done = True
                self._changed.set()

    async def _read_graph(self, partials: PartialObjects | None) -> tuple[dict[str, Any] | None, bool]:
        """Drive the graph, pushing its chunks as they come: the run's last values (with
        the pauses it ended on) and whether it was aborted."""
        run = self._run
        last_values: dict[str, Any] | None = None
        interrupts: dict[str, Any] = {}  # each pause can arrive in an update of its own
        streamed: set[str] = set()

        async def consume() -> None:
            nonlocal last_values
            async for ns, mode, data in run.graph.astream(
                run.input,
                run.entry_config,
                context=run.context,
                stream_mode=["values", "messages", "custom", "updates"],
                subgraphs=True,
                durability=run.durability,
            ):
                if mode == "custom":
                    self._push_event(ns, data, streamed)
                elif mode == "messages":
                    self._push_message(ns, data, streamed, partials)
                elif mode == "values" and not ns:
                    last_values = data
                elif mode == "updates" and not ns and isinstance(data, dict) and "__interrupt__" in data:
                    interrupts.update((item.id, item) for item in data["__interrupt__"])

        _, aborted = await run.until_aborted(consume())
        if interrupts and last_values is not None and not aborted:
            last_values = {**last_values, "__interrupt__": tuple(interrupts.values())}
        return last_values, aborted

    def _push_event(self, ns: tuple[str, ...], data: Any, streamed: set[str]) -> None:
        """A chunk for an event a node wrote to the custom stream (other custom data is
        the user's own)."""
        if not (isinstance(data, dict) and data.get(EVENT_KEY)):
            return
        if data["type"] == "text-delta":  # checked text a node streamed itself (SPEC §30)
            streamed.add(data["payload"].get("message_id") or "")
        elif data["type"] == "delegation-start" and ":" in (started := data["payload"].get("namespace") or ""):
            self._announced[stable_namespace(started)] = started
        self._push(
            make_chunk(
                data["type"],
                data["payload"],
                data["run_id"],
                tuple(data["agent_path"]),
                # a remote subagent's tokens name its delegation's namespace
                data.get("namespace") or self._where(ns),
            )
        )

    def _push_message(
        self, ns: tuple[str, ...], data: Any, streamed: set[str], partials: PartialObjects | None
    ) -> None:
        """Reasoning, text and partial-object chunks for a model's message (or token) of
        the supervisor or a subagent; a whole message whose tokens were streamed is skipped."""
        run = self._run
        message, meta = data
        own_path = meta.get(AGENT_PATH_KEY)  # a subagent run inside its parent's node
        if (meta.get("langgraph_node") != SUPERVISOR_NODE and own_path is None) or not isinstance(message, AIMessage):
            return
        if isinstance(message, AIMessageChunk):
            streamed.add(message.id or "")
        elif message.id in streamed:
            return
        path = tuple(own_path) if own_path is not None else self._agent_path(ns)
        where = meta[NAMESPACE_KEY] if own_path is not None else self._where(ns)
        reasoning = _reasoning_text(message)
        if reasoning:
            payload = {"text": reasoning, "message_id": message.id}
            self._push(make_chunk("reasoning-delta", payload, run.run_id, path, where))
        text = text_of(message)
        if text:
            self._push(make_chunk("text-delta", {"text": text, "message_id": message.id}, run.run_id, path, where))
        if partials is not None and path == (run.agent.id,):
            value = partials.feed(message)
            if value is not None:
                self._push(make_chunk("object-delta", {"object": value}, run.run_id, path, where))

    def _finish(self, result: GenerateResult, announce: list[PendingItem] | None = None) -> None:
        """End the stream with `result`: a chunk per approval or suspended tool it waits
        for (those of `announce`, when given: the others were streamed already), then
        `finish`."""
        run = self._run
        for item in result.suspended if announce is None else announce:
            if not item.is_interrupt:
                continue  # its tool-call chunk has been streamed; the caller answers it
            kind = "tool-call-suspended" if item.kind == "suspend" else "tool-call-approval"
            self._push(make_chunk(kind, item.model_dump(), run.run_id, item.agent_path, item.namespace))
        self._result = result
        payload: dict[str, Any] = {
            "finish_reason": result.finish_reason,
            # plain JSON (path -> usage dict), as every payload is
            "usage_by_agent": {path: u.model_dump() for path, u in result.usage_by_agent.items()},
        }
        if result.object is not None:
            payload["object"] = json_value(result.object)
        if result.error is not None:  # an answer that never matched the output schema
            payload["error"] = result.error.to_dict()
            self._push(make_chunk("error", {"error": type(result.error).__name__, "message": str(result.error)}, run.run_id, (run.agent.id,)))
        self._push(
            FinishChunk(
                payload=payload,
                run_id=run.run_id,
                agent_path=(run.agent.id,),
                finish_reason=result.finish_reason,
                usage=result.usage,
            )
        )

    @property
    async def full_stream(self) -> AsyncIterator[StreamChunk]:  # type: ignore[misc]
        """Every chunk of the run, in order."""
        index = 0
        while True:
            while index < len(self._chunks):
                yield self._chunks[index]
                index += 1
            if self._done:
                return
            self._changed.clear()
            if index < len(self._chunks) or self._done:
                continue
            await self._changed.wait()

    @property
    async def text_stream(self) -> AsyncIterator[str]:  # type: ignore[misc]
        """Text deltas of the top-level agent's answer."""
        own = (self._run.agent.id,)
        async for chunk in self.full_stream:
            if chunk.type == "text-delta" and chunk.agent_path == own:
                yield chunk.text

    @property
    async def object_stream(self) -> AsyncIterator[Any]:  # type: ignore[misc]
        """Partial objects of the top agent's answer as it streams, when the run has an
        output schema (SPEC §28); the last is `result.object` itself."""
        own = (self._run.agent.id,)
        async for chunk in self.full_stream:
            if chunk.type == "object-delta" and chunk.agent_path == own:
                yield chunk.payload["object"]
            elif chunk.type == "finish" and self._result is not None and self._result.object is not None:
                yield self._result.object

    async def result(self) -> GenerateResult:
        """The run's `GenerateResult` once it has ended (raises the run's error)."""
        await asyncio.shield(self._task)
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


class FinishedStream(AgentStream):
    """A stream of a result known at once (nothing to run): `start`, its pending items,
    `finish`."""

    def __init__(self, run: Run, result: GenerateResult) -> None:
        self._preset = result
        super().__init__(run)

    async def _pump(self) -> None:
        run, result = self._run, self._preset
        self._push(make_chunk("start", {"thread_id": run.thread_id}, run.run_id, (run.agent.id,)))
        self._finish(result)
        self._done = True
        self._changed.set()


def _reasoning_text(message: AIMessage) -> str:
    extra = message.additional_kwargs.get("reasoning_content")
    if isinstance(extra, str):
        return extra
    if isinstance(message.content, list):
        return "".join(
            str(part.get("reasoning") or part.get("thinking") or part.get("text") or "")
            for part in message.content
            if isinstance(part, dict) and part.get("type") in ("reasoning", "thinking")
        )
    return ""
