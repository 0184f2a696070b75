"""A leaf subagent's turns (`turn.py`) run inside its parent's subagent node (SPEC §23,
issue 23): routed in place, its tools run here and the next turn follows.

A LangGraph subgraph per delegation costs a second Pregel loop and a checkpoint per
step of the subagent (7 per delegation whose worker calls one tool). A *leaf* subagent
(no subagents, no working memory, no background tasks, no per-run iteration hooks or
scorers) instead runs its model/tool loop here, in the node that the parent's `Send`
started, whoever drives the graph (the run facade, `graph.ainvoke` / `astream`, Studio,
`langgraph dev`, Aegra). Its delegation thread is written in one checkpoint at the end
(what `aupdate_state` on the subagent's graph would store, in the delegation's namespace), so
`get_messages(sub_agent_thread_id)`, `list_threads` and `get_state` of that namespace
read what a subgraph run left there. That first write reads nothing (the namespace is
this task's own: `checkpointers/first_write.py`) and, on sqlite, is stored in the same
transaction as the node's own writes.

Pauses (approval, `suspend()`) keep LangGraph's semantics without a nested loop. Before
the run pauses, the subagent's progress is saved in its delegation thread (the journal);
a re-run of the node (LangGraph's resuming flag, the one it hands subgraphs) reads it
and goes on from there, so a resumed subagent never calls its model again for a step it
took and never re-runs a finished tool. LangGraph hands a re-run task its answers by
position (the n-th `interrupt()` of the task gets the n-th answer) while the re-run
skips what the journal holds, so a task raises a pause only while it has used no answer
(its interrupt is then the re-run's first); a later pause goes to a fresh task of the
node (`Send(key, {..., "resume_ns": ...})`) whose first action it is. A delegation that
does not pause pays nothing for any of this: no read, no extra write.

(`@task` calls inside the node give the same durability but cost +30-50% per run,
measured: each call is a Pregel task whose result is written to the checkpointer.)
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import (
    get_async_callback_manager_for_config,
    patch_config,
    var_child_runnable_config,
)
from langgraph.errors import GraphInterrupt
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from supervisor_graph.checkpointers.compat import has_checkpointer, is_resuming
from supervisor_graph.checkpointers.first_write import write_delegation_thread
from supervisor_graph.nodes.delegation.result import DelegationRecord
from supervisor_graph.nodes.delegation.transcript import record_answer, record_transcript
from supervisor_graph.nodes.guards.answers import HELD_MARK, checked_text, mark_held, unmark
from supervisor_graph.nodes.guards.boundaries import hold_for_person
from supervisor_graph.nodes.guards.core import TripwireError, guarded_at
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.options import RunHandle, RunOptions
from supervisor_graph.nodes.scope.context import RUN_IDENTITY_KEYS, check_json, using_request_context
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.steps.budget import exceeded_result
from supervisor_graph.nodes.steps.structured_output import STRUCTURED_KEYS
from supervisor_graph.nodes.text import text_of
from supervisor_graph.nodes.turn.routing import SUPERVISOR_NODE, dispatch, finish_reason_of, unanswered
from supervisor_graph.nodes.turn.tools import ToolRun, needs_approval, run_tool_call
from supervisor_graph.nodes.turn.turn import Turn, announce

__all__ = ["AGENT_PATH_KEY", "NAMESPACE_KEY", "RESUME_NS_KEY", "can_run_directly", "run_directly"]

# metadata of the model call: which agent and namespace its tokens belong to
AGENT_PATH_KEY = "supervisor_graph_agent_path"
NAMESPACE_KEY = "supervisor_graph_namespace"
# in a delegation's `Send` payload: the namespace of the delegation this task continues
RESUME_NS_KEY = "resume_ns"


def can_run_directly(spec: AgentSpec, opts: RunOptions, per_parent_thread: bool) -> bool:
    """True for a leaf subagent, whose whole loop fits in its parent's node (what it can
    do decides, never who drives the graph)."""
    return (
        not spec.delegation_schemas
        and not spec.steps.answered  # calls answered in the turn need the supervisor's routing
        and not per_parent_thread
        and opts.on_iteration_complete is None
        and opts.is_task_complete is None
    )


@dataclass(slots=True)
class _Pause:
    """The loop stopped at a pause that must be the first action of a fresh task."""


def _in_namespace(config: RunnableConfig, namespace: str) -> RunnableConfig:
    """`config` addressing the delegation's thread (a continuation task has its own
    checkpoint namespace; the delegation keeps the first task's)."""
    configurable = config.get("configurable") or {}
    if configurable.get("checkpoint_ns") == namespace:
        return config
    return {**config, "configurable": {**configurable, "checkpoint_ns": namespace}}


async def run_directly(
    spec: AgentSpec,
    graph: Any,
    task: dict[str, Any],
    config: RunnableConfig,
    opts: RunOptions,
    handle: RunHandle,
    runtime: Runtime[Any],
    namespace: str,
    record: DelegationRecord,
    key: str,
) -> Command[Any] | None:
    """Run the subagent's turns here and record them in `record` (a failure keeps the
    partial transcript, as a failed subgraph run does). Returns the `Send` that hands
    the delegation to a fresh task when it must pause there, else None."""
    journal = _Journal(graph, _in_namespace(config, namespace), has_checkpointer(config), spec.steps.state_keys)
    if task.get(RESUME_NS_KEY) or is_resuming(config):
        await journal.load()  # only a re-run can find saved progress: nothing else pays a read
    history = journal.messages[:] or [HumanMessage(content=task["prompt"], id=str(uuid.uuid4()))]

    # one run named after the subagent holds its model and tool runs, as a subgraph's did
    # (when anybody listens: a run nobody traces skips building it)
    callbacks = config.get("callbacks")
    traced = not isinstance(callbacks, BaseCallbackManager) or bool(callbacks.handlers)
    run = None
    if traced:
        manager = get_async_callback_manager_for_config(config)
        run = await manager.on_chain_start(None, {"prompt": task["prompt"]}, name=spec.agent_name or spec.agent_id)
        config = patch_config(config, callbacks=run.get_child())
    emit = Emitter(runtime, handle, namespace)
    turn = Turn(spec, config, opts, handle, emit, wrote=journal.kept, runtime=runtime)  # wrote: kept in the delegation thread
    loop = _Loop(turn, namespace, history, journal)
    # A bound model (`bind_tools`) merges its config over the ambient one, whose callbacks
    # are the node's: without this its runs would hang under the node, not this run.
    ambient = var_child_runnable_config.set(config) if run is not None else None
    try:
        outcome = await loop.run()
    except BaseException as exc:
        if run is not None:
            await run.on_chain_error(exc)
        raise
    finally:
        if ambient is not None:
            var_child_runnable_config.reset(ambient)
        record_transcript(record, {"messages": history})
    if isinstance(outcome, _Pause):
        if run is not None:
            await run.on_chain_end({"paused": True})
        await journal.save(history)
        values = handle.request_context.fork(RUN_IDENTITY_KEYS).to_dict()
        if handle.durable:  # the Send is checkpointed: a clear error beats a failed save
            check_json(values, f"delegation to {spec.agent_id!r}")
        return Command(goto=Send(key, {**task, RESUME_NS_KEY: namespace, "request_context": values}))
    answer = {"messages": history, "finish_reason": outcome, **loop.structured}
    await journal.save(history, finish_reason=outcome, structured=loop.structured)
    record_answer(record, answer, handle.abort_signal)
    exceeded_result(record, handle.budget)
    if run is not None:
        await run.on_chain_end({"text": record.text, "finish_reason": outcome})
    return None


class _Journal:
    """The delegation's thread as the record of what its subagent did: written when the
    delegation pauses (so a re-run goes on from there) and when it ends."""

    def __init__(self, graph: Any, config: RunnableConfig, durable: bool, keys: Collection[str] = ()) -> None:
        self.graph, self.config, self.durable, self.keys = graph, config, durable, keys
        self.messages: list[BaseMessage] = []
        self.saved = 0  # messages of the history already in the thread
        self.exists = False  # the thread has a checkpoint (a re-run found one, or this task wrote one)
        # the state keys the agent's steps keep (a summary of older turns: nodes/steps/compaction.py)
        self.kept: dict[str, Any] = {}

    async def load(self) -> None:
        if not self.durable:
            return
        state = await self.graph.aget_state(self.config)
        values = state.values or {}
        self.messages = list(values.get("messages") or [])
        self.kept = {key: values[key] for key in self.keys if values.get(key) is not None}
        self.saved = len(self.messages)
        self.exists = bool(state.values)

    async def save(
        self, history: list[BaseMessage], finish_reason: str | None = None, structured: dict[str, Any] | None = None
    ) -> None:
        if not self.durable or (finish_reason is None and len(history) == self.saved):
            return  # runs without a checkpointer keep nothing, as before
        values: dict[str, Any] = {"messages": history[self.saved :], **(structured or {})}
        if finish_reason is not None:
            values["finish_reason"] = finish_reason
        values.update(self.kept)
        await write_delegation_thread(self.graph, self.config, values, SUPERVISOR_NODE, first=not self.exists)
        self.saved = len(history)
        self.exists = True


class _Loop:
    """The subagent's turns (`Turn`), appended to `history`, and its tools run between them.

    LangGraph hands a re-run task its answers by position (the n-th `interrupt()` of the
    task gets the n-th answer), and a re-run skips what the journal holds. So a task may
    raise a pause only while no answer has been used in it: its interrupt is then the
    first of the task, and the re-run's first `interrupt()`. A later pause goes to a
    fresh task (`_Pause`)."""

    def __init__(self, turn: Turn, namespace: str, history: list[BaseMessage], journal: _Journal) -> None:
        self.turn = turn
        self.spec, self.config, self.opts, self.handle, self.emit = turn.spec, turn.config, turn.opts, turn.handle, turn.emit
        self.runtime, self.namespace, self.history, self.journal = turn.runtime, namespace, history, journal
        handle, config = self.handle, self.config
        # Stream tokens and trace the model as the subagent's graph would: LangGraph's
        # `messages` mode takes the graph namespace from this metadata.
        self.model_config: RunnableConfig = {
            **config,
            "metadata": {
                **(config.get("metadata") or {}),
                AGENT_PATH_KEY: list(handle.agent_path),
                NAMESPACE_KEY: namespace,
                "langgraph_checkpoint_ns": f"{namespace}|{SUPERVISOR_NODE}",
                "langgraph_node": SUPERVISOR_NODE,
            },
        }
        self.answers = 0  # answers to pauses used by this task so far
        # the answer's value (or why it has none) when the agent has an output schema
        self.structured: dict[str, Any] = {}
        # an answer a guard escalated and a person let through: the next turn's response
        self.pending: AIMessage | None = None

    async def run(self) -> str | _Pause:
        """Turns until the subagent answers or stops: its finish reason, or `_Pause`."""
        using_request_context(self.handle.request_context)
        # a re-run first answers, one by one in call order, the calls its journal left open
        sequential = bool(self.journal.messages)
        while True:
            stop = await self._gate(sequential)
            if stop is not None:
                return stop
            sequential = False
            response = await self._answer()
            if response is None:
                continue  # sent back, or held for a person: the next turn sees to it
            outcome = await self._settle(response)
            if outcome is not None:
                return outcome

    async def _gate(self, sequential: bool) -> str | _Pause | None:
        """Run the open tool calls, settle what a guard held, and say why the loop
        stops before the next model call, if it does."""
        open_calls = [c for c in unanswered(self.history) if c["name"] not in self.spec.client_tools]
        if open_calls:
            paused, bail = await self._tools(open_calls, sequential)
            if paused:
                return _Pause()
            if bail:
                return "bail"
        if guarded_at(self.spec) and await self._settle_held():
            return _Pause()
        if unanswered(self.history):
            return "tool-calls"  # only client tools are left: the caller's to run
        if self.turn.aborted():
            return "abort"
        self.turn.iteration = sum(isinstance(m, AIMessage) for m in self.history)
        return self.turn.limit()

    async def _answer(self) -> AIMessage | None:
        """The model's answer through the turn's steps (the output guards among them,
        SPEC §30); None when a guard sent it back or holds it for a person."""
        spec, turn = self.spec, self.turn
        if turn.model is None:
            await turn.resolve()
        self.emit("step-start", {"iteration": turn.iteration + 1})
        response = self.pending
        if response is not None:  # an answer a person let through: not asked again
            self.pending = None
            if text_of(response):
                self.emit("text-delta", {"text": text_of(response), "message_id": response.id})
            return response
        # retried here by the agent's policy: a retry of the node would run the whole loop again
        response = await turn.call(self.history, self.journal.kept, self.model_config, policy=spec.retry_policy)
        if turn.added:  # a guard's feedback on an answer sent back, a middleware's messages
            self.history[:] = add_messages(self.history, turn.added)  # type: ignore[arg-type,assignment]
        if response is None:
            return None  # sent back: the model answers again
        if HELD_MARK in response.additional_kwargs:
            self.history.append(response)  # a person decides first (`_settle_held`)
            return None
        if text := checked_text(spec, response):  # its node's messages never reach the parent's stream
            self.emit("text-delta", {"text": text, "message_id": response.id})
        return response

    async def _settle(self, response: Any) -> str | None:
        """The answer made safe, counted, validated (SPEC §28) and announced; the finish
        reason when the subagent is done, None when its tools run next."""
        turn = self.turn
        response, errors = turn.take(response)
        answered = await turn.settle(response, self.history, self.journal.kept)  # validated, or sent back (SPEC §28)
        if answered is not None:
            errors.extend(answered.results)
        settled = answered is not None and (answered.again or answered.end is not None)
        if response.tool_calls and not settled:
            _, more = dispatch(self.spec, self.opts, self.handle, response, {e.tool_call_id for e in errors})
            errors.extend(more)
        announce(self.emit, response, turn.iteration + 1, answered)
        self.history.append(response)
        self.history.extend(errors)
        if answered is not None and answered.again:
            return None
        if answered is not None and answered.updates:
            self.journal.kept.update({k: v for k, v in answered.updates.items() if k not in STRUCTURED_KEYS})
            structured = {k: v for k, v in answered.updates.items() if k in STRUCTURED_KEYS}
            if structured:  # the answer's value, or why it has none (SPEC §28): the subagent is done
                self.structured = structured
                return answered.end or finish_reason_of(response)
        if answered is not None and answered.end is not None:
            return answered.end
        return None if response.tool_calls else finish_reason_of(response)

    async def _tools(self, calls: Sequence[ToolCall], sequential: bool) -> tuple[bool, bool]:
        """Run the turn's open calls (results appended in call order); returns (paused
        in a fresh task, bail). A pause this task may raise is raised, after the journal
        saved what came before it."""
        bail = False
        if sequential or len(calls) == 1:
            for call in calls:
                if self.answers and needs_approval(self.spec, call, self.opts.require_tool_approval):
                    return True, bail
                try:
                    outcome = await self._run(call)
                except GraphInterrupt:
                    if self.answers:
                        return True, bail
                    await self.journal.save(self.history)
                    raise
                self.history.append(outcome.message)
                self.answers += outcome.answers
                bail = bail or outcome.bail
            return False, bail
        if self.answers and any(needs_approval(self.spec, c, self.opts.require_tool_approval) for c in calls):
            return True, bail  # nothing ran: the fresh task asks
        outcomes = await asyncio.gather(*(self._run(call) for call in calls), return_exceptions=True)
        pause: GraphInterrupt | None = None
        for done in outcomes:
            if isinstance(done, GraphInterrupt):
                pause = pause or done  # the first in call order; the others ask again later
            elif isinstance(done, BaseException):
                raise done
            else:
                self.history.append(done.message)
                self.answers += done.answers
                bail = bail or done.bail
        if pause is None:
            return False, bail
        if self.answers:
            return True, bail
        await self.journal.save(self.history)
        raise pause

    async def _run(self, call: ToolCall) -> ToolRun:
        run = await run_tool_call(
            self.spec,
            call,
            self.config,
            self.runtime,
            self.handle,
            self.opts.require_tool_approval,
            self.namespace,
            self.emit,
        )
        if run.updates:  # state a tool wrote: kept in the delegation's thread
            self.journal.kept.update(run.updates)
        if run.held is not None:  # a person decides before the model sees it (`_settle_held`)
            return run._replace(message=mark_held(run.message, "tool_result", run.held), held=None)
        return run

    async def _settle_held(self) -> bool:
        """Put what a guard escalated to a person (SPEC §30), one pause at a time: an
        approved tool result stays, an approved answer becomes the turn's response again
        (`self.pending`); a declined one fails the delegation. True: the pause goes to a
        fresh task (this one has used an answer already)."""
        for i, message in enumerate(self.history):
            held = message.additional_kwargs.get(HELD_MARK)
            if held is None:
                continue
            if self.answers:
                return True
            await self.journal.save(self.history)  # the re-run on resume finds it held
            ref = message.id or getattr(message, "tool_call_id", "") or ""
            guard = (held["guard"], held["reason"])
            trip = await hold_for_person(guard, held["boundary"], text_of(message), self.handle, self.config, self.emit, ref, self.namespace)
            self.answers += 1
            if trip is not None:
                raise TripwireError(trip)
            if isinstance(message, AIMessage):
                del self.history[i]
                self.pending = unmark(message)
                return False
            self.history[i] = unmark(message)
        return False
