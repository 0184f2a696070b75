"""One facade call from its start to its result, read top to bottom (SPEC §5, §17, §19).

`Run.start` checks the options and the input, takes the thread's lease, repairs what a
crashed run left, resolves versions and hosts background tasks; `Run.generate` (or an
`AgentStream` over `Run.drive`) runs the graph; `Run.finish` builds the result and
remembers a pause; `Run.release` gives the thread back. The helpers it calls (results,
repair, storage, background hosts) never call back into it."""

from __future__ import annotations

import asyncio
import time
import uuid
import weakref
from collections.abc import Coroutine, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from pydantic import ValidationError

from supervisor_graph.background.host import RunBackground
from supervisor_graph.background.outcomes import outcomes
from supervisor_graph.declaration.models import check_credentials, model_strings
from supervisor_graph.memory.lease import ThreadLease
from supervisor_graph.memory.versions import RunVersions
from supervisor_graph.nodes.delegation.control import (
    RESOURCE_ID_KEY,
    RUN_ID_KEY,
    THREAD_ID_KEY,
)
from supervisor_graph.nodes.options import MemoryOptions, RunContext, RunHandle, RunOptions, merge_options
from supervisor_graph.nodes.scope.context import RequestContext
from supervisor_graph.nodes.scope.versions import VERSIONS_KEY
from supervisor_graph.nodes.steps.budget import open_budget
from supervisor_graph.run.busy import discard_last_run, raise_if_lost, stop_reason, until_stopped
from supervisor_graph.run.call_config import CallConfig
from supervisor_graph.run.chunks import Usage
from supervisor_graph.run.paused import PausedRun, paused_runs
from supervisor_graph.run.repair import ABORTED_TOOL_TEXT, close_unanswered, repair_after, settle_thread
from supervisor_graph.run.rerun import DelegationEdit, edited_fork
from supervisor_graph.run.results import GenerateResult, background_pending, build_result
from supervisor_graph.run.storage import RunStorage, open_thread, run_storage

if TYPE_CHECKING:
    from supervisor_graph.agent import Agent

__all__ = ["CallConfig", "Run", "answer_outcomes", "host_background"]

T = TypeVar("T")


@dataclass(slots=True)
class Run:
    """A facade call: what it runs, on which thread, and how it ended."""

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
    background: RunBackground | None = None
    # when the run was ready to drive (a rollback discards what it saved from then on)
    started_at: float = 0.0
    # the fork an `edit=` made, which the run continues
    edited: RunnableConfig | None = None

    @property
    def fork_from(self) -> str | None:
        """The checkpoint this run forks from (`memory={..., "checkpoint": ID}`)."""
        return self.options.memory.checkpoint if self.options.memory is not None else None

    @property
    def entry_config(self) -> RunnableConfig:
        """The config the graph starts with: the run's, at the checkpoint it forks from.
        Everything read after the start (results, repairs) reads the thread's latest."""
        if self.edited is not None:
            return self.edited
        fork = self.fork_from
        if fork is None:
            return self.config
        return {**self.config, "configurable": {**self.config["configurable"], "checkpoint_id": fork}}

    # -- 1. start: options, input, thread, repairs, versions, background hosts ---------

    @classmethod
    async def start(
        cls,
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
    ) -> Run:
        """A run ready to drive. A thread's lease is taken here (or `lease`, one already
        held by the caller, is used) and released when the run ends. `notices_only`: no
        prompt; the run's input is the outcomes of background tasks the thread has not
        been told of (none: the input is empty, and the caller releases the run). `host`:
        a `Memory` used instead of the agent's (the until-idle calls without a thread host
        tasks in one)."""
        options = dict(options)
        traced = CallConfig.of(options.pop("config", None))
        edit = _edit_of(options.pop("edit", None), resume)
        try:
            opts = _options(agent, options)
        except ValidationError as exc:
            raise ValueError(f"invalid run options: {exc}") from None
        # the subagents an `agents` callable chooses for this call (SPEC §21)
        agent = agent.for_request(opts.request_context)
        # Check the input before the thread is taken: a refused call leaves it usable at once.
        messages = _input_messages(prompt) if resume is None and not notices_only and edit is None else []
        for value in _model_strings(agent, opts):
            check_credentials(value)
        run_uuid = uuid.UUID(run_id) if run_id else uuid.uuid4()
        config: RunnableConfig = traced.runnable_config(run_uuid)
        if edit is not None and opts.memory is None:
            raise ValueError("edit= runs a delegation of a thread again: pass memory={'thread': ...}")
        if resume is not None and opts.memory is not None and opts.memory.checkpoint is not None:
            raise ValueError("memory={..., 'checkpoint': ...} forks with a new message; an answer to a pause goes to the thread's latest run")
        where, opts = run_storage(agent, opts, config, run_uuid, paused, resume is not None, lease)
        if opts.memory is not None:
            await open_thread(where, host if host is not None else agent.memory, agent, opts, config, notices_only)
        handle = _run_handle(agent, opts, run_uuid, where)
        if opts.versions is not None:
            opts = await _select_versions(agent, opts, options, handle)
        if opts.memory is not None and agent.has_background_subagents:
            assert where.thread_id is not None
            handle.background = host_background(agent, where.opened, where.thread_id, where.resource_id)
        if resume is not None or edit is not None:
            graph_input: Any = resume  # an edit continues its fork without input
            first_id = None
        else:
            graph_input = {"messages": messages}
            first_id = messages[0].id if messages else None
        run = cls(
            agent=agent,
            graph=agent.graph_with(where.saver, where.store),
            saver=where.saver,
            input=graph_input,
            config=config,
            context=RunContext.for_run(opts, handle),
            options=opts,
            run_id=str(run_uuid),
            thread_id=where.thread_id,
            first_input_id=first_id,
            input_count=0 if graph_input is None or resume is not None else len(graph_input["messages"]),
            lease=where.lease,
            durability=where.durability,
            ephemeral=where.ephemeral,
            background=handle.background,
        )
        if edit is not None:
            try:
                run.edited = await edited_fork(run.graph, run.config, edit, run.fork_from)
            except BaseException:
                await run.release(ran=False)
                raise
        elif run.lease is not None and resume is None and run.fork_from is None:
            # a fork leaves the thread's latest branch as it is, paused or not: it can be continued
            await run._settle(run.lease)
        run.started_at = time.time()
        return run

    async def _settle(self, lease: ThreadLease) -> None:
        """Repair what a crashed run left on the thread and deliver the outcomes it was
        not told of; when that fails, the thread is given back unrepaired."""
        try:
            assert lease.acquired is not None
            await settle_thread(self, lease.acquired)
            if self.background is not None:
                await self._deliver_outcomes()
        except BaseException:
            await self.release(ran=False)  # a repair that did not happen is owed to the next run
            raise

    async def _deliver_outcomes(self) -> None:
        """Put the outcomes of background tasks the thread has not been told of before the
        run's input, with their final status, so they land in one checkpoint (SPEC §12)."""
        assert self.background is not None
        state = await self.graph.aget_state(self.config)
        tasks = state.values.get("background_tasks") or {}
        if not tasks:
            return
        notices, update = await outcomes(self.background, tasks, state.values.get("messages") or [])
        if not notices:
            return
        for message in notices:
            message.id = str(uuid.uuid4())
        self.input["messages"] = [*notices, *self.input["messages"]]
        self.input["background_tasks"] = update
        if any(record.get("bail") for record in update.values()):
            self.input["stop_at"] = 1  # a completion hook bailed: the run ends once it has answered
        self.first_input_id = notices[0].id
        self.input_count = len(self.input["messages"])

    # -- 2. drive the graph -----------------------------------------------------------

    async def generate(self) -> GenerateResult:
        """Drive the graph to its end (or a pause) and return the result; the thread is
        released whatever happens. `AgentStream` does the same while streaming."""
        assert self.context.handle is not None
        self.context.handle.stream_events = False  # nobody reads them: nodes skip building events
        try:
            values, aborted = await self.until_aborted(
                self.graph.ainvoke(self.input, self.entry_config, context=self.context, durability=self.durability)
            )
            if aborted:
                values = await self.repair()
            return await self.finish(values, aborted)
        except Exception as exc:
            await repair_after(self, exc)
            raise
        finally:
            await self.release()

    async def until_aborted(self, coro: Coroutine[Any, Any, T]) -> tuple[T | None, bool]:
        """Run `coro`; cancel it (and any model call in flight) when the abort signal
        fires, or a new message on the thread asks the run to stop (SPEC §29)."""
        lease = self.lease
        signals = [s for s in (self.options.abort_signal, lease.stopped if lease else None) if s is not None]
        if not signals:
            return await coro, False
        if self.options.abort_signal is None and lease is not None:
            return await until_stopped(coro, lease)
        if any(signal.is_set() for signal in signals):
            coro.close()
            raise_if_lost(lease)
            return None, True
        task = asyncio.ensure_future(coro)
        waiters = [asyncio.ensure_future(signal.wait()) for signal in signals]
        try:
            await asyncio.wait({task, *waiters}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
        if task.done():
            return task.result(), False
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        raise_if_lost(lease)
        return None, True

    # -- 3. the result ------------------------------------------------------------------

    async def finish(self, values: dict[str, Any] | None, aborted: bool) -> GenerateResult:
        """The run's result, with the approvals its paused background tasks wait for; a
        paused run is remembered, an ended ephemeral run's thread forgotten."""
        result = build_result(self, values, aborted)
        if self.background is not None:
            waiting = [r for r in await self.background.records() if r.get("waiting")]
            result.suspended.extend(background_pending(waiting, self.run_id))
        await self._remember(result)
        return result

    async def _remember(self, result: GenerateResult) -> None:
        configurable = self.config.get("configurable") or {}
        self.waiting = any(item.is_interrupt for item in result.suspended)
        if self.waiting:
            paused = PausedRun(
                thread_id=configurable["thread_id"],
                saver=self.saver,
                ephemeral=self.ephemeral,
                resource_id=self.options.memory.resource if self.options.memory else None,
            )
            await paused_runs.add(self.run_id, paused)
            return
        paused_runs.pop(self.run_id)
        if self.ephemeral:
            await self.saver.adelete_thread(configurable["thread_id"])

    async def repair(self, reason: str = "abort") -> dict[str, Any] | None:
        """The thread after an abort or a failure, made consistent: every tool call the
        last turn made gets a result, so the next call on the thread (and its model) sees a
        well-formed conversation with everything that completed."""
        if self.thread_id is None:
            if self.ephemeral:
                ended = GenerateResult(text="", messages=[], usage=Usage(), finish_reason="abort", run_id=self.run_id)
                await self._remember(ended)
            return None
        settle = getattr(self.saver, "settle_writes", None)
        if settle is not None:  # what the stopped steps were writing is stored first (postgres.py)
            await settle(self.thread_id)
        if reason == "abort" and self.lease is not None and self.lease.stop == "rollback":
            # a resumed run goes with the run it resumed (SPEC §29: approvals included)
            await discard_last_run(self.graph, self.saver, self.config, None if self.input_count == 0 else self.started_at)
            return None
        return await close_unanswered(self.graph, self.config, lambda call: ABORTED_TOOL_TEXT, reason)

    @property
    def abort_reason(self) -> Any:
        """Why the run was aborted: the abort signal's reason, or the new message's."""
        if self.lease is not None and self.lease.stop is not None:
            return stop_reason(self.lease.stop)
        return getattr(self.options.abort_signal, "reason", None)

    # -- 4. release -----------------------------------------------------------------------

    async def release(self, *, ran: bool = True) -> None:
        if self.lease is not None:
            await self.lease.release(ran=ran, waiting=self.waiting if ran else None)


def host_background(agent: Agent, opened: Any, thread_id: str, resource_id: str | None) -> RunBackground:
    """The host of a thread's background tasks; when a task ends, the supervisor answers
    its outcome in a run of its own (`answer_outcomes`)."""
    return RunBackground(agent, opened, thread_id, resource_id, answer=answer_outcomes)


def _run_handle(agent: Agent, opts: RunOptions, run_uuid: uuid.UUID, where: RunStorage) -> RunHandle:
    """The run's handle, which its nodes read: its identity (also in its request context),
    thread, abort signal and budget."""
    request_context = opts.request_context if opts.request_context is not None else RequestContext()
    request_context.set(RUN_ID_KEY, str(run_uuid))
    if where.thread_id is not None:
        request_context.set(THREAD_ID_KEY, where.thread_id)
        request_context.set(RESOURCE_ID_KEY, where.resource_id)
    return RunHandle(
        run_id=str(run_uuid),
        agent_path=(agent.id,),
        request_context=request_context,
        abort_signal=opts.abort_signal,
        thread_id=where.thread_id,
        resource_id=where.resource_id,
        root_context=request_context,
        durable=where.durable,
        budget=open_budget(opts.budget, agent.budget),  # counted from here (nodes/steps/budget.py)
    )

def _edit_of(value: Any, resume: Any) -> DelegationEdit | None:
    """`edit=`, checked: a delegation to run again with a new prompt (`rerun`)."""
    if value is None:
        return None
    if resume is not None:
        raise ValueError("edit= runs a delegation again on a thread; an answer to a pause cannot carry one")
    try:
        return DelegationEdit.model_validate(value)
    except ValidationError as exc:
        raise ValueError(f"invalid run options: edit: {exc}") from None


def _options(agent: Agent, options: dict[str, Any]) -> RunOptions:
    """The call's validated options. Most calls give a thread only: `default_options`,
    validated once, with that thread (a request context in the defaults is each run's
    own copy, so those calls take the whole validation)."""
    defaults = agent.defaults
    if options.keys() <= {"memory"} and "memory" not in agent.default_options and defaults.request_context is None:
        value = options.get("memory")
        memory = MemoryOptions.model_validate({"thread": value} if isinstance(value, str) else value) if value is not None else None
        return defaults.model_copy(update={"memory": memory})
    return RunOptions.model_validate(merge_options(agent.default_options, options))


async def answer_outcomes(agent: Agent, memory: dict[str, Any], options: dict[str, Any] | None = None) -> GenerateResult | None:
    """A run whose input is the outcomes the thread has not been told of, driven to its
    end (None: there was nothing to tell). Raises `ThreadBusyError` while a run holds the
    thread."""
    run = await Run.start(agent, None, {**(options or {}), "memory": memory}, notices_only=True)
    if not run.input["messages"]:
        await run.release(ran=False)
        return None
    return await run.generate()


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


async def _select_versions(agent: Agent, opts: RunOptions, options: dict[str, Any], handle: RunHandle) -> RunOptions:
    """Attach the call's version resolver (SPEC §13) and apply the top-level agent's version."""
    assert opts.versions is not None
    handle.versions = RunVersions(opts.versions, agent.memory.versions if agent.memory is not None else None)
    handle.request_context.set(VERSIONS_KEY, opts.versions.model_dump(mode="json"))
    handle.override = await handle.versions.resolve(agent.id)
    if handle.override is not None and handle.override.max_steps is not None and "max_steps" not in options:
        return opts.model_copy(update={"max_steps": handle.override.max_steps})
    return opts


# every model string of an agent tree, found once per compiled graph (an agent's graph is
# compiled again when its tree changes)
_TREE_STRINGS: weakref.WeakKeyDictionary[Any, tuple[str, ...]] = weakref.WeakKeyDictionary()


def _model_strings(agent: Agent, opts: RunOptions) -> Iterator[str]:
    graph = agent._graph  # not compiled yet: the strings are checked before it is
    strings = _TREE_STRINGS.get(graph) if graph is not None else None
    if strings is None:
        strings = tuple(model_strings(agent))
        if graph is not None:
            _TREE_STRINGS[graph] = strings
    yield from strings
    if opts.is_task_complete is not None:
        for scorer in opts.is_task_complete.scorers:
            if isinstance(getattr(scorer, "model_string", None), str):
                yield scorer.model_string
