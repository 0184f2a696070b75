"""Running a declared agent: `generate`, `stream` and their sync twins (SPEC §5).

The parts live by concern: `prepare` (options, input, the thread lease, repairs),
`results` (`GenerateResult`, pending items), `streaming` (`AgentStream`) and `sync`
(the sync twins); this module runs them and keeps the names callers import."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.types import Command

from supervisor_graph.run.prepare import (
    _after,
    _prepare,
    _repair_thread,
    _Run,
    _until_aborted,
    ephemeral_saver,
    paused_runs,
)
from supervisor_graph.run.results import GenerateResult, PendingItem, _result
from supervisor_graph.run.streaming import AgentStream, FinishedStream
from supervisor_graph.run.sync import run_sync, stream_sync

if TYPE_CHECKING:
    from supervisor_graph.agent import Agent

__all__ = [
    "AgentStream",
    "FinishedStream",
    "GenerateResult",
    "PendingItem",
    "ephemeral_saver",
    "generate",
    "paused_runs",
    "run_sync",
    "stream",
    "stream_sync",
]


async def generate(agent: Agent, prompt: Any, **options: Any) -> GenerateResult:
    """Run `agent` on `prompt` to the end (see `Agent.generate`)."""
    run = await _prepare(agent, prompt, options)
    return await _generate(run)


async def _generate(run: _Run) -> GenerateResult:
    assert run.context.handle is not None
    run.context.handle.stream_events = False  # nobody reads them: nodes skip building events
    try:
        values, aborted = await _until_aborted(
            run, run.graph.ainvoke(run.input, run.config, context=run.context, durability=run.durability)
        )
        if aborted:
            values = await _repair_thread(run)
        result = _result(run, values, aborted)
        await _waiting_tasks(run, result)
        await _after(run, result)
        return result
    except Exception:
        await _repair_thread(run, "error")
        raise
    finally:
        await run.release()


async def _waiting_tasks(run: _Run, result: GenerateResult) -> None:
    """Approvals paused background tasks of the thread wait for (SPEC §12)."""
    if run.background is not None:
        from supervisor_graph.background.host import pending_items

        waiting = [r for r in await run.background.records() if r.get("waiting")]
        result.suspended.extend(pending_items(waiting, run.run_id))


async def stream(agent: Agent, prompt: Any, **options: Any) -> AgentStream:
    """Start `agent` on `prompt` and stream it (see `Agent.stream`)."""
    return AgentStream(await _prepare(agent, prompt, options))


async def resume_run(agent: Agent, value: Any, *, streaming: bool, **options: Any) -> Any:
    run = await _prepare(agent, None, options, resume=Command(resume=value))
    if streaming:
        return AgentStream(run)
    return await _generate(run)
