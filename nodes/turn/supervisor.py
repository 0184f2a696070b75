"""The supervisor node: one turn (`turn.py`) per run of the node, routed by `Command`:
to the subagents it delegates to and the tools node (`Send`), back to itself, to the
iteration and task-completion gates, or to the end."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite, Send

from supervisor_graph.nodes.background.control import background_of
from supervisor_graph.nodes.guards.answers import HELD_MARK, settle_held, tool_trip, tripwire_end, unmark
from supervisor_graph.nodes.guards.core import TripwireError, guarded_at
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.options import RunContext, RunOptions
from supervisor_graph.nodes.scope.lookup import run_scope, with_version
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.state import SupervisorState, feedback_message, is_run_input
from supervisor_graph.nodes.steps.usage import dropped, step_finish
from supervisor_graph.nodes.turn.routing import (
    ITERATION_NODE,
    SUPERVISOR_NODE,
    after_answer,
    dispatch,
    end_update,
    finish_reason_of,
    left_open,
    results_pending,
    unanswered,
)
from supervisor_graph.nodes.turn.tools import ABORTED_TOOL_TEXT
from supervisor_graph.nodes.turn.turn import Turn, announce

__all__ = ["free_updates", "iteration_of_run", "make_supervisor_node"]

log = logging.getLogger("supervisor_graph")


def iteration_of_run(messages: Sequence[BaseMessage], free_limit: int = 0, free: frozenset[str] = frozenset()) -> int:
    """Supervisor iterations so far in the current run (AI turns since its input).

    With `free_limit`, turns that only call bookkeeping tools (`free`: working memory's
    update) are not iterations, up to that many of them: a model that does nothing else
    cannot loop forever.
    """
    count = uncounted = 0
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if isinstance(message, AIMessage):
            if free_limit and message.tool_calls and all(call["name"] in free for call in message.tool_calls):
                uncounted += 1
            else:
                count += 1
        elif is_run_input(message):
            break
    return count + max(0, uncounted - free_limit)


def free_updates(spec: AgentSpec, opts: RunOptions) -> int:
    """How many bookkeeping-only turns a run of `spec` does not count (see
    `iteration_of_run`): enough for a model that updates its memory before answering
    each time, few enough that one doing nothing else soon reaches `max_steps`."""
    return opts.max_steps + 2 if spec.steps.free else 0


def make_supervisor_node(spec: AgentSpec) -> Any:
    async def supervisor(state: SupervisorState, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        return await _Step(spec, state, config, runtime).run()

    return supervisor


class _Step:
    """One run of the supervisor node: decide whether the model is called at all
    (`_gate`), call it through the turn with the guards around it (`_answer`), then
    settle what it answered and route (`_settle`)."""

    def __init__(self, spec: AgentSpec, state: SupervisorState, config: RunnableConfig, runtime: Runtime[RunContext]) -> None:
        self.spec, self.state, self.config, self.runtime = spec, state, config, runtime
        self.messages: Sequence[BaseMessage] = state.get("messages") or []
        # feedback a hook left for the model: shown with this step, stored with its update
        self.pending = [feedback_message(text, "hook") for text in state.get("feedback") or []]
        self.consumed: dict[str, Any] = {"feedback": Overwrite([])} if self.pending else {}

    async def run(self) -> Any:
        early = await self._gate()
        if early is not _GO:
            return early
        return await self._answer()

    def _end(self, reason: str) -> Command[Any]:
        return Command(update={**end_update(self.state, reason, self.pending), **self.consumed}, goto=END)

    async def _gate(self) -> Any:
        """What ends or diverts the step before any model call, else `_GO`."""
        spec, state, messages, runtime = self.spec, self.state, self.messages, self.runtime
        ctx = runtime.context if runtime is not None else None
        if isinstance(ctx, RunContext) and ctx.background_task and background_of(spec) is not None:
            return server_task_start(ctx.background_task)  # this run is a background task a server hosts
        if results_pending(messages, spec.client_tools):
            return None  # a longer parallel branch will bring the last result
        if state.get("bail"):
            return self._end("bail")
        opts, handle = run_scope(spec, self.config, runtime)
        self.opts, self.handle = opts, handle = await with_version(spec, opts, handle, runtime), handle
        self.turn = turn = Turn(spec, self.config, opts, handle, Emitter(runtime, handle), runtime=runtime)
        if guarded_at(spec) and (trip := tool_trip(messages)) is not None:  # a guard blocked a tool of the last turn
            return tripwire_end(state, messages, trip, handle, self.consumed)
        if guarded_at(spec) and (held := state.get("guard_held")):  # an answer a guard escalated
            return await self._settle_held(held)
        if turn.aborted():
            return self._end("abort")
        if spec.client_tools and unanswered(messages):
            return self._end("tool-calls")  # only client tools are left: the caller answers them on the next call
        turn.iteration = iteration_of_run(messages, free_updates(spec, opts), spec.steps.free)
        if turn.iteration == 0:
            closed = left_open(messages, ABORTED_TOOL_TEXT, spec.client_tools)
            if closed:  # a run cancelled from outside left calls open: close them first
                return Command(update={"messages": closed}, goto=SUPERVISOR_NODE)
        reason = turn.limit(state.get("stop_at"))
        return self._end(reason) if reason is not None else _GO

    async def _settle_held(self, held: dict[str, Any]) -> Any:
        emit = self.turn.emit
        settled = await settle_held(self.state, self.opts, self.handle, self.config, emit, self.messages, held, self.consumed)
        step = iteration_of_run(self.messages, free_updates(self.spec, self.opts), self.spec.steps.free) + 1
        if (settled.update or {}).get("tripwire"):  # declined: the answer never reaches the thread
            dropped(self.handle, emit, [held["message"]], step)
        elif isinstance(held["message"], AIMessage):  # approved: its call ends here, for AG-UI's usage
            emit("step-finish", step_finish(held["message"], step))
        return settled

    async def _answer(self) -> Command[Any]:
        """The model's answer through the turn's steps (the guards among them, SPEC §30),
        then `_settle`; a trip ends the run, an answer sent back or held for a person
        comes back to this node."""
        spec, turn = self.spec, self.turn
        turn.emit("step-start", {"iteration": turn.iteration + 1})
        await turn.resolve(self.opts.delegation.enable_result_references or bool(spec.preview_tokens))  # a preview names its ref
        history = [*self.messages, *self.pending] if self.pending else self.messages
        try:
            response = await turn.call(history, self.state, self.config)
        except TripwireError as exc:
            return tripwire_end(self.state, self.messages, exc.tripwire, self.handle, self.consumed)
        added = turn.added
        if response is None:  # sent back: the model answers again, its answer unstored
            return Command(update={"messages": [*self.pending, *added], **self.consumed}, goto=SUPERVISOR_NODE)
        if (held := response.additional_kwargs.get(HELD_MARK)) is not None:  # held out of the thread until a person decides
            kept = {"message": unmark(response), "guard": [held["guard"], held["reason"]], "stored": added}
            update = {"guard_held": kept, "messages": [*added, *self.pending], **self.consumed}
            return Command(update=update, goto=SUPERVISOR_NODE)
        return await self._settle(response, added)

    async def _settle(self, response: Any, guarded: list[BaseMessage]) -> Command[Any]:
        """What the model answered, made safe, the calls of the steps' own tools answered
        here (working memory, background-task control), announced, then routed
        (`guarded`: a redacted input to store)."""
        state, turn = self.state, self.turn
        response, errors = turn.take(response)
        answered = await turn.settle(response, self.messages, state)
        if answered is not None:
            errors.extend(answered.results)
        announce(turn.emit, response, turn.iteration + 1, answered)
        if answered is not None and answered.again:  # bookkeeping or sent back: no hook, no dispatch, back to the model
            command: Command[Any] = Command(update={"messages": [response, *errors]}, goto=SUPERVISOR_NODE)
        elif answered is not None and answered.end is not None:  # the answer is the run's value, or its error
            goto = END if answered.end == "error" else after_answer(self.opts)
            command = Command(update=end_update(state, answered.end, [response, *errors]), goto=goto)
        else:
            command = self._route(response, errors)
        update: dict[str, Any] = command.update  # type: ignore[assignment]
        if turn.iteration == 0 and (state.get("structured_response") is not None or state.get("structured_output_error")):
            update.setdefault("structured_response", None)
            update.setdefault("structured_output_error", None)
        if answered is not None:
            update.update(answered.updates)
        update.update(turn.wrote)
        if self.pending:
            update["messages"] = [*self.pending, *update["messages"]]
            update.update(self.consumed)
        if guarded:
            update["messages"] = [*guarded, *update["messages"]]
        return command


    def _route(self, response: AIMessage, errors: list[ToolMessage]) -> Command[Any]:
        """The update and destination after a model turn."""
        opts = self.opts
        if opts.on_iteration_complete is not None:
            return Command(update={"messages": [response, *errors]}, goto=ITERATION_NODE)
        if not response.tool_calls:
            return Command(update=end_update(self.state, finish_reason_of(response), [response]), goto=after_answer(opts))
        sends, more_errors = dispatch(self.spec, opts, self.handle, response, {e.tool_call_id for e in errors})
        errors.extend(more_errors)
        return Command(update={"messages": [response, *errors]}, goto=sends or SUPERVISOR_NODE)


_GO = object()  # `_Step._gate`: nothing stops the step, call the model


def server_task_start(task: Mapping[str, Any]) -> Command[Any]:
    """The first step of a background task's own run on a LangGraph server: straight to
    its delegation (nodes/delegation/subagent.py runs it and reports the outcome)."""
    call = {"name": task["tool_name"], "args": {"prompt": task["prompt"]}, "id": task["tool_call_id"], "type": "tool_call"}
    payload = {"call": call, "key": task["key"], "prompt": task["prompt"], "max_steps": None, "background_run": dict(task)}
    if task.get("request_context") is not None:
        payload["request_context"] = task["request_context"]
    if task.get("budget") is not None:
        payload["budget"] = task["budget"]
    return Command(goto=Send(task["key"], payload))
