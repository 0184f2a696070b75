"""The supervisor node: one model call per iteration, then route the turn."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite, Send

from supervisor_graph.nodes.background.control import CONTROL_TOOLS, answer_control_calls
from supervisor_graph.nodes.guards.answers import (
    guarded_turn,
    settle_held,
    tool_trip,
    tripwire_end,
)
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions
from supervisor_graph.nodes.scope.lookup import run_scope, with_version
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.state import SupervisorState, feedback_message, is_run_input, run_start
from supervisor_graph.nodes.steps.budget import budget_notice, over_budget, spend
from supervisor_graph.nodes.steps.protocol import ModelRequest
from supervisor_graph.nodes.steps.structured_output import OutputSchema, retries_used, settle, stray_final_answers
from supervisor_graph.nodes.steps.usage import dropped, step_finish
from supervisor_graph.nodes.steps.working_memory import (
    WORKING_MEMORY_TOOL,
    WorkingMemoryError,
    apply_update,
    is_update_turn,
    read_value,
    update_result,
    write_value,
)
from supervisor_graph.nodes.turn.model_call import call_model, model_input
from supervisor_graph.nodes.turn.routing import (
    ITERATION_NODE,
    SUPERVISOR_NODE,
    after_answer,
    dispatch,
    end_update,
    error_result,
    finish_reason_of,
    left_open,
    results_pending,
    unanswered,
)
from supervisor_graph.nodes.turn.tools import ABORTED_TOOL_TEXT

__all__ = [
    "end_update",
    "finish_reason_of",
    "free_updates",
    "iteration_of_run",
    "make_supervisor_node",
    "model_input",
    "repair_calls",
    "route_turn",
    "step_finish",
]

log = logging.getLogger("supervisor_graph")


def iteration_of_run(messages: Sequence[BaseMessage], free_limit: int = 0) -> int:
    """Supervisor iterations so far in the current run (AI turns since its input).

    With `free_limit`, turns that only update working memory are not iterations, up
    to that many of them: a model that does nothing else cannot loop forever.
    """
    count = free = 0
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if isinstance(message, AIMessage):
            if free_limit and is_update_turn(message):
                free += 1
            else:
                count += 1
        elif is_run_input(message):
            break
    return count + max(0, free - free_limit)


def free_updates(spec: AgentSpec, opts: RunOptions) -> int:
    """How many update-only turns a run of `spec` does not count (see `iteration_of_run`):
    enough for a model that updates before answering each time, few enough that one
    doing nothing else soon reaches `max_steps`."""
    return opts.max_steps + 2 if spec.working_memory is not None else 0


def repair_calls(ai: AIMessage) -> tuple[AIMessage, list[ToolMessage]]:
    """The turn's tool calls made safe to run, and error results for those that cannot.

    Calls whose arguments were not valid JSON become regular calls with an error
    result, so the model sees what went wrong and the transcript stays well formed.
    Every call gets an id of its own: a model that repeats an id (or gives none) would
    otherwise have two calls answer one id.
    """
    ids = [call["id"] for call in ai.tool_calls]
    if not ai.invalid_tool_calls and all(ids) and len(set(ids)) == len(ids):
        return ai, []  # the common turn: nothing to copy
    calls: list[dict[str, Any]] = [dict(call) for call in ai.tool_calls]
    details: dict[int, str] = {}
    for bad in ai.invalid_tool_calls:
        details[len(calls)] = bad.get("error") or f"arguments were not valid JSON: {json.dumps(bad.get('args'))[:200]}"
        calls.append({"name": bad.get("name") or "unknown", "args": {}, "id": bad.get("id") or "", "type": "tool_call"})
    seen: set[str] = set()
    for call in calls:
        base = call["id"] or f"call_{uuid.uuid4().hex[:24]}"
        call["id"], n = base, 1
        while call["id"] in seen:
            n += 1
            call["id"] = f"{base}-{n}"
        seen.add(call["id"])
    errors = [error_result(calls[i], f"malformed arguments for {calls[i]['name']}: {detail}") for i, detail in details.items()]
    return ai.model_copy(update={"tool_calls": calls, "invalid_tool_calls": []}), errors


async def _update_memory(
    spec: AgentSpec,
    state: SupervisorState,
    runtime: Runtime[RunContext],
    handle: RunHandle,
    response: AIMessage,
    value: Any,
) -> tuple[list[tuple[ToolMessage, Any]], dict[str, Any]]:
    """Apply the turn's working-memory updates in order: each call's result and the
    value after it, and the state update (thread scope). A bad update changes nothing."""
    config = spec.working_memory
    assert config is not None
    results: list[tuple[ToolMessage, Any]] = []
    state_update: dict[str, Any] = {}
    for call in response.tool_calls:
        if call["name"] != WORKING_MEMORY_TOOL:
            continue
        try:
            updated = apply_update(config, value, call["args"])
            state_update = await write_value(config, spec.agent_id, updated, runtime.store, handle)
        except WorkingMemoryError as exc:
            results.append((update_result(call, str(exc)), value))
            continue
        value = updated
        results.append((update_result(call), value))
    return results, state_update


def make_supervisor_node(spec: AgentSpec) -> Any:
    async def supervisor(state: SupervisorState, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        ctx = runtime.context if runtime is not None else None
        if isinstance(ctx, RunContext) and ctx.background_task and spec.background is not None:
            return server_task_start(ctx.background_task)  # this run is a background task a server hosts
        messages = state.get("messages") or []
        if results_pending(messages, spec.client_tools):
            return None  # a longer parallel branch will bring the last result
        pending = [feedback_message(text, "hook") for text in state.get("feedback") or []]
        consumed: dict[str, Any] = {"feedback": Overwrite([])} if pending else {}
        if state.get("bail"):
            return Command(update={**end_update(state, "bail", pending), **consumed}, goto=END)
        opts, handle = run_scope(spec, config, runtime)
        opts = await with_version(spec, opts, handle, runtime)
        if spec.guarded and (trip := tool_trip(messages)) is not None:  # a guard blocked a tool of the last turn
            return tripwire_end(state, messages, trip, handle, consumed)
        if spec.guarded and (held := state.get("guard_held")):  # an answer a guard escalated
            emit = Emitter(runtime, handle)
            settled = await settle_held(state, opts, handle, config, emit, messages, held, consumed)
            step = iteration_of_run(messages, free_updates(spec, opts)) + 1
            if (settled.update or {}).get("tripwire"):  # declined: the answer never reaches the thread
                dropped(handle, emit, [held["message"]], step)
            elif isinstance(held["message"], AIMessage):  # approved: its call ends here, for AG-UI's usage
                emit("step-finish", step_finish(held["message"], step))
            return settled
        if handle.abort_signal is not None and handle.abort_signal.is_set():
            return Command(update={**end_update(state, "abort", pending), **consumed}, goto=END)
        if spec.client_tools and unanswered(messages):
            # only client tools are left: the caller answers them on the next call
            return Command(update={**end_update(state, "tool-calls", pending), **consumed}, goto=END)
        iteration = iteration_of_run(messages, free_updates(spec, opts))
        if iteration == 0:
            closed = left_open(messages, ABORTED_TOOL_TEXT, spec.client_tools)
            if closed:  # a run cancelled from outside left calls open: close them first
                return Command(update={"messages": closed}, goto=SUPERVISOR_NODE)
        stop_at = state.get("stop_at")
        if iteration >= opts.max_steps or (stop_at is not None and iteration >= stop_at):
            reason = "max_steps" if stop_at is None else "stop"
            return Command(update={**end_update(state, reason, pending), **consumed}, goto=END)
        if over_budget(handle.budget):  # a budget is used up: stop before the model call (SPEC §25)
            return Command(update={**end_update(state, "budget", pending), **consumed}, goto=END)

        emit = Emitter(runtime, handle)
        emit("step-start", {"iteration": iteration + 1})
        override = handle.override
        refs = opts.delegation.enable_result_references or bool(spec.preview_tokens)  # a preview names its ref
        schema = opts.output_schema or spec.output_schema
        model = await spec.resolve_model(handle.request_context, refs, override, schema)
        system = await spec.resolve_instructions(handle.request_context, override)
        memory_value: Any = None
        if spec.working_memory is not None:
            memory_value = await read_value(spec.working_memory, spec.agent_id, state, runtime.store, handle)
            section = spec.working_memory.render(memory_value)
            system = f"{system}\n\n{section}" if system else section
        system = budget_notice(handle.budget, system)  # a budget at 80%: one line, this call only
        history = [*messages, *pending] if pending else messages
        wrote: dict[str, Any] = {}  # state keys the agent's steps write with this turn
        answers: list[Any] = []  # what the model answered this step: a guard may keep it out of the thread

        async def invoke(history: Sequence[BaseMessage], streamed: bool = False, send: bool = False) -> Any:
            request = ModelRequest(model, system, history, handle.context_messages, state, config, handle, emit)
            try:
                out = await call_model(spec, request, quiet_answer=bool(spec.guarded), streamed=streamed, send=send)
            finally:
                wrote.update(request.updates)
                for usage in request.spent:  # a summary's tokens count against budgets too
                    spend(handle.budget, usage)
            answers.append(out[0] if streamed else out)
            return out

        guarded: list[BaseMessage] = []  # a redacted input, stored with the turn
        if spec.guarded:  # input, then output guards around the call (SPEC §30)
            turn = await guarded_turn(spec, invoke, list(history), handle, config, emit)
            if turn.tripwire is not None or turn.response is None:
                dropped(handle, emit, answers, iteration + 1)  # a parallel input guard may trip after the answer
            if turn.tripwire is not None:
                return tripwire_end(state, messages, turn.tripwire, handle, consumed)
            if turn.response is None:  # sent back: the model answers again, its answer unstored
                return Command(update={"messages": [*turn.stored, *pending, turn.feedback], **consumed}, goto=SUPERVISOR_NODE)
            response, guarded = turn.response, turn.stored
            if turn.held is not None:  # escalated: held out of the thread until a person decides
                held = {"message": response, "guard": list(turn.held), "stored": guarded}
                return Command(update={"guard_held": held, "messages": [*guarded, *pending], **consumed}, goto=SUPERVISOR_NODE)
        else:
            response = await invoke(history)
        if not isinstance(response, AIMessage):
            raise TypeError(f"Agent {spec.agent_id!r}: the model returned {type(response).__name__}, not an AIMessage")
        spend(handle.budget, response.usage_metadata)
        response, errors = repair_calls(response)
        if spec.background is not None and any(c["name"] in CONTROL_TOOLS for c in response.tool_calls):
            control = [c for c in response.tool_calls if c["name"] in CONTROL_TOOLS]
            tasks: Mapping[str, Any] = state.get("background_tasks") or {}  # type: ignore[assignment]
            host = handle.background
            if host is None and spec.server_host_for is not None:
                server = spec.server_host_for(config)  # the server hosts the tasks of this thread
                host = server.control(handle.thread_id or "", dict(tasks)) if server is not None else None
            launching = [
                c["name"]
                for c in response.tool_calls
                if (key := spec.delegation_tools.get(c["name"])) is not None and spec.background.for_key(key) is not None
            ]
            errors.extend(await answer_control_calls(control, host, tasks, launching))
        memory_update: dict[str, Any] = {}
        updates: list[tuple[ToolMessage, Any]] = []
        if spec.working_memory is not None and any(c["name"] == WORKING_MEMORY_TOOL for c in response.tool_calls):
            updates, memory_update = await _update_memory(spec, state, runtime, handle, response, memory_value)
            errors.extend(result for result, _ in updates)

        if emit.active:
            for call in response.tool_calls:
                payload: dict[str, Any] = {
                    "tool_call_id": call["id"],
                    "tool_name": call["name"],
                    "args": call["args"],
                    "message_id": response.id,
                }
                if updates and call["name"] == WORKING_MEMORY_TOOL:
                    payload["working_memory"] = True  # an update, not a tool a client shows
                emit("tool-call", payload)
            emit("step-finish", step_finish(response, iteration + 1))
        for result, value in updates:
            if emit.active:
                emit(
                    "tool-error" if result.status == "error" else "tool-result",
                    {
                        "tool_call_id": result.tool_call_id,
                        "tool_name": WORKING_MEMORY_TOOL,
                        "result": result.content,
                        # the new value, for the AG-UI bridge's shared state
                        "working_memory": {"scope": spec.working_memory.scope, "value": value}  # type: ignore[union-attr]
                        if result.status != "error"
                        else None,
                    },
                )
        if spec.working_memory is not None and is_update_turn(response):
            # not an iteration: no hook, no dispatch, straight back to the model
            command: Command[Any] = Command(update={"messages": [response, *errors]}, goto=SUPERVISOR_NODE)
        elif schema is not None:
            command = _structured_turn(spec, opts, handle, state, response, errors, schema)
        else:
            command = route_turn(spec, opts, handle, state, response, errors)
        if iteration == 0 and (state.get("structured_response") is not None or state.get("structured_output_error")):
            command.update.setdefault("structured_response", None)  # type: ignore[union-attr]
            command.update.setdefault("structured_output_error", None)  # type: ignore[union-attr]
        if memory_update:
            command.update.update(memory_update)  # type: ignore[union-attr]
        if wrote:
            command.update.update(wrote)  # type: ignore[union-attr]
        if pending:
            command.update["messages"] = [*pending, *command.update["messages"]]  # type: ignore[index]
            command.update.update(consumed)  # type: ignore[union-attr]
        if guarded:
            command.update["messages"] = [*guarded, *command.update["messages"]]  # type: ignore[index]
        return command

    return supervisor


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


def _structured_turn(
    spec: AgentSpec,
    opts: RunOptions,
    handle: RunHandle,
    state: SupervisorState,
    response: AIMessage,
    errors: list[ToolMessage],
    schema: OutputSchema,
) -> Command[Any]:
    """A turn of an agent with an output schema (SPEC §28): tool calls go on as usual;
    the answer is validated, sent back once more when invalid, else the run's value."""
    errors.extend(stray_final_answers(response))
    messages = state.get("messages") or []
    settled = settle(schema, response, retries_used(messages, run_start(messages)) < opts.output_retries)
    if settled is None:
        return route_turn(spec, opts, handle, state, response, errors)
    if settled.retry:
        return Command(update={"messages": [response, *errors, *settled.messages]}, goto=SUPERVISOR_NODE)
    if settled.error is not None:
        update = end_update(state, "error", [response, *errors, *settled.messages])
        update["structured_output_error"] = settled.error.to_dict()
        return Command(update=update, goto=END)
    if not settled.messages:  # the answer's text is the JSON: an ordinary last turn
        command = route_turn(spec, opts, handle, state, response, errors)
    else:  # a final answer tool call, answered and followed by the answer as text
        command = Command(update=end_update(state, "stop", [response, *errors, *settled.messages]), goto=after_answer(opts))
    command.update["structured_response"] = settled.value  # type: ignore[index]
    return command


def route_turn(
    spec: AgentSpec,
    opts: RunOptions,
    handle: RunHandle,
    state: SupervisorState,
    response: AIMessage,
    errors: list[ToolMessage],
) -> Command[Any]:
    """The update and destination after a model turn."""
    if opts.on_iteration_complete is not None:
        return Command(update={"messages": [response, *errors]}, goto=ITERATION_NODE)
    if not response.tool_calls:
        return Command(update=end_update(state, finish_reason_of(response), [response]), goto=after_answer(opts))
    sends, more_errors = dispatch(spec, opts, handle, response, {e.tool_call_id for e in errors})
    errors.extend(more_errors)
    return Command(update={"messages": [response, *errors]}, goto=sends or SUPERVISOR_NODE)
