"""The tools node: runs one of the agent's own tool calls (SPEC §9).

Each tool call of a turn is its own `Send` task, so a call that pauses (approval,
`suspend()`) never makes another call of the same turn run twice: LangGraph keeps the
writes of finished tasks and re-runs only the paused one on resume.

What happens around the tool is the agent's steps' (`awrap_tool_call`,
nodes/steps/protocol.py), outermost first: the decision on a call that needs one
(`Approvals`, nodes/steps/decisions.py: asked with `interrupt()` before any side effect,
consumed durably; approve, edit or reject), the `tool_args` and `tool_result` guards
(`GuardedTurn`, nodes/guards/step.py), the note on an edited call's result, the budget
meters. This node builds the call's `ToolRequest`, runs the tool innermost (`_execute`:
`suspend()` and `current_tool_call()` answer for the call as the steps handed it on, and
a failing tool is a result the model sees) and announces the result.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import Any, NamedTuple, get_origin

from langchain_core.messages import BaseMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolRuntime
from langgraph.runtime import Runtime
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel, ConfigDict, ValidationError

from supervisor_graph.nodes.guards.boundaries import settle_held_result
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.options import RunContext, RunHandle
from supervisor_graph.nodes.scope.context import using_request_context
from supervisor_graph.nodes.scope.lookup import run_scope
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.steps.approval_journal import (
    INTERRUPTED_TOOL_TEXT,
    TOOL_RUNS_NAMESPACE,
    approval_consumed,
    tool_run_key,
)
from supervisor_graph.nodes.steps.decisions import (
    DECLINED_TEXT,
    DecisionError,
    asks_approval,
    parse_decision,
    pause_payload,
)
from supervisor_graph.nodes.steps.protocol import ToolRequest, as_tool_message, tool_state
from supervisor_graph.nodes.turn.routing import SUPERVISOR_NODE, TOOLS_NODE, error_result, failed_result, last_turn
from supervisor_graph.nodes.turn.turn import steps_of_run

# with the approval journal's names and the decisions' the modules that import them from here use
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

ABORTED_TOOL_TEXT = "[Aborted] The run was cancelled before this tool call finished."
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
    updates: dict[str, Any] | None = None
    """State keys the tool wrote (it returned a LangGraph `Command`, as a LangChain
    middleware's tool does)."""


def needs_approval(spec: AgentSpec, call: ToolCall | Mapping[str, Any], agent_wide: bool) -> bool:
    """True when `call` must wait for a decision before it runs (SPEC §9)."""
    return asks_approval(spec.tools[call["name"]], agent_wide)


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
    """Run one of the agent's own tool calls through its steps (`steps_of_run`): the
    approval first when it needs one, the guards, the tool.

    `graph_ns` names the graph whose call this is ("" for the top-level agent, a
    delegation's namespace for a subagent): it keys the approval journal and the pause
    payloads, so it must be the same every time this call is asked or run.
    """
    request = ToolRequest(
        call, spec.tools[call["name"]], runtime, config, handle,
        spec=spec, namespace=graph_ns, emit=emit, approve_all=agent_wide_approval,
    )  # fmt: skip
    output = await steps_of_run(spec, handle).call_tool(request, _execute)
    ran = request.ran()
    notes = request.notes
    run = ToolRun(
        as_tool_message(output, ran), bool(notes.get("bail")), notes.get("answers", 0), notes.get("held"), notes.get("updates")
    )
    if run.held is None and emit.active:  # a held result is no result yet: a person decides first
        result = run.message
        kind = "tool-error" if result.status == "error" else "tool-result"
        emit(kind, {"tool_call_id": ran["id"], "tool_name": ran["name"], "args": ran["args"], "result": result.content})
    return run


async def _execute(request: ToolRequest) -> ToolMessage:
    """The tool run, innermost of the call's steps, for the call as they hand it on
    (`suspend()` pauses and `current_tool_call()` answers for that one). A failing tool
    is a result the model sees, here, so the steps around it read it as any result
    (the `tool_result` guard checks it); what a step raises is no tool's failure."""
    call, tool = request.tool_call, request.tool
    call_id = call["id"] or ""
    current: dict[str, Any] = {
        "call": ToolCallInfo(id=call_id, name=call["name"], args=call["args"]),
        "payload": pause_payload("suspend", call, request.handle, namespace=request.namespace),
        "resume_schema": (tool.metadata or {}).get("resume_schema"),
    }
    token = _current_call.set(current)
    try:
        output = await tool.ainvoke(_with_runtime(tool, call, request), request.config)
    except GraphBubbleUp:
        raise
    except _SuspendCancelled:
        request.notes["bail"] = True  # the caller cancelled a suspended call: the agent's loop stops there
        return ToolMessage(content=CANCELLED_TEXT, tool_call_id=call_id, name=call["name"], status="error")
    except ValidationError as exc:
        return error_result(call, f"invalid arguments for {call['name']}: {exc.error_count()} error(s): {exc}")
    except Exception as exc:  # noqa: BLE001 - a failing tool is a tool error the model sees
        request.notes["raised"] = exc  # for a step that acts on the failure itself (LangChain's ToolRetry)
        return failed_result(call, exc)
    finally:
        _current_call.reset(token)
        request.answered(current.get("answers", 0))
    if isinstance(output, Command):  # a tool that writes state: its message is the result
        return _written(output, call, request)
    return as_tool_message(output, call)


def _with_runtime(tool: BaseTool, call: Any, request: ToolRequest) -> dict[str, Any]:
    """The call as the tool takes it: with a LangGraph `ToolRuntime` for a tool that asks
    for one (a LangChain middleware's tool), as LangGraph's `ToolNode` gives it, its
    `state` the agent's as the call's turn left it (`tool_state`): what a tool changes
    there directly is not kept (a tool writes state by returning a `Command`)."""
    name = _runtime_parameter(tool)
    if name is None:
        return {**call, "type": "tool_call"}
    runtime = request.runtime
    injected: ToolRuntime[Any, Any] = ToolRuntime(
        state=tool_state(request.handle), context=getattr(runtime, "context", None), config=request.config,
        stream_writer=getattr(runtime, "stream_writer", None) or _nowhere, tool_call_id=call["id"],
        store=getattr(runtime, "store", None), tools=list(request.spec.tools.values()) if request.spec is not None else [],
    )  # fmt: skip
    return {**call, "args": {**call["args"], name: injected}, "type": "tool_call"}


def _nowhere(chunk: Any) -> None:
    """Where a tool's custom stream goes when the node has no stream writer."""


def _runtime_parameter(tool: BaseTool) -> str | None:
    function = getattr(tool, "coroutine", None) or getattr(tool, "func", None)
    return _runtime_parameter_of(function) if function is not None else None


@functools.lru_cache(maxsize=1024)
def _runtime_parameter_of(function: Any) -> str | None:
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # noqa: BLE001 - annotations that do not resolve: nothing to inject
        return None
    return next((name for name, kind in hints.items() if (get_origin(kind) or kind) is ToolRuntime), None)


def _written(command: Command[Any], call: Any, request: ToolRequest) -> ToolMessage:
    update = dict(command.update) if isinstance(command.update, Mapping) else {}
    messages = update.pop("messages", None) or []
    request.notes["updates"] = update
    result = next((m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == call["id"]), None)
    return result if result is not None else ToolMessage(content="", tool_call_id=call["id"] or "", name=call["name"])


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
        update = {"messages": [run.message], **(run.updates or {}), **({"bail": True} if run.bail else {})}
        return Command(update=update, goto=SUPERVISOR_NODE)

    return tools
