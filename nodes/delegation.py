"""Hook nodes on a delegation edge: `<key>.start` before the subagent, `<key>.complete` after.

The supervisor routes a delegation through these nodes only when the run has the hook
(`on_delegation_start`, `on_delegation_complete`); otherwise it sends the call straight
to the subagent node, so a hook that is not set costs nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Command, Send
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nodes.context import RequestContext
from nodes.options import RunContext
from nodes.routing import SUPERVISOR_NODE, DelegationTask
from nodes.scope import run_scope
from nodes.spec import AgentSpec, maybe_await
from nodes.supervisor import iteration_of_run

__all__ = [
    "DelegationCompleteContext",
    "DelegationCompleteResult",
    "DelegationStartContext",
    "DelegationStartResult",
    "make_complete_node",
    "make_start_node",
    "validate_hook_result",
]

log = logging.getLogger("supervisor_graph")

DEFAULT_REJECTION = "The delegation was rejected."


class DelegationStartContext(BaseModel):
    """What `on_delegation_start` receives."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    primitive_id: str
    prompt: str
    iteration: int
    request_context: RequestContext
    tool_call_id: str = ""


class DelegationStartResult(BaseModel):
    """What `on_delegation_start` may return (a dict of these keys works too)."""

    model_config = ConfigDict(extra="forbid")

    proceed: bool = True
    rejection_reason: str | None = None
    modified_prompt: str | None = None
    modified_max_steps: int | None = Field(default=None, ge=1)
    thread_metadata: dict[str, Any] | None = None


class DelegationCompleteContext(BaseModel):
    """What `on_delegation_complete` receives; call `bail()` to stop the parent loop."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    primitive_id: str
    result: dict[str, Any]
    success: bool
    error: Any = None
    messages: list[BaseMessage] = Field(default_factory=list)
    tool_call_id: str = ""
    bailed: bool = False

    def bail(self) -> None:
        self.bailed = True


class DelegationCompleteResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    feedback: str | None = None
    result_text: str | None = None


def validate_hook_result(model: type[BaseModel], value: Any, hook: str) -> Any:
    if value is None:
        return model()
    if isinstance(value, model):
        return value
    if not isinstance(value, dict):
        raise TypeError(f"{hook} must return None, a dict or {model.__name__}; it returned {type(value).__name__}")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        fields = ", ".join(".".join(str(p) for p in e["loc"]) for e in exc.errors())
        raise ValueError(f"{hook} returned an invalid value (fields: {fields}): {exc}") from None


def make_start_node(parent: AgentSpec, key: str, sub_id: str) -> Any:
    async def delegation_start(task: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        opts, handle = run_scope(parent, config, runtime)
        hook = opts.delegation.on_delegation_start
        call = task["call"]
        if hook is None:
            return Command(goto=Send(key, task))
        from langgraph.pregel._read import ChannelRead

        messages = ChannelRead.do_read(config, select="messages", fresh=False) or []
        ctx = DelegationStartContext(
            primitive_id=sub_id,
            prompt=task["prompt"],
            iteration=iteration_of_run(messages),
            request_context=handle.request_context,
            tool_call_id=call["id"] or "",
        )
        try:
            decision = validate_hook_result(DelegationStartResult, await maybe_await(hook(ctx)), "on_delegation_start")
        except Exception as exc:  # noqa: BLE001 - hook errors follow the warn strategy
            if opts.delegation.hook_error_strategy == "throw":
                rejected = ToolMessage(
                    content=f"[Delegation Failed] on_delegation_start failed: {type(exc).__name__}",
                    tool_call_id=call["id"] or "",
                    name=call["name"],
                    status="error",
                )
                return Command(update={"messages": [rejected]}, goto=SUPERVISOR_NODE)
            log.warning("on_delegation_start for %r raised %s: %s; continuing", sub_id, type(exc).__name__, exc)
            return Command(goto=Send(key, task))
        if not decision.proceed:
            reason = decision.rejection_reason or DEFAULT_REJECTION
            rejected = ToolMessage(
                content=f"[Delegation Rejected] {reason}", tool_call_id=call["id"] or "", name=call["name"]
            )
            return Command(update={"messages": [rejected]}, goto=SUPERVISOR_NODE)
        forward: DelegationTask = {
            **task,
            "prompt": decision.modified_prompt if decision.modified_prompt is not None else task["prompt"],
            "max_steps": decision.modified_max_steps or task.get("max_steps"),
        }
        return Command(goto=Send(key, forward))

    delegation_start.__name__ = f"{key}_start"
    return delegation_start


def make_complete_node(parent: AgentSpec, key: str, sub_id: str) -> Any:
    async def delegation_complete(payload: dict[str, Any], config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        opts, handle = run_scope(parent, config, runtime)
        message: ToolMessage = payload["message"]
        call = payload["call"]
        hook = opts.delegation.on_delegation_complete
        if hook is None:
            return Command(update={"messages": [message]}, goto=SUPERVISOR_NODE)
        transcript, error, tool_results = handle.delegations.pop(call["id"] or "", ([], None, []))
        artifact = dict(message.artifact or {})
        success = message.status != "error"
        ctx = DelegationCompleteContext(
            primitive_id=sub_id,
            result={
                "text": message.content if success else "",
                "usage": artifact.get("usage"),
                "finish_reason": artifact.get("finish_reason"),
                "sub_agent_tool_results": tool_results,
                "sub_agent_pending_tool_calls": artifact.get("sub_agent_pending_tool_calls", []),
                "sub_agent_thread_id": artifact.get("sub_agent_thread_id"),
                "sub_agent_resource_id": artifact.get("sub_agent_resource_id"),
            },
            success=success,
            error=error,
            messages=transcript,
            tool_call_id=call["id"] or "",
        )
        try:
            outcome = validate_hook_result(DelegationCompleteResult, await maybe_await(hook(ctx)), "on_delegation_complete")
        except Exception as exc:  # noqa: BLE001
            log.warning("on_delegation_complete for %r raised %s: %s", sub_id, type(exc).__name__, exc)
            outcome = DelegationCompleteResult()
        if outcome.result_text is not None:
            message = message.model_copy(update={"content": outcome.result_text})
        update: dict[str, Any] = {"messages": [message]}
        if outcome.feedback:
            update["feedback"] = [outcome.feedback]
        if ctx.bailed:
            update["finish_reason"] = "bail"
            update["bail"] = True
        return Command(update=update, goto=SUPERVISOR_NODE)

    delegation_complete.__name__ = f"{key}_complete"
    return delegation_complete
