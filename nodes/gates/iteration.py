"""The iteration node: `on_iteration_complete` after every supervisor turn (SPEC §7).

Reached only when the run has the hook. It sees the turn just taken and may stop the
loop (`continue: False`) or add feedback; with both after a turn that called tools,
the model still gets one last turn to answer with the feedback, and that turn is a hard
stop: tool calls made in it never run.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import BaseMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, ConfigDict, Field

from supervisor_graph.nodes.delegation.hooks import validate_hook_result
from supervisor_graph.nodes.options import RunContext
from supervisor_graph.nodes.scope.lookup import run_scope
from supervisor_graph.nodes.spec import AgentSpec, maybe_await
from supervisor_graph.nodes.state import SupervisorState, feedback_message
from supervisor_graph.nodes.text import text_of
from supervisor_graph.nodes.turn.routing import (
    SUPERVISOR_NODE,
    after_answer,
    dispatch,
    end_update,
    finish_reason_of,
    last_turn,
)
from supervisor_graph.nodes.turn.supervisor import free_updates, iteration_of_run

__all__ = ["STOPPED_TOOL_TEXT", "IterationContext", "IterationResult", "make_iteration_node", "stopped_result"]

STOPPED_TOOL_TEXT = (
    "[Stopped] The run was stopped (on_iteration_complete returned continue: false) before this tool call ran."
)


def stopped_result(call: ToolCall) -> ToolMessage:
    return ToolMessage(content=STOPPED_TOOL_TEXT, tool_call_id=call["id"] or "", name=call["name"], status="error")

log = logging.getLogger("supervisor_graph")


class IterationContext(BaseModel):
    """What `on_iteration_complete` receives after each supervisor turn."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    iteration: int
    max_iterations: int
    text: str
    finish_reason: str
    tool_calls: list[ToolCall]
    messages: list[BaseMessage]


class IterationResult(BaseModel):
    """What `on_iteration_complete` may return: `{"continue": False, "feedback": "..."}` ends the loop
    after one more turn that answers with the feedback (a dict with these keys works too)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    continue_: bool = Field(default=True, alias="continue")
    feedback: str | None = None


def make_iteration_node(spec: AgentSpec) -> Any:
    async def iteration(state: SupervisorState, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        opts, handle = run_scope(spec, config, runtime)
        messages = state.get("messages") or []
        index, ai = last_turn(messages)
        assert ai is not None, "the iteration node runs after a supervisor turn"
        count = iteration_of_run(messages, free_updates(spec, opts), spec.steps.free)
        reason = "tool-calls" if ai.tool_calls else finish_reason_of(ai)
        hook = opts.on_iteration_complete
        decision = IterationResult()
        if hook is not None:
            ctx = IterationContext(
                iteration=count,
                max_iterations=opts.max_steps,
                text=text_of(ai),
                finish_reason=reason,
                tool_calls=list(ai.tool_calls),
                messages=list(messages),
            )
            try:
                decision = validate_hook_result(IterationResult, await maybe_await(hook(ctx)), "on_iteration_complete")
            except Exception as exc:  # noqa: BLE001 - a failing monitor must not end the run
                log.warning("on_iteration_complete raised %s: %s; continuing", type(exc).__name__, exc)

        feedback = [feedback_message(decision.feedback, "iteration")] if decision.feedback else []
        answered = {m.tool_call_id for m in messages[index + 1 :] if isinstance(m, ToolMessage)}
        stop_at = state.get("stop_at")
        if stop_at is not None and count >= stop_at:
            # The feedback turn is a hard stop (SPEC §7): its tool calls never run, and
            # each gets a result so the transcript stays valid for any provider.
            stopped = [stopped_result(call) for call in ai.tool_calls if call["id"] not in answered]
            return Command(update=end_update(state, "stop", [*stopped, *feedback]), goto=END)

        if not ai.tool_calls:
            if decision.feedback and decision.continue_:
                return Command(update={"messages": feedback}, goto=SUPERVISOR_NODE)
            return Command(update=end_update(state, reason, feedback), goto=after_answer(opts))

        sends, errors = dispatch(spec, opts, handle, ai, answered)
        update: dict[str, Any] = {}
        if errors:
            update["messages"] = errors
        if decision.feedback:
            update["feedback"] = [decision.feedback]
        if not decision.continue_:
            # Finish the tool calls (the transcript needs their results), then stop;
            # with feedback, one last turn lets the model answer with it.
            update["stop_at"] = count + 1 if decision.feedback else count
        return Command(update=update, goto=sends or SUPERVISOR_NODE)

    return iteration
