"""`stream_until_idle` / `generate_until_idle` and `recover_background_tasks` (SPEC §12).

A run that starts background tasks ends when its supervisor answers. Until idle, the
stream stays open: when a task of the run ends, the facade runs the supervisor again
on the thread with the outcome as input (the next run's notices), and so on until every
task has ended and been answered, or waits for an approval.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from supervisor_graph.background.host import RunBackground
from supervisor_graph.background.runner import runner
from supervisor_graph.declaration.errors import ThreadBusyError
from supervisor_graph.memory.memory import Memory
from supervisor_graph.nodes.background.tasks import FINAL_STATUSES
from supervisor_graph.nodes.observability.cost import sum_costs
from supervisor_graph.nodes.state import add_usage, zero_usage
from supervisor_graph.run.call import Run, answer_outcomes
from supervisor_graph.run.chunks import Usage, make_chunk
from supervisor_graph.run.results import GenerateResult, background_pending
from supervisor_graph.run.streaming import AgentStream

if TYPE_CHECKING:
    from supervisor_graph.agent import Agent

__all__ = ["IdleStream", "generate_until_idle", "recover_background_tasks", "stream_until_idle"]

# how long a waiter sleeps between looks at the store (a task in another process, or a
# wake-up missed between a look and the wait, is noticed within this)
_POLL = 1.0


class IdleStream(AgentStream):
    """`AgentStream` over a run and the runs that answer its background tasks' outcomes:
    one `start`, every run's chunks, `background-task-completed` / `-failed` chunks, one
    `finish`. `result()` is the last run's result with every run's messages and usage."""

    def __init__(self, run: Run, options: dict[str, Any], host: Memory | None = None) -> None:
        self._options = options
        self._host = host  # the in-process memory of a call without a thread
        super().__init__(run)

    async def _pump(self) -> None:  # type: ignore[override]
        run, emit = self._run, self._push
        agent = run.agent
        results: list[GenerateResult] = []
        launched: set[str] = set()
        reported: set[str] = set()  # tasks whose outcome this stream reported
        thread = run.thread_id or ""
        runner.watched[thread] = runner.watched.get(thread, 0) + 1  # this stream answers the outcomes
        settled = False  # every task of the run ended and was answered here
        try:
            stream: AgentStream | None = AgentStream(run)
            first = True
            while stream is not None:
                async for chunk in stream.full_stream:
                    if chunk.type == "finish" or (chunk.type == "start" and not first):
                        continue
                    emit(chunk)
                first = False
                result = await stream.result()
                results.append(result)
                background: RunBackground | None = stream._run.background
                if background is None or result.finish_reason in ("abort", "suspended"):
                    if background is not None and result.finish_reason == "abort":
                        # the abort stops the tasks this run started too: say how they ended,
                        # whether it came before or after the run's last step
                        stopping = set(background.launched)
                        while stopping and (ended := await _wait_for_outcomes(background, stopping)):
                            self._report(ended, stopping)
                    break
                launched.update(background.launched)
                ended = await _wait_for_outcomes(background, launched)
                if not ended:
                    settled = not launched
                    break
                self._report(ended, launched)
                reported.update(r["task_id"] for r in ended)
                runner.answered.update(t for t in reported if runner.live(t))
                runner.deferred.discard(thread)  # the notices read next answer them
                nxt = await Run.start(agent, None, self._options, notices_only=True, host=self._host)
                if not nxt.input["messages"]:
                    await nxt.release(ran=False)
                    settled = not launched
                    break
                stream = AgentStream(nxt)
            final = _combined(results)
            paused: list[Any] = []
            if launched and run.background is not None:
                # tasks that paused after their run ended (the others' items were streamed)
                known = {item.interrupt_id for item in final.suspended}
                waiting = [r for r in await run.background.records() if r["task_id"] in launched and r.get("waiting")]
                paused = [item for item in background_pending(waiting, final.run_id) if item.interrupt_id not in known]
                final.suspended.extend(paused)
            self._finish(final, announce=paused)
        except BaseException as exc:  # surfaced to readers as an error chunk and by result()
            self._error = exc
            emit(make_chunk("error", {"error": type(exc).__name__, "message": str(exc)}, run.run_id, (agent.id,)))
            if not isinstance(exc, Exception):
                raise
        finally:
            # a task that already finished its coroutine will not come to spend its mark
            runner.answered.difference_update(t for t in reported if not runner.live(t))
            runner.watched[thread] -= 1
            if not runner.watched[thread]:
                del runner.watched[thread]
                # whatever ended after this stream last looked; nothing when it settled (a
                # check would hold the thread's lease just when the caller may use it again)
                if run.background is not None and (not settled or thread in runner.deferred):
                    runner.deferred.discard(thread)
                    run.background.answer_outcomes()
            self._done = True
            self._changed.set()


    def _report(self, ended: list[dict[str, Any]], pending: set[str]) -> None:
        """A `background-task-completed` / `-failed` chunk per ended task, which leaves `pending`."""
        run = self._run
        for record in ended:
            kind = "background-task-completed" if record["status"] == "completed" else "background-task-failed"
            payload = {
                "task_id": record["task_id"],
                "agent_key": record["agent_key"],
                "status": record["status"],
                "result_text": record.get("result_text"),
            }
            self._push(make_chunk(kind, payload, run.run_id, (run.agent.id,)))
            pending.discard(record["task_id"])

async def _wait_for_outcomes(background: RunBackground, launched: set[str]) -> list[dict[str, Any]]:
    """The tasks of `launched` that have ended, once at least one has; [] when none can
    (every one left waits for an approval, or is gone)."""
    while True:
        event = runner.event(background.thread_id)
        records = {r["task_id"]: r for r in await background.records() if r["task_id"] in launched}
        ended = [r for r in records.values() if r["status"] in FINAL_STATUSES]
        if ended:
            return ended
        running = [
            task_id
            for task_id in launched
            if task_id not in records or (records[task_id]["status"] == "running" and not records[task_id].get("waiting"))
        ]
        if not running:
            return []
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(event.wait(), _POLL)


def _cost_sum(usages: list[Usage]) -> float | None:
    """The cost of several runs' usage, priced when read (None when one is unknown)."""
    return sum_costs(u.cost for u in usages)


def _summed(usages: Iterable[Usage]) -> Usage:
    total = zero_usage()
    for u in usages:
        add_usage(total, u.model_dump())
    return Usage(**total)


def _combined(results: list[GenerateResult]) -> GenerateResult:
    last = results[-1]
    if len(results) == 1:
        return last
    usage = _summed(r.usage for r in results).priced(partial(_cost_sum, [r.usage for r in results]))
    by_agent: dict[str, Usage] = {}
    parts: dict[str, list[Usage]] = {}
    for r in results:  # the same agent in several runs: one entry, their sum
        for path, u in r.usage_by_agent.items():
            had = by_agent.get(path)
            parts.setdefault(path, []).append(u)
            by_agent[path] = u if had is None else _summed((had, u)).priced(partial(_cost_sum, parts[path]))
    return last.model_copy(
        update={
            "messages": [m for r in results for m in r.messages],
            "usage": usage,
            "usage_by_agent": by_agent,
            "delegations": [d for r in results for d in r.delegations],
            "suspended": list(last.suspended),
        }
    )


async def stream_until_idle(agent: Agent, prompt: Any, **options: Any) -> IdleStream:
    """Start `agent` on `prompt`; the stream stays open until every background task the
    run starts has ended and the supervisor has answered each outcome. Without
    `memory={"thread": ...}` the tasks are hosted in-process for the length of the call,
    on a thread of a memory of its own (as Mastra does)."""
    host = None
    if options.get("memory") is None and agent.has_background_subagents:

        host = Memory(storage=":memory:")
        options = {**options, "memory": {"thread": f"until-idle-{uuid.uuid4().hex}"}}
    return IdleStream(await Run.start(agent, prompt, options, host=host), options, host)


async def generate_until_idle(agent: Agent, prompt: Any, **options: Any) -> GenerateResult:
    """`stream_until_idle`, returning the result."""
    stream = await stream_until_idle(agent, prompt, **options)
    return await stream.result()


RECOVER_WAIT = 30.0


async def recover_background_tasks(agent: Agent, *, memory: Any, **options: Any) -> GenerateResult | None:
    """Settle the thread's background tasks now: re-run those whose process died (tries
    left) or fail them, and have the supervisor answer every outcome it has not been told
    of. None when there was nothing to report. A run that holds the thread (this
    process's host answering an outcome that just ended, or a caller's) is waited for,
    up to `RECOVER_WAIT` seconds: settling is what both are doing."""
    deadline = time.monotonic() + RECOVER_WAIT
    while True:
        try:
            return await answer_outcomes(agent, memory, options)
        except ThreadBusyError:
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.05)
