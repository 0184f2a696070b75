"""The guards' step (SPEC §30, §32): where an agent's guards act on its turn.

`core.Guards` holds the settings (which guards, which boundaries they watch), so that
every module of this package can read them; this step, built by the compiler for an
agent with guards, is where they take effect through the step protocol: around the
model call (`guard_answer`: the input, the answer as it streams and whole), and around
each of the agent's tool calls (`tool_args`, `tool_result`), inside the call's approval
(nodes/steps/decisions.py `Approvals`), so the arguments checked are the ones a person
approved, and a guard's own pause comes after the approval's.

The delegation boundaries (`delegation`, `result`) are crossed by the delegation's
lifecycle (nodes/delegation/), not here: a delegation is no single call a step could
wrap, it runs across the start, subagent and complete nodes.
"""

from __future__ import annotations

from typing import Any

from supervisor_graph.nodes.guards.answers import guard_answer
from supervisor_graph.nodes.guards.boundaries import guard_tool_args, guard_tool_result
from supervisor_graph.nodes.guards.core import Guards
from supervisor_graph.nodes.steps.protocol import ModelHandler, ModelRequest, ToolHandler, ToolRequest, as_tool_message

__all__ = ["GuardedTurn"]


class GuardedTurn(Guards):
    """An agent's guards acting on its turn."""

    async def awrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
        return await guard_answer(request.spec, request, handler)

    # -- around a tool call -----------------------------------------------------------------

    async def awrap_tool_call(self, request: ToolRequest, handler: ToolHandler) -> Any:
        """The `tool_args` boundary before the tool runs (the call it runs, or the result
        that stands in for it), and the `tool_result` boundary before the model sees what
        it answered: a result a guard escalates is handed back in `request.notes["held"]`,
        for a person to decide in a fresh task (the tool has run: a pause here would run it
        again on resume)."""
        spec, handle, config, emit, namespace = request.spec, request.handle, request.config, request.emit, request.namespace
        if "tool_args" in self.at:
            call, refused, asked = await guard_tool_args(spec, request.tool_call, handle, config, emit, namespace)
            request.answered(asked)
            if refused is not None:
                return refused
            if call is not request.tool_call:  # redacted: the call runs with the guarded arguments
                request = request.override(tool_call=call)
        output = await handler(request)
        if "tool_result" not in self.at:
            return output
        call = request.tool_call
        result, held = await guard_tool_result(spec, call, as_tool_message(output, call), handle, config, emit, namespace)
        if held is not None:
            request.notes["held"] = held
        return result
