"""Where a supervisor turn goes next: delegations, the tools node, or the end.

Shared by the supervisor node (right after the model answers) and the iteration node
(after `on_iteration_complete`), so the routing rules live in one place.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage, ToolCall, ToolMessage
from langgraph.graph import END
from langgraph.types import Overwrite, Send
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from supervisor_graph.nodes.delegation.references import RefSpec, expand_refs
from supervisor_graph.nodes.options import RunHandle, RunOptions
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.state import SupervisorState, is_run_input

__all__ = [
    "DelegationArgs",
    "DelegationTask",
    "after_answer",
    "dispatch",
    "end_update",
    "error_result",
    "failed_result",
    "finish_reason_of",
    "last_turn",
    "results_pending",
    "unanswered",
    "left_open",
    "start_node",
    "complete_node",
    "TOOLS_NODE",
    "SUPERVISOR_NODE",
    "ITERATION_NODE",
    "TASK_COMPLETE_NODE",
]

SUPERVISOR_NODE = "supervisor"
TOOLS_NODE = "tools"
ITERATION_NODE = "iteration"
TASK_COMPLETE_NODE = "task_complete"


def start_node(key: str) -> str:
    return f"{key}.start"


def complete_node(key: str) -> str:
    return f"{key}.complete"


class DelegationArgs(BaseModel):
    """Arguments of an `agent-<key>` tool call."""

    model_config = ConfigDict(extra="ignore")

    prompt: str = Field(min_length=1, description="The task for the subagent.")
    max_steps: int | None = Field(default=None, ge=1, description="Step limit for the subagent.")
    context_from_refs: list[str | RefSpec] | None = None

    @field_validator("max_steps", mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any) -> Any:
        # models may send "3" for 3, but `true` is no step count (pydantic reads it as 1)
        if isinstance(value, bool):
            raise ValueError("must be a number of steps, not a boolean")
        return value


class DelegationTask(TypedDict, total=False):
    """The `Send` payload of one delegation: small and serialisable (it is checkpointed)."""

    call: ToolCall
    key: str
    prompt: str
    max_steps: int | None
    budget: dict[str, Any] | None  # `modified_budget` from on_delegation_start (JSON: the Send is checkpointed)
    output_schema: dict[str, Any]  # `modified_output_schema` from on_delegation_start, as a JSON schema
    guard_checked: bool  # its `delegation` guards have decided (nodes/guards/boundaries.py)
    # set by the start hook node: the subagent's request-context copy (plain JSON) and
    # metadata for its thread
    request_context: dict[str, Any]
    thread_metadata: dict[str, Any] | None


def error_result(call: ToolCall | dict[str, Any], text: str) -> ToolMessage:
    return ToolMessage(
        content=f"Error: {text}",
        tool_call_id=call["id"] or "",
        name=call.get("name"),
        status="error",
    )


def failed_result(call: ToolCall | dict[str, Any], exc: Exception) -> ToolMessage:
    """The result the model sees for a tool call that raised `exc`."""
    return error_result(call, f"{call['name']} failed: {type(exc).__name__}: {exc}")


def _short(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()
    )


def dispatch(
    spec: AgentSpec,
    opts: RunOptions,
    handle: RunHandle,
    ai: AIMessage,
    answered: set[str] | frozenset[str] = frozenset(),
) -> tuple[list[Send], list[ToolMessage]]:
    """Sends for the tool calls of `ai` not in `answered`, and error results for calls
    that cannot run."""
    sends: list[Send] = []
    errors: list[ToolMessage] = []
    tool_calls: list[ToolCall] = []
    # through `<key>.start` when the run has that hook (an agent's `delegation` guards run
    # in the subagent node otherwise, and send only a pause to `<key>.start`: SPEC §30)
    via_start = opts.delegation.on_delegation_start is not None
    for call in ai.tool_calls:
        if call["id"] in answered:
            continue
        name = call["name"]
        key = spec.delegation_tools.get(name)
        if key is not None:
            try:
                args = DelegationArgs.model_validate(call["args"])
            except ValidationError as exc:
                errors.append(error_result(call, f"invalid arguments for {name}: {_short(exc)}"))
                continue
            prompt = args.prompt
            if args.context_from_refs and (opts.delegation.enable_result_references or spec.preview_tokens):
                prompt = expand_refs(handle, prompt, args.context_from_refs)
            task: DelegationTask = {"call": call, "key": key, "prompt": prompt, "max_steps": args.max_steps}
            sends.append(Send(start_node(key) if via_start else key, task))
        elif name in spec.client_tools:
            continue  # the caller runs it: the turn ends with the call pending
        elif name in spec.tools and (handle.override is None or handle.override.tools is None or name in handle.override.tools):
            tool_calls.append(call)
        else:
            own = spec.tools if handle.override is None or handle.override.tools is None else handle.override.tools
            known = ", ".join(sorted([*spec.delegation_tools, *own])) or "none"
            errors.append(error_result(call, f"there is no tool named {name!r}; available tools: {known}"))
    # one task per call: a call that pauses never makes another one run twice
    sends.extend(Send(TOOLS_NODE, {"call": call}) for call in tool_calls)
    return sends, errors


def finish_reason_of(ai: AIMessage) -> str:
    reason = (ai.response_metadata or {}).get("finish_reason") or (ai.response_metadata or {}).get("stop_reason")
    return "length" if reason in ("length", "max_tokens") else "stop"


def end_update(state: SupervisorState, finish_reason: str, messages: Sequence[BaseMessage] | None = None) -> dict[str, Any]:
    """The update that ends a run: its finish reason, and per-run flags cleared."""
    update: dict[str, Any] = {"finish_reason": finish_reason}
    if messages:
        update["messages"] = list(messages)
    if state.get("stop_at") is not None:
        update["stop_at"] = None
    if state.get("bail"):
        update["bail"] = Overwrite(False)
    if state.get("tripwire"):
        update["tripwire"] = None
    return update


def after_answer(opts: RunOptions) -> str:
    return TASK_COMPLETE_NODE if opts.is_task_complete else END


def last_turn(messages: Sequence[BaseMessage]) -> tuple[int, AIMessage | None]:
    """Index and message of the current run's last AI message."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if isinstance(message, AIMessage):
            return i, message
        if is_run_input(message):
            break
    return -1, None


def unanswered(messages: Sequence[BaseMessage]) -> list[ToolCall]:
    """Tool calls of the current run's last AI turn that have no result yet."""
    index, ai = last_turn(messages)
    if ai is None or not ai.tool_calls:
        return []
    answered = {m.tool_call_id for m in messages[index + 1 :] if isinstance(m, ToolMessage)}
    return [call for call in ai.tool_calls if call["id"] not in answered]


def results_pending(messages: Sequence[BaseMessage], client_tools: frozenset[str] = frozenset()) -> bool:
    """True while some tool call of the last AI turn that this graph runs has no result.

    Parallel branches of different lengths (a rejected delegation and a real one)
    reach the supervisor in different steps; it waits for the last one. Client tools
    are the caller's to answer.
    """
    return any(call["name"] not in client_tools for call in unanswered(messages))


def left_open(messages: Sequence[BaseMessage], text: str, keep: frozenset[str] = frozenset()) -> list[BaseMessage]:
    """When a new run's input follows a turn whose tool calls never got results (a run
    cancelled from outside: `runs.cancel`, a cancelled `ainvoke` task), the update that
    gives each such call the result `text` before that input (the input moves after
    them, under new ids); [] when there is nothing to close. Calls named in `keep`
    (client tools, the caller's to answer) stay open.

    The graph does this itself, so it holds whoever drives it (SPEC §23)."""
    i = len(messages) - 1
    while i >= 0 and not isinstance(messages[i], AIMessage):
        i -= 1
    if i < 0:
        return []
    ai = messages[i]
    assert isinstance(ai, AIMessage)
    after = messages[i + 1 :]
    first_input = next((k for k, m in enumerate(after) if is_run_input(m)), None)
    if not ai.tool_calls or first_input is None:
        return []
    answered = {m.tool_call_id for m in after if isinstance(m, ToolMessage)}
    missing = [call for call in ai.tool_calls if call["id"] not in answered and call["name"] not in keep]
    if not missing:
        return []
    moved = after[first_input:]
    return [
        *(RemoveMessage(id=m.id or "") for m in moved),
        *(ToolMessage(content=text, tool_call_id=call["id"] or "", name=call["name"], status="error") for call in missing),
        *(m.model_copy(update={"id": str(uuid.uuid4())}) for m in moved),
    ]
