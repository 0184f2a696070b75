"""Model calls whose answers never reach the thread (SPEC §25, §30), and the `step-finish`
payload every model call ends with.

A guard may keep an answer out of the thread: a parallel input guard that trips after
the model has answered, an output guard that trips or sends the answer back. The run's
usage is read from the stored messages, so such a call would vanish from `usage`,
`usage_by_agent`, the budgets and AG-UI's usage, though the provider billed it. Each is
counted here instead, in memory with the guards' own model calls (`RunHandle.guard_usage`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any

from langchain_core.messages import AIMessage

from supervisor_graph.nodes.guards.core import TripwireError
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.options import RunHandle
from supervisor_graph.nodes.steps.budget import count_dropped
from supervisor_graph.nodes.text import reasoning_artifacts
from supervisor_graph.nodes.turn.routing import finish_reason_of

__all__ = ["dropped", "step_finish", "unless_dropped"]


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
            count_dropped(handle.budget, handle.guard_usage, "/".join(handle.agent_path), answer.usage_metadata)
            emit("step-finish", {**step_finish(answer, iteration), "reasoning_artifacts": []})


async def unless_dropped(checked: Awaitable[Any], answer: Any, handle: RunHandle, emit: Emitter, iteration: int) -> Any:
    """`checked` (a leaf's guarded answer) awaited; the model's `answer` is `dropped` when
    the guards sent it back (None) or tripped."""
    try:
        response = await checked
    except TripwireError:
        dropped(handle, emit, [answer], iteration)
        raise
    if response is None:
        dropped(handle, emit, [answer], iteration)
    return response
