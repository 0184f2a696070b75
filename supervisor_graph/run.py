"""Running a declared agent: `generate`, `stream` and their sync twins (SPEC §5)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import BaseModel, Field, ValidationError

from supervisor_graph.checkpointers.leases import Lease
from supervisor_graph.chunks import FinishChunk, StreamChunk, Usage, make_chunk
from supervisor_graph.errors import PendingApprovalError
from supervisor_graph.models import check_credentials, model_strings
from supervisor_graph.nodes.context import RequestContext
from supervisor_graph.nodes.delegation import (
    RESOURCE_ID_KEY,
    RUN_ID_KEY,
    RUN_IDENTITY_KEYS,
    THREAD_ID_KEY,
    DelegationResult,
    check_json,
)
from supervisor_graph.nodes.events import EVENT_KEY
from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions, merge_options
from supervisor_graph.nodes.routing import SUPERVISOR_NODE, last_turn, unanswered
from supervisor_graph.nodes.state import usage_of_run
from supervisor_graph.nodes.text import text_of
from supervisor_graph.nodes.tools import DECLINED_TEXT, INTERRUPTED_TOOL_TEXT
from supervisor_graph.paused import PausedRun, PausedRuns
from supervisor_graph.thread_lease import ThreadLease
from supervisor_graph.tools import is_client_tool
from supervisor_graph.transcript import (
    ABORTED_TOOL_TEXT,
    DROPPED_TOOL_TEXT,
    close_unanswered,
    waiting_interrupts,
)

if TYPE_CHECKING:
    from supervisor_graph.agent import Agent

__all__ = ["AgentStream", "GenerateResult", "PendingItem", "generate", "run_sync", "stream", "stream_sync"]

T = TypeVar("T")


class PendingItem(BaseModel):
    """Something the run waits for: an approval, a suspended tool, or a client tool."""

    kind: str
    interrupt_id: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    agent_path: tuple[str, ...] = ()
    run_id: str | None = None
    payload: Any = None
    resume_schema: dict[str, Any] | None = None
    """JSON schema the resume data must match (a suspended tool with a `resume_schema`)."""
    namespace: str = ""
    """Checkpoint namespace of the graph whose tool paused (`""` for the top-level agent;
    a delegation's namespace otherwise, which tells concurrent delegations apart)."""

    @property
    def is_interrupt(self) -> bool:
        """An approval or a suspended tool, answered by resuming the run; a `client_tool`
        item is answered instead with a `ToolMessage` as the next call's prompt."""
        return self.kind != "client_tool"


class GenerateResult(BaseModel):
    """The outcome of a run."""

    model_config = {"arbitrary_types_allowed": True}

    text: str
    messages: list[BaseMessage]
    usage: Usage
    finish_reason: str
    run_id: str
    thread_id: str | None = None
    suspended: list[PendingItem] = Field(default_factory=list)
    delegations: list[DelegationResult] = Field(default_factory=list)
    """This run's delegations by the top-level agent, in the order they finished (the
    `DelegationResult` that `on_delegation_complete` sees as `ctx.result`; kept in
    memory, never in the parent's thread)."""


# -- preparing a run ------------------------------------------------------------

@dataclass(slots=True)
class _Run:
    agent: Agent
    graph: Any
    saver: Any
    input: Any
    config: RunnableConfig
    context: RunContext
    options: RunOptions
    run_id: str
    thread_id: str | None
    first_input_id: str | None
    input_count: int = 0
    lease: ThreadLease | None = None
    durability: Any = None
    ephemeral: bool = False
    # how the run ended: paused on approvals or not (None: it did not get to say)
    waiting: bool | None = None

    async def release(self, *, ran: bool = True) -> None:
        if self.lease is not None:
            await self.lease.release(ran=ran, waiting=self.waiting if ran else None)


def _input_messages(prompt: Any) -> list[BaseMessage]:
    if isinstance(prompt, str):
        messages: list[BaseMessage] = [HumanMessage(content=prompt)]
    elif isinstance(prompt, BaseMessage):
        messages = [prompt]
    elif isinstance(prompt, Sequence) and prompt and all(isinstance(m, BaseMessage) for m in prompt):
        messages = list(prompt)
    else:
        raise TypeError("prompt must be a string, a LangChain message or a non-empty list of messages")
    for message in messages:
        if message.id is None:
            message.id = str(uuid.uuid4())
    return messages


_ephemeral: Any = None
_ephemeral_store: Any = None


def ephemeral_store() -> Any:
    """The process's store for runs without `memory` (its tool-call journal lives as long
    as the process, like their checkpoints)."""
    global _ephemeral_store
    if _ephemeral_store is None:
        from langgraph.store.memory import InMemoryStore

        _ephemeral_store = InMemoryStore()
    return _ephemeral_store


def ephemeral_saver() -> Any:
    """The process's saver for runs without `memory`: they are checkpointed only when
    they pause (durability "exit"), so an approval can still be answered, and their
    thread is deleted when they end."""
    global _ephemeral
    if _ephemeral is None:
        from langgraph.checkpoint.memory import InMemorySaver

        from supervisor_graph.checkpointers.delta_cache import with_delta_cache

        _ephemeral = with_delta_cache(InMemorySaver, compact_versions=True)()
    return _ephemeral


# run id -> paused run, for runs resumed by run id (bounded: see supervisor_graph.paused)
paused_runs = PausedRuns()


async def _prepare(
    agent: Agent,
    prompt: Any,
    options: dict[str, Any],
    *,
    resume: Any = None,
    run_id: str | None = None,
    paused: PausedRun | None = None,
    lease: ThreadLease | None = None,
) -> _Run:
    """A run ready to start. A thread's lease is taken here (or `lease`, one already held
    by the caller, is used) and released when the run ends."""
    try:
        opts = RunOptions.model_validate(merge_options(agent.default_options, options))
    except ValidationError as exc:
        raise ValueError(f"invalid run options: {exc}") from None
    # Check the input before the thread is taken: a refused call leaves it usable at once.
    messages = _input_messages(prompt) if resume is None else []
    for value in _model_strings(agent, opts):
        check_credentials(value)
    run_uuid = uuid.UUID(run_id) if run_id else uuid.uuid4()
    config: RunnableConfig = {"run_id": run_uuid, "recursion_limit": 10_000}
    thread_id = resource_id = None
    durability = None
    durable = False
    store = ephemeral_store()
    ephemeral = opts.memory is None and (paused is None or paused.ephemeral)
    if ephemeral:
        saver = paused.saver if paused is not None else ephemeral_saver()
        config["configurable"] = {"thread_id": paused.thread_id if paused is not None else f"ephemeral-{run_uuid}"}
        durability = "exit"
    elif opts.memory is None and paused is not None:
        opts = opts.model_copy(update={"memory": {"thread": paused.thread_id, "resource": paused.resource_id}})
    if opts.memory is not None:
        if agent.memory is None:
            raise ValueError(
                f"memory={{'thread': ...}} needs storage: declare Agent(id={agent.id!r}, memory=Memory(storage=...))"
            )
        opened = await agent.memory.opened()
        saver, store = opened.saver, opened.store
        thread_id, resource_id = opts.memory.thread, opts.memory.resource
        config["configurable"] = {"thread_id": thread_id}
        config["metadata"] = {"resource_id": resource_id or ""}
        durable = not isinstance(saver, InMemorySaver)
        if durable:
            if opts.request_context is not None:
                check_json(
                    {k: v for k, v in opts.request_context.to_dict().items() if k not in RUN_IDENTITY_KEYS}, "generate()"
                )
            # each step is saved before the next starts, so the step that dispatches a
            # tool or a delegation is on disk before its side effects begin (SPEC §19)
            durability = "sync"
        if lease is None:
            lease = ThreadLease(opened.leases, thread_id)
            await lease.acquire()
    request_context = opts.request_context if opts.request_context is not None else RequestContext()
    request_context.set(RUN_ID_KEY, str(run_uuid))
    if thread_id is not None:
        request_context.set(THREAD_ID_KEY, thread_id)
        request_context.set(RESOURCE_ID_KEY, resource_id)
    handle = RunHandle(
        run_id=str(run_uuid),
        agent_path=(agent.id,),
        request_context=request_context,
        abort_signal=opts.abort_signal,
        thread_id=thread_id,
        resource_id=resource_id,
        root_context=request_context,
        durable=durable,
    )
    if resume is not None:
        graph_input: Any = resume
        first_id = None
    else:
        graph_input = {"messages": messages}
        first_id = messages[0].id
    run = _Run(
        agent=agent,
        graph=agent.graph_with(saver, store),
        saver=saver,
        input=graph_input,
        config=config,
        context=RunContext.for_run(opts, handle),
        options=opts,
        run_id=str(run_uuid),
        thread_id=thread_id,
        first_input_id=first_id,
        input_count=0 if resume is not None else len(graph_input["messages"]),
        lease=lease,
        durability=durability,
        ephemeral=ephemeral,
    )
    if lease is not None and resume is None:
        try:
            assert lease.acquired is not None
            await _settle_thread(run, lease.acquired)
        except BaseException:
            await run.release(ran=False)  # a repair that did not happen is owed to the next run
            raise
    return run


def _model_strings(agent: Agent, opts: RunOptions) -> Iterator[str]:
    yield from model_strings(agent)
    if opts.is_task_complete is not None:
        for scorer in opts.is_task_complete.scorers:
            if isinstance(getattr(scorer, "model_string", None), str):
                yield scorer.model_string


async def _settle_thread(run: _Run, lease: Lease) -> None:
    """Before new input runs on a thread: close what a crashed run left unanswered, and
    refuse (or decline) approvals still waiting (SPEC §17, §19). The lease row says
    whether either can be the case, so a thread with neither is not read here."""
    if lease.repair:  # the previous run's process died mid-run
        await close_unanswered(
            run.graph, run.config, lambda call: INTERRUPTED_TOOL_TEXT, "error", keep=_client_tools(run.agent)
        )
    if not (lease.waiting or lease.repair):
        return
    waiting, consumed = await waiting_interrupts(run.graph, run.saver, run.config)
    if consumed and not waiting:  # approved calls cut short by a crash: they end as unknown
        await close_unanswered(run.graph, run.config, lambda call: INTERRUPTED_TOOL_TEXT, "error")
        return
    if not waiting:
        return
    if run.options.pending == "decline":
        declined = {item.value.get("tool_call_id") for item in waiting if isinstance(item.value, dict)}
        await close_unanswered(
            run.graph, run.config, lambda call: DECLINED_TEXT if call["id"] in declined else DROPPED_TOOL_TEXT, "stop"
        )
        return
    items = _pending(run, waiting)
    names = ", ".join(f"{item.tool_name} ({item.kind}, interrupt {item.interrupt_id})" for item in items)
    raise PendingApprovalError(
        f"thread {run.thread_id!r} waits for answers before it takes a new message: {names}; answer them "
        '(approve_tool_call / decline_tool_call / resume_generate) or pass pending="decline" to decline them',
        items,
    )


async def _until_aborted(run: _Run, coro: Coroutine[Any, Any, T]) -> tuple[T | None, bool]:
    """Run `coro`; cancel it (and any model call in flight) when the abort signal fires."""
    signal = run.options.abort_signal
    if signal is None:
        return await coro, False
    if signal.is_set():
        coro.close()
        return None, True
    task = asyncio.ensure_future(coro)
    waiter = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if task.done():
        return task.result(), False
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    return None, True


def _new_messages(run: _Run, messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], int]:
    """This run's messages after its input, and the index its input starts at."""
    if run.first_input_id is not None:
        for i in range(len(messages) - 1, -1, -1):
            if messages[i].id == run.first_input_id:
                return list(messages[i + run.input_count :]), i
    from supervisor_graph.nodes.state import run_start

    start = run_start(messages)
    return list(messages[start + 1 :]), start


def _pending(run: _Run, interrupts: Sequence[Any]) -> list[PendingItem]:
    items = []
    for item in interrupts:
        value = item.value if isinstance(item.value, dict) else {"payload": item.value}
        items.append(
            PendingItem(
                kind=value.get("kind", "approval"),
                interrupt_id=item.id,
                tool_call_id=value.get("tool_call_id"),
                tool_name=value.get("tool_name"),
                args=value.get("args") or {},
                agent_path=tuple(value.get("agent_path") or (run.agent.id,)),
                run_id=run.run_id,
                payload=value.get("payload", value),
                namespace=value.get("namespace") or "",
                resume_schema=value.get("resume_schema"),
            )
        )
    return items


def _client_tools(agent: Agent) -> set[str]:
    """Names of the agent's tools that the caller runs (no `execute`)."""
    return {name for name, tool in agent.tools.items() if is_client_tool(tool)}


def _client_calls(run: _Run, messages: Sequence[BaseMessage]) -> list[PendingItem]:
    """The top-level agent's client-tool calls its run ended on, for the caller to answer."""
    client = _client_tools(run.agent)
    return [
        PendingItem(
            kind="client_tool",
            tool_call_id=call["id"],
            tool_name=call["name"],
            args=call["args"],
            agent_path=(run.agent.id,),
            run_id=run.run_id,
        )
        for call in unanswered(messages)
        if call["name"] in client
    ]


def _result(run: _Run, values: dict[str, Any] | None, aborted: bool) -> GenerateResult:
    values = values or {}
    messages = values.get("messages") or []
    new, start = _new_messages(run, messages)
    interrupts = values.get("__interrupt__") or ()
    _, last = last_turn(messages)
    if aborted:
        reason = "abort"
    elif interrupts:
        reason = "suspended"
    else:
        reason = values.get("finish_reason") or "stop"
    return GenerateResult(
        # a hard stop (SPEC §7) ends on a turn whose tool calls never ran: its text is the answer
        text=text_of(last) if last is not None and (not last.tool_calls or reason == "stop") and not aborted else "",
        messages=new,
        usage=Usage(**usage_of_run(messages, start)),
        finish_reason=reason,
        run_id=run.run_id,
        thread_id=run.thread_id,
        suspended=_pending(run, interrupts) or (_client_calls(run, messages) if reason == "tool-calls" else []),
        delegations=[record.to_result() for record in run.context.handle.delegations.values()]  # type: ignore[union-attr]
        if run.context.handle is not None
        else [],
    )


async def _after(run: _Run, result: GenerateResult) -> None:
    """Remember a paused run; forget an ephemeral run's thread once it has ended."""
    configurable = run.config.get("configurable") or {}
    run.waiting = any(item.is_interrupt for item in result.suspended)
    if run.waiting:
        paused = PausedRun(
            thread_id=configurable["thread_id"],
            saver=run.saver,
            ephemeral=run.ephemeral,
            resource_id=run.options.memory.resource if run.options.memory else None,
        )
        await paused_runs.add(run.run_id, paused)
        return
    paused_runs.pop(run.run_id)
    if run.ephemeral:
        await run.saver.adelete_thread(configurable["thread_id"])


async def _repair_thread(run: _Run, reason: str = "abort") -> dict[str, Any] | None:
    """The thread after an abort or a failure, made consistent: every tool call the
    last turn made gets a result, so the next call on the thread (and its model) sees a
    well-formed conversation with everything that completed."""
    if run.thread_id is None:
        if run.ephemeral:
            await _after(run, GenerateResult(text="", messages=[], usage=Usage(), finish_reason="abort", run_id=run.run_id))
        return None
    return await close_unanswered(run.graph, run.config, lambda call: ABORTED_TOOL_TEXT, reason)


async def generate(agent: Agent, prompt: Any, **options: Any) -> GenerateResult:
    """Run `agent` on `prompt` to the end (see `Agent.generate`)."""
    run = await _prepare(agent, prompt, options)
    return await _generate(run)


async def _generate(run: _Run) -> GenerateResult:
    assert run.context.handle is not None
    run.context.handle.stream_events = False  # nobody reads them: nodes skip building events
    try:
        values, aborted = await _until_aborted(
            run, run.graph.ainvoke(run.input, run.config, context=run.context, durability=run.durability)
        )
        if aborted:
            values = await _repair_thread(run)
        result = _result(run, values, aborted)
        await _after(run, result)
        return result
    except Exception:
        await _repair_thread(run, "error")
        raise
    finally:
        await run.release()


# -- streaming ------------------------------------------------------------------


class AgentStream:
    """A run in progress: iterate `full_stream` or `text_stream` (both may be read, each
    from the start), then `await stream.result()`."""

    def __init__(self, run: _Run) -> None:
        self._run = run
        self._chunks: list[StreamChunk] = []
        self._changed = asyncio.Event()
        self._done = False
        self._result: GenerateResult | None = None
        self._error: BaseException | None = None
        self._paths: dict[tuple[str, ...], tuple[str, ...]] = {(): (run.agent.id,)}
        self._task = asyncio.ensure_future(self._pump())

    @property
    def run_id(self) -> str:
        return self._run.run_id

    def _push(self, chunk: StreamChunk) -> None:
        self._chunks.append(chunk)
        self._changed.set()

    def _agent_path(self, ns: tuple[str, ...]) -> tuple[str, ...]:
        path = self._paths.get(ns)
        if path is None:
            agent = self._run.agent
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
        last_values: dict[str, Any] | None = None
        interrupts: dict[str, Any] = {}  # each pause can arrive in an update of its own
        streamed: set[str] = set()
        try:

            async def consume() -> None:
                nonlocal last_values
                async for ns, mode, data in run.graph.astream(
                    run.input,
                    run.config,
                    context=run.context,
                    stream_mode=["values", "messages", "custom", "updates"],
                    subgraphs=True,
                    durability=run.durability,
                ):
                    if mode == "custom":
                        if isinstance(data, dict) and data.get(EVENT_KEY):
                            emit(
                                make_chunk(
                                    data["type"], data["payload"], data["run_id"], tuple(data["agent_path"]), "|".join(ns)
                                )
                            )
                    elif mode == "messages":
                        message, meta = data
                        if meta.get("langgraph_node") != SUPERVISOR_NODE or not isinstance(message, AIMessage):
                            continue
                        if isinstance(message, AIMessageChunk):
                            streamed.add(message.id or "")
                        elif message.id in streamed:
                            continue
                        path = self._agent_path(ns)
                        where = "|".join(ns)
                        reasoning = _reasoning_text(message)
                        if reasoning:
                            payload = {"text": reasoning, "message_id": message.id}
                            emit(make_chunk("reasoning-delta", payload, run.run_id, path, where))
                        text = text_of(message)
                        if text:
                            emit(make_chunk("text-delta", {"text": text, "message_id": message.id}, run.run_id, path, where))
                    elif mode == "values" and not ns:
                        last_values = data
                    elif mode == "updates" and not ns and isinstance(data, dict) and "__interrupt__" in data:
                        interrupts.update((item.id, item) for item in data["__interrupt__"])

            _, aborted = await _until_aborted(run, consume())
            if interrupts and last_values is not None and not aborted:
                last_values = {**last_values, "__interrupt__": tuple(interrupts.values())}
            if aborted:
                last_values = await _repair_thread(run)
                emit(make_chunk("abort", {"reason": getattr(run.options.abort_signal, "reason", None)}, run.run_id, (run.agent.id,)))
            result = _result(run, last_values, aborted)
            await _after(run, result)
            for item in result.suspended:
                if not item.is_interrupt:
                    continue  # its tool-call chunk has been streamed; the caller answers it
                kind = "tool-call-suspended" if item.kind == "suspend" else "tool-call-approval"
                emit(make_chunk(kind, item.model_dump(), run.run_id, item.agent_path, item.namespace))
            self._result = result
            emit(
                FinishChunk(
                    payload={"finish_reason": result.finish_reason},
                    run_id=run.run_id,
                    agent_path=(run.agent.id,),
                    finish_reason=result.finish_reason,
                    usage=result.usage,
                )
            )
        except BaseException as exc:  # surfaced to readers as an error chunk and by result()
            self._error = exc
            if isinstance(exc, Exception):
                await _repair_thread(run, "error")
            emit(make_chunk("error", {"error": type(exc).__name__, "message": str(exc)}, run.run_id, (run.agent.id,)))
            if not isinstance(exc, Exception):
                raise
        finally:
            await run.release()
            self._done = True
            self._changed.set()

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

    async def result(self) -> GenerateResult:
        """The run's `GenerateResult` once it has ended (raises the run's error)."""
        await asyncio.shield(self._task)
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


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


async def stream(agent: Agent, prompt: Any, **options: Any) -> AgentStream:
    """Start `agent` on `prompt` and stream it (see `Agent.stream`)."""
    return AgentStream(await _prepare(agent, prompt, options))


async def resume_run(agent: Agent, value: Any, *, streaming: bool, **options: Any) -> Any:
    run = await _prepare(agent, None, options, resume=Command(resume=value))
    if streaming:
        return AgentStream(run)
    return await _generate(run)


# -- sync twins -----------------------------------------------------------------

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    """One event loop thread for every sync call, so database connections opened for
    one call serve the next (and work inside notebooks that run their own loop)."""
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="supervisor-graph-sync", daemon=True).start()
        return _loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion from synchronous code."""
    return asyncio.run_coroutine_threadsafe(coro, _background_loop()).result()


async def _next(chunks: AsyncIterator[StreamChunk]) -> StreamChunk:
    return await chunks.__anext__()


def stream_sync(agent: Agent, prompt: Any, **options: Any) -> Iterator[StreamChunk]:
    """`stream` for synchronous code: yields full-stream chunks."""
    loop = _background_loop()
    agent_stream = run_sync(stream(agent, prompt, **options))
    chunks = agent_stream.full_stream.__aiter__()
    while True:
        try:
            yield asyncio.run_coroutine_threadsafe(_next(chunks), loop).result()
        except StopAsyncIteration:
            return
