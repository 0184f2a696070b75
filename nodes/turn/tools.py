"""The tools node: runs one of the agent's own tool calls (SPEC §9).

Each tool call of a turn is its own `Send` task, so a call that pauses (approval,
`suspend()`) never makes another call of the same turn run twice: LangGraph keeps the
writes of finished tasks and re-runs only the paused one on resume.

Approval happens *before* any side effect: the node asks with `interrupt()` and runs
the tool only once the answer is a decision it allows (nodes/steps/decisions.py): approve,
edit (the tool runs with the edited arguments) or reject (it never runs; the model sees
the reason). An invalid answer is asked again with a fresh `interrupt()`, so it never
consumes the pending approval.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel, ConfigDict, ValidationError

from supervisor_graph.nodes.guards.boundaries import guard_tool_args, guard_tool_result, settle_held_result
from supervisor_graph.nodes.guards.core import guarded_at
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.options import RunContext, RunHandle
from supervisor_graph.nodes.scope.context import using_request_context
from supervisor_graph.nodes.scope.lookup import run_scope
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.steps.decisions import (
    DECLINED_TEXT,
    DecisionError,
    Edit,
    Reject,
    approval_fields,
    declined_text,
    edited_result,
    parse_decision,
)
from supervisor_graph.nodes.steps.protocol import ToolRequest
from supervisor_graph.nodes.turn.routing import SUPERVISOR_NODE, TOOLS_NODE, error_result, last_turn
from supervisor_graph.nodes.turn.turn import steps_of_run

__all__ = [
    "ABORTED_TOOL_TEXT",
    "CANCEL_SUSPENDED",
    "CANCELLED_TEXT",
    "DECLINED_TEXT",
    "INTERRUPTED_TOOL_TEXT",
    "TOOL_RUNS_NAMESPACE",
    "ToolCallInfo",
    "ToolRun",
    "approval_answer",
    "approval_consumed",
    "current_tool_call",
    "ended_by_cancel",
    "is_cancel",
    "make_tools_node",
    "needs_approval",
    "pause_payload",
    "run_tool_call",
    "suspend",
    "tool_run_key",
]

INTERRUPTED_TOOL_TEXT = "[Interrupted] outcome unknown: the process stopped while this tool was running"
ABORTED_TOOL_TEXT = "[Aborted] The run was cancelled before this tool call finished."

# Where the tools node records, in the run's LangGraph store, that an approved call has
# started: an approval is consumed durably before its side effect (SPEC §19).
TOOL_RUNS_NAMESPACE = ("supervisor_graph", "tool_runs")


def tool_run_key(thread_id: Any, namespace: str, tool_call_id: str) -> str:
    """The journal key of one call: its thread, the namespace of the graph that made it
    (a delegation's, or "" for the top-level agent) and its id."""
    return json.dumps([str(thread_id), namespace, tool_call_id])


async def approval_consumed(store: BaseStore | None, thread_id: Any, namespace: str, tool_call_id: str) -> bool:
    """True when an approved call has already started (a crash may have cut it short)."""
    if store is None:
        return False
    return await store.aget(TOOL_RUNS_NAMESPACE, tool_run_key(thread_id, namespace, tool_call_id)) is not None
CANCELLED_TEXT = "The user cancelled this tool call while it waited; it did not finish."
# Resume value that cancels a suspended tool: `suspend()` does not return, the call's
# result is CANCELLED_TEXT, and the agent's loop ends there (finish reason "bail").
CANCEL_SUSPENDED = {"__supervisor_graph_cancel_suspended__": True}


def is_cancel(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("__supervisor_graph_cancel_suspended__") is True


def ended_by_cancel(messages: Sequence[BaseMessage]) -> bool:
    """True when the last turn of `messages` ended because the caller cancelled a
    suspended call (here, or in a delegation of this turn)."""
    index, ai = last_turn(messages)
    if ai is None:
        return False
    return any(
        isinstance(m, ToolMessage)
        and ((m.status == "error" and m.content == CANCELLED_TEXT) or (isinstance(m.artifact, dict) and m.artifact.get("cancelled")))
        for m in messages[index + 1 :]
    )


class _SuspendCancelled(BaseException):
    """Raised by `suspend()` when the caller cancels the call (a BaseException, so a
    tool's own `except Exception` cannot swallow it)."""

_current_call: ContextVar[dict[str, Any] | None] = ContextVar("supervisor_graph_tool_call", default=None)


class ToolCallInfo(BaseModel):
    """The model's tool call that the running tool answers (`current_tool_call()`)."""

    model_config = ConfigDict(frozen=True)

    id: str
    """The call's id: stored with the model's message, so it is the same when the call
    runs again after a retry, a resume or a restart. Use it as an idempotency key."""
    name: str
    args: dict[str, Any]


def current_tool_call() -> ToolCallInfo:
    """Inside a tool, the tool call it is answering.

    Example:
        >>> def execute(args):  # doctest: +SKIP
        ...     payments.create(amount=args.amount, idempotency_key=current_tool_call().id)

    Raises:
        RuntimeError: called outside a tool run by an agent.
    """
    current = _current_call.get()
    if current is None:
        raise RuntimeError("current_tool_call() can only be called inside a tool while an agent runs")
    return current["call"]  # type: ignore[no-any-return]


def pause_payload(kind: str, call: ToolCall | Mapping[str, Any], handle: RunHandle, **extra: Any) -> dict[str, Any]:
    """What a pause reports. `namespace` (in `extra`) is the checkpoint namespace of the
    graph whose tool pauses: it tells concurrent delegations to one subagent apart."""
    return {
        "kind": kind,
        "tool_call_id": call["id"],
        "tool_name": call["name"],
        "args": call["args"],
        "agent_path": list(handle.agent_path),
        "run_id": handle.run_id,
        **extra,
    }


def approval_answer(value: Any) -> bool | str:
    """`True` (approve or edit) / `False` (reject) from a well-formed answer, or a message
    saying what is wrong with it (the full check is `parse_decision`)."""
    try:
        return parse_decision(value).kind != "reject"
    except DecisionError as exc:
        return str(exc)


def suspend(payload: Any = None) -> Any:
    """Pause the run from inside a tool until the caller resumes it; returns the data the
    caller resumes with (validated against the tool's `resume_schema`, if it has one).

    Example:
        >>> def execute(args):  # doctest: +SKIP
        ...     answer = suspend({"question": "Which account?"})
        ...     return f"using {answer['account']}"
    """
    call = _current_call.get()
    if call is None:
        raise RuntimeError("suspend() can only be called inside a tool while an agent runs")
    schema: type[BaseModel] | None = call.get("resume_schema")
    request = {**call["payload"], "payload": payload}
    if schema is not None:
        request["resume_schema"] = schema.model_json_schema()
    while True:
        value = interrupt(request)
        call["answers"] = call.get("answers", 0) + 1
        if is_cancel(value):
            raise _SuspendCancelled()
        if schema is None:
            return value
        try:
            return schema.model_validate(value)
        except ValidationError as exc:
            # ask again: the suspension stays pending and answerable
            request = {**request, "error": f"resume data does not match the resume schema: {exc.errors()[0]['msg']}"}


class ToolRun(NamedTuple):
    """One tool call's outcome."""

    message: ToolMessage
    bail: bool
    """The caller cancelled a suspended call: the agent's loop stops there."""
    answers: int
    """How many pauses of this call were answered while it ran (`interrupt()` returned)."""
    held: tuple[str, str] | None = None
    """(guard, reason) of a `tool_result` escalation, for the caller to ask about (SPEC §30)."""


def needs_approval(spec: AgentSpec, call: ToolCall | Mapping[str, Any], agent_wide: bool) -> bool:
    """True when `call` must wait for a decision before it runs (SPEC §9)."""
    return agent_wide or bool((spec.tools[call["name"]].metadata or {}).get("require_approval"))


async def _approved(
    tool: BaseTool, call: ToolCall, config: RunnableConfig, runtime: Runtime[Any] | None, handle: RunHandle, graph_ns: str
) -> tuple[ToolCall, dict[str, Any] | None, ToolMessage | None, int]:
    """Ask a person about `call` (`interrupt()`, again while the answer is not a valid
    decision) and consume the approval durably: (the call as approved, its edited
    arguments, the result instead of a run when declined or already consumed, answers used)."""
    call_id = call["id"] or ""
    request = pause_payload("approval", call, handle, namespace=graph_ns, **approval_fields(tool))
    answers = 0
    while True:
        value = interrupt(request)
        answers += 1
        try:
            decision = parse_decision(value, allowed=request["allowed_decisions"], tool=tool)
            break
        except DecisionError as exc:  # asked again: the approval stays pending and answerable
            request = {**request, "error": str(exc)}
    edited: dict[str, Any] | None = None
    if isinstance(decision, Edit):
        call = {**call, "args": decision.args}  # type: ignore[typeddict-item]
        edited = decision.args
    if isinstance(decision, Reject):
        declined = ToolMessage(content=declined_text(decision.message), tool_call_id=call_id, name=call["name"], status="error")
        return call, edited, declined, answers
    if runtime is not None and runtime.store is not None:
        # consume the approval durably before the side effect: after a crash inside
        # the tool, the call ends as "outcome unknown" instead of running again
        thread_id = (config.get("configurable") or {}).get("thread_id")
        if await approval_consumed(runtime.store, thread_id, graph_ns, call_id):
            unknown = ToolMessage(content=INTERRUPTED_TOOL_TEXT, tool_call_id=call_id, name=call["name"], status="error")
            return call, edited, unknown, answers
        await runtime.store.aput(
            TOOL_RUNS_NAMESPACE,
            tool_run_key(thread_id, graph_ns, call_id),
            {"tool_name": call["name"], "run_id": handle.run_id},
            index=False,
        )
    return call, edited, None, answers


async def run_tool_call(
    spec: AgentSpec,
    call: ToolCall,
    config: RunnableConfig,
    runtime: Runtime[Any] | None,
    handle: RunHandle,
    agent_wide_approval: bool,
    graph_ns: str,
    emit: Emitter,
) -> ToolRun:
    """Run one of the agent's own tool calls: ask for approval first when it needs one
    (`interrupt()`), consume the approval durably, run the tool.

    `graph_ns` names the graph whose call this is ("" for the top-level agent, a
    delegation's namespace for a subagent): it keys the approval journal and the pause
    payloads, so it must be the same every time this call is asked or run.
    """
    tool = spec.tools[call["name"]]
    call_id = call["id"] or ""
    result: ToolMessage | None = None
    bail = False
    answers = 0
    edited: dict[str, Any] | None = None
    if needs_approval(spec, call, agent_wide_approval):
        call, edited, result, answers = await _approved(tool, call, config, runtime, handle, graph_ns)
    if result is None and "tool_args" in guarded_at(spec):  # after approval, before it runs (SPEC §30)
        call, result, asked = await guard_tool_args(spec, call, handle, config, emit, graph_ns)
        answers += asked
    if result is None:
        current: dict[str, Any] = {
            "call": ToolCallInfo(id=call_id, name=call["name"], args=call["args"]),
            "payload": pause_payload("suspend", call, handle, namespace=graph_ns),
            "resume_schema": (tool.metadata or {}).get("resume_schema"),
        }
        token = _current_call.set(current)
        try:
            output = await steps_of_run(spec, handle).call_tool(ToolRequest(call, tool, runtime, config, handle), _execute)
        except GraphBubbleUp:
            raise
        except _SuspendCancelled:
            output = ToolMessage(content=CANCELLED_TEXT, tool_call_id=call_id, name=call["name"], status="error")
            bail = True
        except ValidationError as exc:
            output = error_result(call, f"invalid arguments for {call['name']}: {exc.error_count()} error(s): {exc}")
        except Exception as exc:  # noqa: BLE001 - a failing tool is a tool error the model sees
            output = error_result(call, f"{call['name']} failed: {type(exc).__name__}: {exc}")
        finally:
            _current_call.reset(token)
            answers += current.get("answers", 0)
        result = output if isinstance(output, ToolMessage) else ToolMessage(content=str(output), tool_call_id=call_id, name=call["name"])
        if edited is not None:
            result = edited_result(result, edited)
        if "tool_result" in guarded_at(spec):  # before the model sees it (SPEC §30)
            result, held = await guard_tool_result(spec, call, result, handle, config, emit, graph_ns)
            if held is not None:
                return ToolRun(result, bail, answers, held)
    if emit.active:
        kind = "tool-error" if result.status == "error" else "tool-result"
        emit(kind, {"tool_call_id": call["id"], "tool_name": call["name"], "args": call["args"], "result": result.content})
    return ToolRun(result, bail, answers)


async def _execute(request: ToolRequest) -> Any:
    return await request.tool.ainvoke({**request.tool_call, "type": "tool_call"}, request.config)


def make_tools_node(spec: AgentSpec) -> Any:
    async def tools(payload: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        opts, handle = run_scope(spec, config, runtime)
        using_request_context(handle.request_context)
        # the namespace of the graph that made the call (this node's task is the last segment)
        graph_ns = str((config.get("configurable") or {}).get("checkpoint_ns", "")).rpartition("|")[0]
        if "held" in payload:  # a result a guard escalated: this fresh task only asks (SPEC §30)
            held = await settle_held_result(spec, payload, handle, config, Emitter(runtime, handle), graph_ns)
            return Command(update={"messages": [held]}, goto=SUPERVISOR_NODE)
        run = await run_tool_call(
            spec, payload["call"], config, runtime, handle, opts.require_tool_approval, graph_ns, Emitter(runtime, handle)
        )
        if run.held is not None:
            return Command(goto=Send(TOOLS_NODE, {"call": payload["call"], "held": {"message": run.message, "guard": list(run.held)}}))
        return Command(update={"messages": [run.message], **({"bail": True} if run.bail else {})}, goto=SUPERVISOR_NODE)

    return tools
