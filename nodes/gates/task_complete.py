"""The task-completion gate (SPEC §11): scorers decide whether an answer ends the run.

Reached only after a model turn that answered (no tool calls) and only when the run
sets `is_task_complete`. Scorers run concurrently; failing ones add their feedback to
the conversation and the loop goes on, bounded by `max_steps`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command

from supervisor_graph.nodes.gates.scoring import (
    RunView,
    Score,
    Scorer,
    ScoringContext,
    TaskCompleteOptions,
    TaskCompleteResult,
)
from supervisor_graph.nodes.options import RunContext
from supervisor_graph.nodes.scope.lookup import run_scope
from supervisor_graph.nodes.spec import AgentSpec, maybe_await
from supervisor_graph.nodes.state import SupervisorState, feedback_message, run_start
from supervisor_graph.nodes.steps.structured_output import OutputSchema, declared_schema
from supervisor_graph.nodes.text import text_of
from supervisor_graph.nodes.turn.routing import SUPERVISOR_NODE, last_turn

# The scorer contracts live in `nodes.gates.scoring`, which validates the per-call option
# without this node's imports (`capability_option`); callers keep importing them from here.
__all__ = [
    "RunView",
    "Score",
    "Scorer",
    "ScoringContext",
    "TaskCompleteOptions",
    "TaskCompleteResult",
    "make_task_complete_node",
]

log = logging.getLogger("supervisor_graph")


async def _safe_score(scorer: Any, context: ScoringContext) -> Score:
    try:
        return await scorer.score(context)  # type: ignore[no-any-return]
    except Exception as exc:  # noqa: BLE001 - a broken scorer is a failed score, not a crash
        log.warning("scorer %r failed: %s: %s", getattr(scorer, "id", scorer), type(exc).__name__, exc)
        return Score(
            scorer_id=str(getattr(scorer, "id", "scorer")),
            name=str(getattr(scorer, "name", "scorer")),
            score=0.0,
            reason=f"the scorer failed ({type(exc).__name__}: {exc})",
        )


def _answer_object(schema: OutputSchema | None, value: Any) -> Any:
    return schema.to_object(value) if schema is not None and value is not None else None


def make_task_complete_node(spec: AgentSpec) -> Any:
    async def task_complete(state: SupervisorState, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        opts, handle = run_scope(spec, config, runtime)
        settings = opts.is_task_complete
        if settings is None:
            return Command(goto=END)
        messages = state.get("messages") or []
        _, answer = last_turn(messages)
        start = run_start(messages)
        # bookkeeping calls (working-memory updates) are not part of the answer being judged
        free = spec.steps.free
        judged: list[BaseMessage] = _without(messages[start:], free) if free else list(messages[start:])
        context = ScoringContext(
            run=RunView(
                input=text_of(messages[start]) if messages else "",
                output=text_of(answer) if answer is not None else "",
                messages=judged,
                output_object=_answer_object(opts.output_schema or declared_schema(spec), state.get("structured_response")),
            ),
            iteration=sum(1 for m in judged if m.type == "ai"),
            request_context=handle.request_context,
        )
        scores = list(await asyncio.gather(*(_safe_score(s, context) for s in settings.scorers)))
        for score in scores:
            score.passed = score.score >= settings.threshold
        passed = [s.passed for s in scores]
        complete = all(passed) if settings.strategy == "all" else any(passed)
        feedback = [
            f"[{s.name}] {s.reason or f'score {s.score:.2f} is below the required {settings.threshold:.2f}'}"
            for s in scores
            if not s.passed
        ]
        if settings.on_complete is not None:
            await maybe_await(settings.on_complete(TaskCompleteResult(complete=complete, scores=scores, feedback=feedback)))
        if complete:
            return Command(goto=END)
        text = "The answer is not complete yet. Feedback:\n" + "\n".join(f"- {f}" for f in feedback)
        return Command(update={"messages": [feedback_message(text, "scorer")]}, goto=SUPERVISOR_NODE)

    return task_complete


def _without(messages: Sequence[BaseMessage], names: frozenset[str]) -> list[BaseMessage]:
    """`messages` without the calls of the tools `names`: their results, the calls, and
    turns left with neither text nor other calls."""
    ids: set[str] = set()
    out: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, AIMessage) and any(c["name"] in names for c in message.tool_calls):
            ids.update(c["id"] or "" for c in message.tool_calls if c["name"] in names)
            kept = [c for c in message.tool_calls if c["name"] not in names]
            if not kept and not message.content:
                continue
            message = message.model_copy(update={"tool_calls": kept})
        elif isinstance(message, ToolMessage) and message.tool_call_id in ids:
            continue
        out.append(message)
    return out
