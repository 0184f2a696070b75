"""Answering a paused run: approvals, suspended tools (SPEC §9).

A pause is a LangGraph interrupt on the run's thread (a subagent's interrupt surfaces
on its parent's thread). Answers are checked *before* resuming, because LangGraph
consumes an interrupt once it is resumed, whatever the value: an invalid answer raises
here and leaves the pause pending and answerable.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from langgraph.types import Command
from pydantic import BaseModel, ValidationError

from supervisor_graph.declaration.errors import NothingPendingError
from supervisor_graph.declaration.remote import RemoteAgent
from supervisor_graph.nodes.options import MemoryOptions
from supervisor_graph.nodes.remote.langgraph import RemoteNotResumableError
from supervisor_graph.nodes.steps.decisions import DecisionError, approval_policy, parse_decision
from supervisor_graph.nodes.turn.tools import is_cancel
from supervisor_graph.run.call import Run, host_background
from supervisor_graph.run.chunks import Usage
from supervisor_graph.run.paused import PausedRun, paused_runs
from supervisor_graph.run.repair import waiting_interrupts
from supervisor_graph.run.results import GenerateResult, PendingItem, background_pending
from supervisor_graph.run.streaming import AgentStream, FinishedStream

if TYPE_CHECKING:
    from langgraph.types import Interrupt

    from supervisor_graph.agent import Agent

__all__ = ["check_answer", "pending_interrupts", "resume"]


async def _locate(agent: Agent, run_id: str | None, memory: Any) -> tuple[PausedRun | None, dict[str, Any]]:
    if memory is not None:
        return None, {"memory": memory}
    paused = paused_runs.get(run_id) if run_id is not None else None
    if paused is not None:
        return paused, {}
    raise NothingPendingError(
        f"no paused run {run_id!r} is known to this process (runs without memory stay resumable by run id "
        f"for {paused_runs.max_age / 3600:g} h, {paused_runs.max_runs} at most); pass memory={{'thread': ...}} "
        "to resume a run stored in the agent's memory (for example after a restart)"
    )


async def _interrupts(agent: Agent, paused: PausedRun | None, options: dict[str, Any]) -> tuple[list[Interrupt], Run]:
    """The interrupts waiting on the thread, read while holding its lease (returned in the
    run, which the caller releases or hands on), so no other process resumes them in between."""
    run = await Run.start(agent, None, options, resume=Command(resume=None), paused=paused)
    try:
        # approvals consumed by a call a crash cut short are not offered again (SPEC §19)
        waiting, _ = await waiting_interrupts(run.graph, run.saver, run.config)
    except BaseException:
        await run.release(ran=False)
        raise
    return waiting, run


async def _resume_background(
    agent: Agent,
    answers: Mapping[str, Any] | None,
    value: Any,
    memory: Any,
    streaming: bool,
    kind: str | None,
    options: dict[str, Any],
) -> GenerateResult | AgentStream | None:
    """Answer approvals a paused background task waits for (SPEC §12): the task goes on
    where it stopped, then the supervisor answers its outcome. None: no background task
    waits for these answers (the run's own pauses are answered as usual)."""
    target = MemoryOptions.model_validate({"thread": memory} if isinstance(memory, str) else memory)
    assert agent.memory is not None
    background = host_background(agent, await agent.memory.opened(), target.thread, target.resource)
    waiting = [(record, item) for record in await background.records() for item in record.get("waiting") or ()]
    if kind is not None:
        waiting = [(r, i) for r, i in waiting if _kind(i) == kind]
    if not waiting:
        return None
    items = [SimpleNamespace(id=i["interrupt_id"], value=i) for _, i in waiting]
    if answers is None:
        if len(items) > 1:
            return None  # ambiguous here; the run's own pauses may settle it
        answers = {items[0].id: value}
    chosen: dict[str, dict[str, Any]] = {}
    for key, answer in answers.items():
        try:
            item = _select(items, key)  # type: ignore[arg-type]
        except NothingPendingError:
            return None
        record = next(r for r, i in waiting if i["interrupt_id"] == item.id)
        chosen.setdefault(record["task_id"], {})[item.id] = _check(agent, item, answer)  # type: ignore[arg-type]
    for task_id, task_answers in chosen.items():
        record = next(r for r, _ in waiting if r["task_id"] == task_id)
        await background.resume(record, task_answers)
    run = await Run.start(agent, None, {**options, "memory": memory}, notices_only=True)
    if run.input["messages"]:  # the supervisor answers the outcome
        return AgentStream(run) if streaming else await run.generate()
    await run.release(ran=False)
    # it paused again: the result says what it waits for now
    again = [r for r in await background.records() if r.get("waiting")]
    result = GenerateResult(
        text="", messages=[], usage=Usage(), finish_reason="suspended", run_id=run.run_id, thread_id=target.thread,
        suspended=background_pending(again, run.run_id),
    )
    return FinishedStream(run, result) if streaming else result


async def pending_interrupts(agent: Agent, *, run_id: str | None = None, memory: Any = None) -> list[Interrupt]:
    """The interrupts waiting on a paused run's thread."""
    paused, options = await _locate(agent, run_id, memory)
    items, run = await _interrupts(agent, paused, options)
    await run.release(ran=False)
    return items


def _check(agent: Agent, item: Interrupt, value: Any) -> Any:
    payload = item.value if isinstance(item.value, Mapping) else {}
    kind = payload.get("kind")
    owner = agent.agents_along(payload.get("agent_path") or [agent.id])[-1]
    if isinstance(owner, RemoteAgent) and not owner.resumable:  # checked before anything reaches its server
        raise RemoteNotResumableError(
            f"{payload.get('tool_name')!r} waits in the remote subagent {owner.id!r}, declared "
            "RemoteAgent(resumable=False): its server cannot resume it, so nothing was sent"
        )
    if kind == "guard":  # a guard's escalation (SPEC §30): approve lets the text through, reject blocks it
        return parse_decision(value, allowed=payload.get("allowed_decisions")).payload()
    if kind == "approval":  # the same check the approval node makes, made before anything resumes
        tools = getattr(owner, "tools", None)
        tool = tools.get(str(payload.get("tool_name"))) if isinstance(tools, Mapping) else None
        allowed = payload.get("allowed_decisions") or approval_policy(tool).allowed_decisions
        try:
            return parse_decision(value, allowed=allowed, tool=tool).payload()
        except DecisionError as exc:
            raise DecisionError(
                f"tool call {payload.get('tool_call_id')!r} ({payload.get('tool_name')}): {exc}; nothing was run "
                "and the approval is still pending"
            ) from None
    if kind == "suspend":
        if is_cancel(value):
            return value
        tool = agent.agents_along(payload.get("agent_path") or [agent.id])[-1].tools.get(str(payload.get("tool_name")))
        schema: type[BaseModel] | None = (tool.metadata or {}).get("resume_schema") if tool is not None else None
        if schema is not None:
            try:
                schema.model_validate(value)
            except ValidationError as exc:
                raise ValueError(
                    f"resume data for {payload.get('tool_name')!r} does not match its resume schema "
                    f"({exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}); the tool is still suspended"
                ) from None
    return value


def _kind(value: Mapping[str, Any]) -> Any:
    """An item's kind as the answering calls name it: a guard's escalation is answered
    like an approval (SPEC §30)."""
    kind = value.get("kind")
    return "approval" if kind == "guard" else kind


def check_answer(agent: Agent, item: PendingItem, value: Any) -> Any:
    """`value` checked as an answer to `item` the way `resume` checks it, before asking
    anyone to resume (a terminal asks again): raises `ValueError` saying what is wrong."""
    payload = {
        "kind": item.kind, "tool_call_id": item.tool_call_id, "tool_name": item.tool_name,
        "agent_path": list(item.agent_path), "allowed_decisions": item.allowed_decisions,
    }
    return _check(agent, SimpleNamespace(id=item.interrupt_id, value=payload), value)  # type: ignore[arg-type]


def _select(items: list[Interrupt], key: str) -> Interrupt:
    by_id = [i for i in items if i.id == key]
    if by_id:
        return by_id[0]
    by_call = [i for i in items if isinstance(i.value, Mapping) and i.value.get("tool_call_id") == key]
    if len(by_call) == 1:
        return by_call[0]
    if len(by_call) > 1:
        raise ValueError(
            f"several pending items have tool call id {key!r} (subagents may reuse ids); "
            f"answer by interrupt id: {', '.join(i.id for i in by_call)}"
        )
    raise NothingPendingError(
        f"nothing pending matches {key!r}; pending: "
        + ", ".join(f"{i.id} ({i.value.get('tool_name') if isinstance(i.value, Mapping) else '?'})" for i in items)
    )


async def resume(
    agent: Agent,
    answers: Mapping[str, Any] | None = None,
    *,
    value: Any = None,
    run_id: str | None = None,
    memory: Any = None,
    streaming: bool = False,
    kind: str | None = None,
    **options: Any,
) -> GenerateResult | AgentStream:
    """Resume a paused run with `answers` (interrupt id or tool call id -> value), or with
    `value` for its only pending item."""
    if memory is not None and agent.has_background_subagents:
        done = await _resume_background(agent, answers, value, memory, streaming, kind, options)
        if done is not None:
            return done
    paused, located = await _locate(agent, run_id, memory)
    items, reader = await _interrupts(agent, paused, {**options, **located})
    try:
        if kind is not None:
            items = [i for i in items if isinstance(i.value, Mapping) and _kind(i.value) == kind]
        if not items:
            raise NothingPendingError(
                f"nothing is pending on this run{f' (no {kind} waits)' if kind else ''}: it has finished or was never paused"
            )
        if answers is None:
            if len(items) > 1:
                raise ValueError(
                    f"{len(items)} items are pending; name one (tool_call_id= or interrupt_id=) or answer all with "
                    "resume({id: answer, ...}): " + ", ".join(i.id for i in items)
                )
            answers = {items[0].id: value}
        chosen = {}
        for key, answer in answers.items():
            item = _select(items, key)
            chosen[item.id] = _check(agent, item, answer)
        first = next(iter(chosen))
        paused_run_id = next(
            (i.value.get("run_id") for i in items if i.id == first and isinstance(i.value, Mapping)), None
        )
        run = await Run.start(
            agent,
            None,
            {**options, **located},
            resume=Command(resume=chosen),
            run_id=paused_run_id or run_id,
            paused=paused,
            lease=reader.lease,  # the thread stays ours from reading the pause to resuming it
        )
    except BaseException:
        await reader.release(ran=False)
        raise
    if streaming:
        return AgentStream(run)
    return await run.generate()
