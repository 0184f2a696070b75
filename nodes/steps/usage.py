"""Usage accounting (SPEC §25, §30): model calls whose answers never reach the thread,
as a step (`UsageLedger`), and the `step-finish` payload every model call ends with.

A guard may keep an answer out of the thread: a parallel input guard that trips after
the model has answered, an output guard that trips or sends the answer back. The run's
usage is read from the stored messages, so such a call would vanish from `usage`,
`usage_by_agent`, the budgets and AG-UI's usage, though the provider billed it. Each is
counted here instead, in memory with the guards' own model calls (`RunHandle.guard_usage`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage

from supervisor_graph.nodes.guards.core import TripwireError
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.options import RunHandle
from supervisor_graph.nodes.steps.budget import count_dropped
from supervisor_graph.nodes.steps.protocol import ModelHandler, ModelRequest, Step
from supervisor_graph.nodes.text import reasoning_artifacts
from supervisor_graph.nodes.turn.routing import finish_reason_of

__all__ = ["UsageLedger", "dropped", "step_finish"]


def step_finish(response: AIMessage, iteration: int) -> dict[str, Any]:
    """The `step-finish` payload of a model turn (usage, model and provider for
    attribution, reasoning artefacts)."""
    meta = response.response_metadata or {}
    return {
        "iteration": iteration,
        "finish_reason": "tool-calls" if response.tool_calls else finish_reason_of(response),
        "usage": response.usage_metadata,
        "message_id": response.id,
        "model": meta.get("model_name") or meta.get("model"),
        "provider": meta.get("model_provider"),
        "reasoning_artifacts": reasoning_artifacts(response),
    }


def dropped(handle: RunHandle, emit: Emitter, answers: Sequence[Any], iteration: int) -> None:
    """Answers a guard kept out of the thread (a trip, a retry): their tokens were spent,
    so they count in the run's usage and budgets, and AG-UI meters them from a
    `step-finish` (without the answer's reasoning artefacts)."""
    for answer in answers:
        if isinstance(answer, AIMessage) and answer.usage_metadata:
            path = "/".join(handle.agent_path)
            count_dropped(handle.budget, handle.guard_usage, path, answer.usage_metadata)
            handle.guard_answers.append((path, answer))  # its model prices it (SPEC §33)
            emit("step-finish", {**step_finish(answer, iteration), "reasoning_artifacts": []})


class UsageLedger(Step):
    """Counts the model calls of a turn whose answers the steps inside it kept out of the
    thread (the guards': a trip, a retry), as `dropped`. The compiler puts it right
    outside the guards' step of an agent with guards; nothing else drops an answer."""

    name = "usage"

    async def awrap_model_call(self, request: ModelRequest, handler: ModelHandler) -> Any:
        try:
            out = await handler(request)
        except TripwireError:
            dropped(request.handle, request.emit, request.answers, request.iteration)
            raise
        if out is None:  # sent back: the model answers again
            dropped(request.handle, request.emit, request.answers, request.iteration)
        return out
