"""`AGUIAgent`: one declared supervisor served to AG-UI clients (AGUI.md)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from ag_ui.core import (
    PROTOCOL_VERSION,
    AgentCapabilities,
    BaseEvent,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
)
from langchain_core.messages import AIMessage

from supervisor_graph.agent import Agent
from supervisor_graph.agui.capabilities import capabilities
from supervisor_graph.agui.events import Reopen, RunSettings, RunTranslator
from supervisor_graph.agui.frontend import FrontendTools, InputError
from supervisor_graph.agui.interrupts import MASTRA, SUPERVISOR_GRAPH, Pause, plan_resume
from supervisor_graph.agui.messages import new_messages
from supervisor_graph.agui.outcomes import RunRecord, failed, refused
from supervisor_graph.agui.remote import RemoteBridge
from supervisor_graph.agui.serving import root_thread, thread_id_problem
from supervisor_graph.agui.state import SharedState, snapshot
from supervisor_graph.agui.time_travel import Travel, fork_snapshot, travel_of
from supervisor_graph.agui.tree import AgentTree
from supervisor_graph.checkpointers.naming import NS_JOIN, delegation_thread_id, stable_namespace
from supervisor_graph.declaration.errors import ThreadBusyError
from supervisor_graph.declaration.remote import RemoteAgent
from supervisor_graph.memory.memory import Memory
from supervisor_graph.nodes.errors import log_failure
from supervisor_graph.nodes.scope.context import AbortController
from supervisor_graph.nodes.steps.structured_output import output_schema_of
from supervisor_graph.run.busy import check_on_busy
from supervisor_graph.run.facade import AgentStream
from supervisor_graph.run.resume import pending_interrupts, resume

__all__ = ["AGUIAgent"]

log = logging.getLogger("supervisor_graph.agui")
_langgraph_log = logging.getLogger("langgraph")


# seconds a new run on a thread waits for this bridge's cancelled run on it to stop
STOPPING_WAIT = 10.0


def _quiet_pending_sends(record: logging.LogRecord) -> bool:
    return "in pending sends" not in record.getMessage()


async def _forward(signal: Any, controller: AbortController) -> None:
    await signal.wait()
    controller.abort(getattr(signal, "reason", None) or "aborted")


class AGUIAgent:
    """Serves `agent` (a declared supervisor) over AG-UI 1.0.

    Args:
        agent: the `Agent` to serve. Without `memory` it gets an in-process one: AG-UI
            threads are memory threads.
        resource_id: the resource (user) that owns the threads it opens: a string, or
            `callable(request) -> str` called with the HTTP request.
        subagent_visibility: `"hidden"` (the client sees each `agent-<key>` call and its
            result) or `"attributed"` (each delegation is an AG-UI subagent invocation).
        subagent_tool_results: `"omit"` sends subagents' own tool results empty.
        compat: `"mastra"` emits the reference Mastra bridge's shapes.
        on_busy: what a new message does while a run holds its thread (SPEC §29):
            `"reject"` (`THREAD_BUSY`), `"enqueue"`, `"interrupt"` or `"rollback"`;
            `forwardedProps: {"on_busy": ...}` chooses per run.

    Example:
        >>> from supervisor_graph.testing import ScriptedChatModel
        >>> bridge = AGUIAgent(Agent(id="helper", model=ScriptedChatModel(responses=["hi"])), resource_id="user-1")
        >>> bridge.get_capabilities().human_in_the_loop.interrupts
        True
    """

    def __init__(
        self,
        agent: Agent | RemoteAgent,
        *,
        resource_id: str | Callable[[Any], Any] = "anonymous",
        subagent_visibility: Literal["hidden", "attributed"] = "hidden",
        subagent_tool_results: Literal["full", "omit"] = "full",
        compat: Literal["mastra"] | None = None,
        until_idle: bool = True,
        on_busy: str = "reject",
    ) -> None:
        if not isinstance(agent, Agent | RemoteAgent):
            raise TypeError(f"AGUIAgent serves a supervisor_graph.Agent or RemoteAgent, not a {type(agent).__name__}")
        if subagent_visibility not in ("hidden", "attributed"):
            raise ValueError("subagent_visibility must be 'hidden' or 'attributed'")
        if subagent_tool_results not in ("full", "omit"):
            raise ValueError("subagent_tool_results must be 'full' or 'omit'")
        if compat not in (None, "mastra"):
            raise ValueError("compat must be None or 'mastra'")
        self.on_busy = check_on_busy(on_busy)
        self.remote = RemoteBridge(agent) if isinstance(agent, RemoteAgent) else None
        self.resource_id = resource_id
        self.subagent_visibility = subagent_visibility
        self.subagent_tool_results = subagent_tool_results
        self.dialect = MASTRA if compat == "mastra" else SUPERVISOR_GRAPH
        # a run that starts background tasks keeps its event stream open until each
        # outcome is answered (SPEC §12); `forwardedProps: {"until_idle": false}` per run
        self.until_idle = until_idle
        self.recent_runs: deque[RunRecord] = deque(maxlen=200)
        self._controllers: set[AbortController] = set()
        self._settling: set[asyncio.Future[Any]] = set()
        self._stopping: dict[str, asyncio.Future[Any]] = {}
        if isinstance(agent, RemoteAgent):
            self.agent: Any = agent
            self._state = None
            return
        self.agent = agent if agent.memory is not None else agent.model_copy(update={"memory": Memory(":memory:")})
        self._tools = FrontendTools(self.agent)
        working = self.agent.effective_working_memory
        self._state = SharedState(self.agent.id, working, self.memory) if working is not None else None

    @property
    def memory(self) -> Memory:
        assert self.agent.memory is not None
        return self.agent.memory

    @property
    def active_runs(self) -> int:
        """Runs in flight, including ones whose client left and that are still stopping."""
        return len(self._controllers) + len(self._settling)

    # -- capabilities and control ---------------------------------------------

    def get_capabilities(self) -> AgentCapabilities:
        return capabilities(
            self.agent, attributed=self.subagent_visibility == "attributed", shared_state=self._state is not None
        )

    def abort_run(self) -> None:
        """Cancel every run of this bridge in flight (each ends `cancelled`)."""
        for controller in list(self._controllers):
            controller.abort("abort_run()")

    # -- running ----------------------------------------------------------------

    async def _resource(self, request: Any) -> str:
        try:
            value = self.resource_id(request) if callable(self.resource_id) else self.resource_id
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:  # noqa: BLE001 - e.g. `request.headers["x-user"]` without the header
            log.warning("resource_id could not name the request's user (%s)", type(exc).__name__)
            value = None
        if not isinstance(value, str) or not value:
            raise InputError("RESOURCE_REQUIRED", "The request has no resource (user) id.")
        return value

    async def access(self, request: Any, thread_id: str, max_length: int | None = None) -> str:
        """The request's resource (user), once it may use `thread_id`: a well-formed id
        (within `max_length` when given) whose top-level thread is new or its own; a
        delegation's or background task's thread (`<thread>::...`) is its parent's.

        Raises:
            InputError: `INVALID_THREAD_ID`, `RESOURCE_REQUIRED` or `THREAD_FORBIDDEN`.
        """
        problem = thread_id_problem(thread_id, max_length)
        if problem is not None:
            raise InputError("INVALID_THREAD_ID", problem)
        resource = await self._resource(request)
        owner = await self._owner(root_thread(thread_id))
        if owner is not None and owner != resource:
            raise InputError("THREAD_FORBIDDEN", "This thread belongs to another user.")
        return resource

    async def _owner(self, thread_id: str) -> str | None:
        """The resource that owns `thread_id` (None: a new thread). It is the resource
        stored with the thread's checkpoints, shared by every bridge on this memory."""
        saver = await self.memory.checkpointer()
        found = await saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        if found is None:
            return None
        return str((found.metadata or {}).get("resource_id") or "")

    async def _parent_message(self, thread_id: str, pause: Pause) -> str | None:
        """The id of the assistant message that made a paused call (from the thread)."""
        threads = [thread_id]
        if pause.namespace:
            threads = [delegation_thread_id(thread_id, ns) or "" for ns in (pause.namespace, stable_namespace(pause.namespace))]
        for thread in threads:
            try:
                # reading a paused thread with a plain reader graph makes LangGraph warn
                # about the pending tool task it does not know: expected here
                _langgraph_log.addFilter(_quiet_pending_sends)
                try:
                    messages = await self.memory.get_messages(thread)
                finally:
                    _langgraph_log.removeFilter(_quiet_pending_sends)
            except Exception:  # noqa: BLE001 - best effort: the id only links the call to its message
                continue
            for message in messages:
                if isinstance(message, AIMessage) and any(c["id"] == pause.tool_call_id for c in message.tool_calls):
                    return message.id
        return None

    async def waiting(self, thread_id: str, resource: str) -> list[Interrupt]:
        """The interrupts waiting on `thread_id`, as the run that paused there reported
        them in `RUN_FINISHED` (so a client that lost that event, a reloaded page, can
        still answer them); none while a run holds the thread."""
        try:
            found = await pending_interrupts(self.agent, memory={"thread": thread_id, "resource": resource})
        except ThreadBusyError:
            return []
        tree = AgentTree(self.agent)
        pauses = [Pause.of_value(item.id, item.value) for item in found]
        return [
            p.interrupt(
                self.dialect,
                attributed=self.subagent_visibility == "attributed",
                resume_schema=tree.resume_schema(p.agent_path, p.tool_name) if p.kind == "suspend" else None,
            )
            for p in pauses
        ]

    def _record(self, input: RunAgentInput, event: BaseEvent | None) -> None:
        if isinstance(event, RunFinishedEvent):
            outcome = event.outcome.type if event.outcome is not None else "success"
            self.recent_runs.append(RunRecord(input.thread_id, input.run_id, outcome))
        elif isinstance(event, RunErrorEvent):
            self.recent_runs.append(RunRecord(input.thread_id, input.run_id, "error", event.code))

    async def run(self, input: RunAgentInput, *, request: Any = None, abort_signal: Any = None) -> AsyncIterator[BaseEvent]:
        """The run's AG-UI events: `RUN_STARTED` first, then exactly one terminal event.

        `request` is what a callable `resource_id` is called with; `abort_signal` (an
        `AbortSignal` or `asyncio.Event`) cancels the run when set.
        """
        yield RunStartedEvent(
            thread_id=input.thread_id, run_id=input.run_id, protocol_version=PROTOCOL_VERSION, timestamp=int(time.time() * 1000)
        )
        controller = AbortController()
        self._controllers.add(controller)
        links = [
            asyncio.ensure_future(_forward(signal, controller))
            for signal in (abort_signal, self.agent.defaults.abort_signal)
            if signal is not None
        ]
        holder: list[AgentStream] = []
        last: BaseEvent | None = None
        events = self._events(input, request, controller, holder)
        try:
            async for event in events:
                last = event
                yield event
        finally:
            for link in links:
                link.cancel()
            self._controllers.discard(controller)
            await events.aclose()
            self._record(input, last)
            if not isinstance(last, (RunFinishedEvent, RunErrorEvent)):
                # the consumer left (client disconnect): stop the run, let it settle
                controller.abort("the client disconnected")
                if holder:
                    self._settle(input, holder[0])

    def _settle(self, input: RunAgentInput, stream: AgentStream) -> None:
        async def wait() -> None:
            try:
                result = await stream.result()
                outcome = "cancelled" if result.finish_reason == "abort" else "success"
            except Exception as exc:  # noqa: BLE001 - nobody is listening any more; the log has it
                log_failure(log, logging.ERROR, "AG-UI run %s failed after its client left", exc, input.run_id)
                outcome = "error"
            self.recent_runs.append(RunRecord(input.thread_id, input.run_id, outcome))

        task = asyncio.ensure_future(wait())
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)
        self._stopping[input.thread_id] = task
        task.add_done_callback(lambda _: self._stopping.pop(input.thread_id, None) if self._stopping.get(input.thread_id) is task else None)

    async def _after_stopping(self, thread_id: str) -> None:
        """A client that left and came straight back (a cancel, then a new message) waits
        for its stopped run to let go of the thread, instead of getting THREAD_BUSY."""
        stopping = self._stopping.get(thread_id)
        if stopping is not None:
            await asyncio.wait({stopping}, timeout=STOPPING_WAIT)

    async def _events(
        self, input: RunAgentInput, request: Any, controller: AbortController, holder: list[AgentStream]
    ) -> AsyncGenerator[BaseEvent, None]:
        if self.remote is not None:
            async for event in self.remote.events(input, partial(self._resource, request), self.dialect, controller.signal):
                yield event
            return
        await self._after_stopping(input.thread_id)
        try:
            start = await self._start(input, request, controller)
        except Exception as exc:  # noqa: BLE001 - refused before anything ran
            yield refused(exc, bool(input.resume), input.run_id)
            return
        if start.stream is None:  # no new message: the thread as it is, and the run is over
            if start.state_view is not None:
                yield snapshot(start.state_view)
            yield RunFinishedEvent(
                thread_id=input.thread_id,
                run_id=input.run_id,
                outcome=RunFinishedSuccessOutcome(),
                timestamp=int(time.time() * 1000),
            )
            return
        stream = start.stream
        holder.append(stream)
        settings = RunSettings(
            dialect=self.dialect,
            attributed=self.subagent_visibility == "attributed",
            omit_subagent_results=self.subagent_tool_results == "omit",
            parts=input.protocol_version == PROTOCOL_VERSION,
            frontend_tools=start.frontend,
            tree=AgentTree(start.agent),
            shared=self._state,
        )
        translator = RunTranslator(settings, input.thread_id, input.run_id, start.reopen, state=start.state_view)
        if start.state_view is not None:
            yield snapshot(start.state_view)
        async for chunk in stream.full_stream:
            for event in translator.on_chunk(chunk):
                yield event
        try:
            result = await stream.result()
        except Exception as exc:  # noqa: BLE001 - the run failed: RUN_ERROR, details in the log
            for event in failed(translator, exc, input.run_id):
                yield event
            return
        events = translator.finish(result)
        if start.forked:  # the client shows the branch it left: the fork's conversation (time_travel.py)
            events.insert(-1, await fork_snapshot(self.memory, input.thread_id))
        for event in events:
            yield event

    async def _start(self, input: RunAgentInput, request: Any, controller: AbortController) -> _Start:
        """The run a request asks for, started (a resume, or a run on its new messages;
        none when it has none), with what its events are translated with. Raises what
        refuses it before anything ran."""
        resource = await self.access(request, input.thread_id)  # the length is the HTTP layer's limit
        if NS_JOIN in input.thread_id:
            raise InputError("INVALID_THREAD_ID", f"Runs go to a top-level thread, not to {NS_JOIN!r} threads of one.")
        agent, frontend = self._tools.agent_for(input.tools)
        memory = {"thread": input.thread_id, "resource": resource}
        props = input.forwarded_props if isinstance(input.forwarded_props, dict) else {}
        travel = await travel_of(props, self.memory, input.thread_id) if not input.resume else Travel()
        options = self._run_options(input, controller, memory, props)
        on_busy = options["on_busy"]
        try:
            pending = [Pause.of_value(i.id, i.value) for i in await pending_interrupts(agent, memory=memory)]
        except ThreadBusyError:
            if on_busy == "reject" or input.resume:
                raise
            pending = []  # a run holds the thread: not paused; the run below waits its turn
        start = _Start(agent, frontend, forked=travel.forks)
        if self._state is not None:
            start.state_view = await self._state.sync(input.state, input.thread_id, resource, paused=bool(pending))
        if input.resume:
            answers, chosen = plan_resume(input.resume, pending, self.dialect)
            for pause in chosen:
                start.reopen[(pause.namespace, pause.tool_call_id)] = await self._reopen(input.thread_id, pause)
            stream = await resume(agent, answers, streaming=True, **options)
            assert isinstance(stream, AgentStream)
            start.stream = stream
            return start
        if travel.checkpoint is not None:  # the options hold `memory`: the run forks from there
            memory["checkpoint"] = travel.checkpoint
        if travel.edit is not None:
            start.stream = await agent.stream(None, edit=travel.edit, **options)
            return start
        if pending and on_busy != "rollback" and not travel.forks:  # rollback discards the paused run
            raise InputError(
                "INTERRUPT_PENDING",
                f"{len(pending)} interrupt(s) are waiting on this thread; answer them with RunAgentInput.resume first.",
            )
        fresh = new_messages(input.messages, await self.memory.get_messages(input.thread_id, checkpoint=travel.checkpoint))
        if fresh and agent.has_background_subagents and props.get("until_idle", self.until_idle) is not False:
            start.stream = await agent.stream_until_idle(fresh, **options)
        elif fresh:
            start.stream = await agent.stream(fresh, **options)
        return start

    def _run_options(
        self, input: RunAgentInput, controller: AbortController, memory: dict[str, Any], props: dict[str, Any]
    ) -> dict[str, Any]:
        """The options of the run a request asks for: its thread, abort signal, request
        context, and what its forwarded props choose (SPEC §28, §29)."""
        options: dict[str, Any] = {
            "memory": memory,
            "abort_signal": controller.signal,
            "request_context": {
                "ag_ui": {
                    "run_id": input.run_id,
                    "context": [c.model_dump(mode="json") for c in input.context or []],
                    "forwarded_props": input.forwarded_props,
                }
            },
        }
        try:  # double texting (SPEC §29)
            options["on_busy"] = check_on_busy(props.get("on_busy", self.on_busy), "forwardedProps.on_busy")
        except ValueError as exc:
            raise InputError("INVALID_ON_BUSY", f"{exc}; nothing was run.") from None
        if props.get("output_schema") is not None:  # a typed answer for this run (SPEC §28)
            try:
                options["output_schema"] = output_schema_of(props["output_schema"], "forwardedProps.output_schema")
            except ValueError as exc:
                raise InputError("INVALID_OUTPUT_SCHEMA", str(exc)) from None
        return options

    async def _reopen(self, thread_id: str, pause: Pause) -> Reopen:
        """How a resumed pause's tool call shows again (under its parent's message where
        the client sees that message)."""
        attributed = not pause.namespace or self.subagent_visibility == "attributed"
        return Reopen(
            full=pause.kind == "approval",
            tool_name=pause.tool_name,
            args=pause.args,
            parent_message_id=await self._parent_message(thread_id, pause) if attributed else None,
        )


@dataclass(slots=True)
class _Start:
    """A run a request started, and what its events are translated with (no stream: the
    request had no new message)."""

    agent: Agent
    frontend: frozenset[str]
    stream: AgentStream | None = None
    reopen: dict[tuple[str, str], Reopen] = field(default_factory=dict)
    state_view: dict[str, Any] | None = None
    forked: bool = False
