"""What every turn does with the model's answer before routing it, for the supervisor
node and a leaf's loop alike: its tool calls made safe to run (`repair_calls`) and
the turn's events (`announce`)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.steps.usage import step_finish
from supervisor_graph.nodes.steps.working_memory import WORKING_MEMORY_TOOL
from supervisor_graph.nodes.turn.routing import error_result

__all__ = ["announce", "repair_calls"]


def announce(emit: Emitter, response: AIMessage, step: int, memory_updates: bool = False) -> None:
    """A `tool-call` event for each of the turn's calls, then `step-finish`
    (`memory_updates`: the working-memory calls, answered here, are marked as updates,
    not tools a client shows)."""
    if not emit.active:
        return
    for call in response.tool_calls:
        payload: dict[str, Any] = {"tool_call_id": call["id"], "tool_name": call["name"], "args": call["args"], "message_id": response.id}
        if memory_updates and call["name"] == WORKING_MEMORY_TOOL:
            payload["working_memory"] = True
        emit("tool-call", payload)
    emit("step-finish", step_finish(response, step))


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


