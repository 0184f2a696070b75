"""A run from its options to its end: checking the call, taking the thread and repairing
what a crashed run left (SPEC §17, §19), then remembering a pause or repairing the
thread after an abort or a failure."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import ValidationError

from supervisor_graph.checkpointers.leases import Lease
from supervisor_graph.run.chunks import Usage
from supervisor_graph.declaration.errors import PendingApprovalError
from supervisor_graph.declaration.models import check_credentials, model_strings
from supervisor_graph.nodes.context import RequestContext
from supervisor_graph.nodes.delegation import (
    RESOURCE_ID_KEY,
    RUN_ID_KEY,
    RUN_IDENTITY_KEYS,
    THREAD_ID_KEY,
    check_json,
)
from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions, merge_options
from supervisor_graph.nodes.tools import DECLINED_TEXT, INTERRUPTED_TOOL_TEXT
from supervisor_graph.nodes.versions import VERSIONS_KEY
from supervisor_graph.run.paused import PausedRun, PausedRuns
from supervisor_graph.run.results import GenerateResult, _client_tools, _pending
from supervisor_graph.memory.lease import ThreadLease
from supervisor_graph.run.repair import (
    ABORTED_TOOL_TEXT,
    DROPPED_TOOL_TEXT,
    close_unanswered,
    waiting_interrupts,
)

if TYPE_CHECKING:
    from supervisor_graph.agent import Agent

__all__ = ["ephemeral_saver", "ephemeral_store", "paused_runs"]

T = TypeVar("T")


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
    background: Any = None  # supervisor_graph.background.RunBackground

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
    notices_only: bool = False,
    host: Any = None,
) -> _Run:
    """A run ready to start. A thread's lease is taken here (or `lease`, one already held
    by the caller, is used) and released when the run ends. `notices_only`: no prompt;
    the run's input is the outcomes of background tasks the thread has not been told of
    (none: the input is empty, and the caller releases the run). `host`: a `Memory` used
    instead of the agent's (the until-idle calls without a thread host tasks in one)."""
    try:
        opts = RunOptions.model_validate(merge_options(agent.default_options, options))
    except ValidationError as exc:
        raise ValueError(f"invalid run options: {exc}") from None
    # the subagents an `agents` callable chooses for this call (SPEC §21)
    agent = agent.for_request(opts.request_context)
    # Check the input before the thread is taken: a refused call leaves it usable at once.
    messages = _input_messages(prompt) if resume is None and not notices_only else []
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
    background_agents = agent.has_background_subagents
    if opts.memory is None and background_agents and paused is None and resume is None:
        raise ValueError(
            f"agent {agent.id!r} has background subagents, whose outcomes are reported on a thread: pass "
            "memory={'thread': ...}, or call generate_until_idle / stream_until_idle, which host them for the call"
        )
    memory = host if host is not None else agent.memory
    if opts.memory is not None:
        if memory is None:
            raise ValueError(
                f"memory={{'thread': ...}} needs storage: declare Agent(id={agent.id!r}, memory=Memory(storage=...))"
            )
        opened = await memory.opened()
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
    if opts.versions is not None:
        opts = await _select_versions(agent, opts, options, handle)
    if opts.memory is not None and background_agents:
        from supervisor_graph.background.host import RunBackground

        assert thread_id is not None
        handle.background = RunBackground(agent, opened, thread_id, resource_id)
    if resume is not None:
        graph_input: Any = resume
        first_id = None
    else:
        graph_input = {"messages": messages}
        first_id = messages[0].id if messages else None
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
        background=handle.background,
    )
    if lease is not None and resume is None:
        try:
            assert lease.acquired is not None
            await _settle_thread(run, lease.acquired)
            if run.background is not None:
                await _deliver_outcomes(run)
        except BaseException:
            await run.release(ran=False)  # a repair that did not happen is owed to the next run
            raise
    return run


async def _deliver_outcomes(run: _Run) -> None:
    """Put the outcomes of background tasks the thread has not been told of before the
    run's input, with their final status, so they land in one checkpoint (SPEC §12)."""
    from supervisor_graph.background.host import outcomes

    assert run.background is not None
    state = await run.graph.aget_state(run.config)
    tasks = state.values.get("background_tasks") or {}
    if not tasks:
        return
    notices, update = await outcomes(run.background, tasks, state.values.get("messages") or [])
    if not notices:
        return
    for message in notices:
        message.id = str(uuid.uuid4())
    run.input["messages"] = [*notices, *run.input["messages"]]
    run.input["background_tasks"] = update
    run.first_input_id = notices[0].id
    run.input_count = len(run.input["messages"])


async def _select_versions(agent: Agent, opts: RunOptions, options: dict[str, Any], handle: RunHandle) -> RunOptions:
    """Attach the call's version resolver (SPEC §13) and apply the top-level agent's version."""
    from supervisor_graph.memory.versions import RunVersions

    assert opts.versions is not None
    handle.versions = RunVersions(opts.versions, agent.memory.versions if agent.memory is not None else None)
    handle.request_context.set(VERSIONS_KEY, opts.versions.model_dump(mode="json"))
    handle.override = await handle.versions.resolve(agent.id)
    if handle.override is not None and handle.override.max_steps is not None and "max_steps" not in options:
        return opts.model_copy(update={"max_steps": handle.override.max_steps})
    return opts


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
