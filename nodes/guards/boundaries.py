"""Guardrails where text crosses an agent's boundaries (SPEC §30): what a node does with
the `GuardOutcome` of `check_boundary` (nodes/guards/core.py holds the protocol).

Every call site first asks `boundary in guarded_at(spec)` (an empty set for an agent with no
guard), so a run without guards pays one set lookup per boundary and nothing else: no
super-step, no routing, no checkpoint write.

- `cross` runs the guards of one boundary and settles an escalation with a person (an
  `interrupt()` shaped like an approval, kind "guard", that `approve_tool_call` /
  `decline_tool_call` answer); each verdict becomes an OpenTelemetry span, a custom event
  in `astream_events` and a `guard` chunk, a trip also a `tripwire` chunk.
- `guard_tool_args` / `guard_tool_result`: around one tool call, through the guards' step
  (nodes/guards/step.py `GuardedTurn.awrap_tool_call`), wherever `run_tool_call` runs it.
- `guard_delegation` / `guard_result`: the delegation edges' hook nodes.
- An agent's model turn (input, output) is in nodes/guards/answers.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Send, interrupt

from supervisor_graph.nodes.delegation.result import failure_text
from supervisor_graph.nodes.guards.core import (
    CHARS_PER_TOKEN,
    GuardOutcome,
    Guardrail,
    Tripwire,
    TripwireError,
    check_boundary,
    guarded_at,
    guards_of,
)
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.observability.otel import guard_span
from supervisor_graph.nodes.observability.tracing import announce
from supervisor_graph.nodes.options import RunHandle
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.state import add_usage, zero_usage
from supervisor_graph.nodes.steps.budget import spend
from supervisor_graph.nodes.steps.decisions import DecisionError, parse_decision
from supervisor_graph.nodes.text import text_of
from supervisor_graph.nodes.turn.routing import SUPERVISOR_NODE, complete_node, start_node

__all__ = [
    "CHARS_PER_TOKEN",
    "Crossing",
    "announce_result",
    "blocked_result",
    "cross",
    "escalate_to_person",
    "guard_delegation",
    "guard_result",
    "guard_tool_args",
    "guard_tool_result",
    "hold_for_person",
    "raise_or_return",
    "settle_held_result",
    "tripped",
]

log = logging.getLogger("supervisor_graph")

GUARD_FEEDBACK = "guard"  # the feedback source of a guard's `retry` (nodes/state.py FEEDBACK_MARK)
GUARD_DECISIONS = ["approve", "reject"]


class Crossing(NamedTuple):
    """What may cross a boundary: the text (redactions applied), or feedback for the
    agent that produced it (`retry`), or the trip that stops it."""

    text: str
    changed: bool = False
    feedback: str | None = None
    tripwire: Tripwire | None = None
    held: tuple[str, str] | None = None
    """(guard, reason) of an escalation the caller must hold for a person itself."""
    answers: int = 0
    """How many answers of a person this crossing used (`interrupt()` returned)."""


async def _observe(
    outcome: GuardOutcome, boundary: str, config: RunnableConfig, handle: RunHandle, emit: Emitter, where: dict[str, Any]
) -> None:
    for name, verdict in outcome.checked:
        attributes = {"guard.name": name, "guard.boundary": boundary, "guard.verdict": verdict}
        guard_span(config, attributes)
        event = {"guard": name, "boundary": boundary, "verdict": verdict, **where}
        emit("guard", event)
        await announce(config, "guard", event, handle.agent_path)


async def tripped(trip: Tripwire, config: RunnableConfig, handle: RunHandle, emit: Emitter) -> None:
    """Tell streams and traces that `trip` stopped an agent (never the blocked text)."""
    payload = trip.model_dump(mode="json")
    emit("tripwire", payload)
    await announce(config, "tripwire", payload, handle.agent_path)


def _ask(request: dict[str, Any]) -> tuple[bool, int]:
    """A person's decision on an escalation (approve lets the text through, reject blocks)
    and how many answers it took: one that is no decision is asked again."""
    answers = 0
    while True:
        value = interrupt(request)
        answers += 1
        try:
            return parse_decision(value, allowed=GUARD_DECISIONS).kind != "reject", answers
        except DecisionError as exc:
            request = {**request, "error": str(exc)}


def guard_spent(handle: RunHandle, guard: str, usage: Mapping[str, Any], answer: Any = None) -> None:
    """A guard's model tokens: in the run's usage under the guard's name, and against the
    run's budgets like any model call's; its `answer` (the judge's message), when given,
    names the model that prices them (SPEC §33)."""
    path = f"{'/'.join(handle.agent_path)}/guard:{guard}"
    add_usage(handle.guard_usage.setdefault(path, zero_usage()), usage)
    if answer is not None:
        handle.guard_answers.append((path, answer))
    spend(handle.budget, usage, answer)


async def cross(
    spec: AgentSpec,
    boundary: str,
    text: str,
    *,
    handle: RunHandle,
    config: RunnableConfig,
    emit: Emitter,
    ref: str = "",
    namespace: str = "",
    tool_call: dict[str, Any] | None = None,
    subagent: str | None = None,
    attempt: int = 0,
    can_pause: bool = True,
    guards: Sequence[Guardrail] | None = None,
    before: str = "",
    held_from: int | None = None,
) -> Crossing:
    """Run `spec`'s guards at `boundary` on `text`. An escalation pauses the run here when
    `can_pause` (the node has had no side effect it would repeat when it re-runs on
    resume); otherwise the caller holds it (`Crossing.held`). `ref` tells this pause from
    others of the run (a tool call id; the run id for input and output). `before` and
    `held_from` are a streamed window's (`GuardContext`)."""
    where: dict[str, Any] = {}
    if tool_call is not None:
        where["tool_call_id"] = tool_call.get("id")
    if subagent is not None:
        where["subagent"] = subagent
    outcome = await check_boundary(
        guards_of(spec) if guards is None else guards,
        boundary,
        text,
        agent_path=handle.agent_path,
        request_context=handle.request_context,
        tool_call=tool_call,
        subagent=subagent,
        attempt=attempt,
        record_usage=lambda name, usage: guard_spent(handle, name, usage),
        record_answer=lambda name, answer: guard_spent(handle, name, answer.usage_metadata, answer),
        before=before,
        held_from=held_from,
    )
    await _observe(outcome, boundary, config, handle, emit, where)
    trip = outcome.tripwire
    if outcome.escalate is not None:
        guard, reason = outcome.escalate_guard or "", outcome.escalate.reason
        if not can_pause:
            return Crossing(outcome.text, outcome.redacted, held=(guard, reason))
        approved, answers = escalate_to_person(boundary, guard, reason, outcome.text, handle, ref, namespace)
        verdict = "approved" if approved else "declined"
        await _observe(outcome.model_copy(update={"checked": ((guard, verdict),)}), boundary, config, handle, emit, where)
        if approved:
            return Crossing(outcome.text, outcome.redacted, answers=answers)
        trip = Tripwire(guard=guard, boundary=boundary, agent_path=handle.agent_path, reason=reason)  # type: ignore[arg-type]
        await tripped(trip, config, handle, emit)
        return Crossing(text, tripwire=trip, answers=answers)
    if trip is not None:
        await tripped(trip, config, handle, emit)
        return Crossing(text, tripwire=trip)
    if outcome.retry is not None:
        return Crossing(outcome.text, outcome.redacted, feedback=outcome.retry.feedback)
    return Crossing(outcome.text, outcome.redacted)


def escalate_to_person(
    boundary: str, guard: str, reason: str, text: str, handle: RunHandle, ref: str, namespace: str
) -> tuple[bool, int]:
    """Pause for a person, through the approval machinery (an interrupt whose value looks
    like an approval: `approve_tool_call` / `decline_tool_call` answer it)."""
    request = {
        "kind": "guard",
        "tool_call_id": f"guard-{boundary}-{ref or handle.run_id}",
        "tool_name": guard,
        "args": {"boundary": boundary},
        "agent_path": list(handle.agent_path),
        "run_id": handle.run_id,
        "namespace": namespace,
        "payload": {"guard": guard, "boundary": boundary, "reason": reason, "text": text},
        "allowed_decisions": GUARD_DECISIONS,
    }
    return _ask(request)


def raise_or_return(trip: Tripwire, handle: RunHandle) -> Tripwire:
    """A trip inside a delegation stops that subagent: its delegation fails (SPEC §30)."""
    if len(handle.agent_path) > 1:
        raise TripwireError(trip)
    return trip


# -- around a tool call --------------------------------------------------------------------


async def guard_tool_args(
    spec: AgentSpec, call: Any, handle: RunHandle, config: RunnableConfig, emit: Emitter, namespace: str
) -> tuple[Any, ToolMessage | None, int]:
    """The `tool_args` boundary, after approval and before the tool runs: the call to run
    (a redaction is the arguments as JSON), or the result that stands in for it when the
    guard sends it back (the model tries again) or blocks it; and the answers of a person
    an escalation used."""
    text = json.dumps(call["args"], ensure_ascii=False, default=str)
    crossing = await cross(
        spec, "tool_args", text, handle=handle, config=config, emit=emit, ref=call["id"] or "", namespace=namespace,
        tool_call={"name": call["name"], "args": call["args"], "id": call["id"]},
    )  # fmt: skip
    answers = crossing.answers
    if crossing.tripwire is not None:
        raise_or_return(crossing.tripwire, handle)
        return call, blocked_result(call, crossing.tripwire), answers
    if crossing.feedback is not None:
        return call, _error(call, f"[Guardrail] the arguments were refused: {crossing.feedback}"), answers
    if crossing.changed:
        try:
            args = json.loads(crossing.text)
        except ValueError:
            args = None
        if not isinstance(args, dict):
            return call, _error(call, "[Guardrail] the arguments were refused: a guard rewrote them into no JSON object."), answers
        return {**call, "args": args}, None, answers
    return call, None, answers


async def guard_tool_result(
    spec: AgentSpec, call: Any, result: ToolMessage, handle: RunHandle, config: RunnableConfig, emit: Emitter, namespace: str
) -> tuple[ToolMessage, tuple[str, str] | None]:
    """The `tool_result` boundary, before the model sees the result: the result as it may
    cross, and an escalation the caller must hold for a person (the tool has run: a pause
    here would run it again on resume)."""
    crossing = await cross(
        spec, "tool_result", text_of(result), handle=handle, config=config, emit=emit, ref=call["id"] or "",
        namespace=namespace, tool_call={"name": call["name"], "args": call["args"], "id": call["id"]}, can_pause=False,
    )  # fmt: skip
    if crossing.tripwire is not None:
        raise_or_return(crossing.tripwire, handle)
        return blocked_result(call, crossing.tripwire), None
    if crossing.feedback is not None:
        return _error(call, f"[Guardrail] this result was withheld: {crossing.feedback}"), None
    if crossing.held is not None:
        return result, crossing.held
    if crossing.changed:
        return result.model_copy(update={"content": crossing.text}), None
    return result, None


def blocked_result(call: Any, trip: Tripwire) -> ToolMessage:
    """What stands where a guard blocked (never the blocked text), marked with the trip."""
    message = _error(call, f"[Guardrail] {trip.guard!r} blocked this at {trip.boundary}.")
    message.artifact = {"tripwire": trip.model_dump(mode="json")}
    return message


def _error(call: Any, text: str) -> ToolMessage:
    return ToolMessage(content=text, tool_call_id=call["id"] or "", name=call["name"], status="error")


async def hold_for_person(
    held: tuple[str, str], boundary: str, text: str, handle: RunHandle, config: RunnableConfig, emit: Emitter, ref: str, namespace: str
) -> Tripwire | None:
    """Settle an escalation the caller held past its side effect (in a fresh task, or a
    node that re-runs only this): None when the person approves, else the trip."""
    guard, reason = held
    approved, _ = escalate_to_person(boundary, guard, reason, text, handle, ref, namespace)
    event = {"guard": guard, "boundary": boundary, "verdict": "approved" if approved else "declined"}
    guard_span(config, {"guard.name": guard, "guard.boundary": boundary, "guard.verdict": event["verdict"]})
    emit("guard", event)
    await announce(config, "guard", event, handle.agent_path)
    if approved:
        return None
    trip = Tripwire(guard=guard, boundary=boundary, agent_path=handle.agent_path, reason=reason)  # type: ignore[arg-type]
    await tripped(trip, config, handle, emit)
    return trip


# -- a tool result held for a person ---------------------------------------------------------


async def settle_held_result(
    spec: AgentSpec, payload: dict[str, Any], handle: RunHandle, config: RunnableConfig, emit: Emitter, namespace: str
) -> ToolMessage:
    """The tools node's fresh task for a tool result a guard escalated (the tool ran in the
    task before; this one only asks, so its re-run on resume runs nothing again)."""
    call, held = payload["call"], payload["held"]
    message: ToolMessage = held["message"]
    guard = (held["guard"][0], held["guard"][1])
    trip = await hold_for_person(guard, "tool_result", text_of(message), handle, config, emit, call["id"] or "", namespace)
    if trip is None:
        return message
    raise_or_return(trip, handle)
    return blocked_result(call, trip)


# -- a delegation's edges ----------------------------------------------------------------------


# in a delegation's task: its `delegation` guards have decided (the subagent node checks
# them itself otherwise)
GUARD_CHECKED = "guard_checked"
# in a task sent to `<key>.start`: the `delegation` guard that escalated, and why
GUARD_HELD = "guard_held"


async def guard_delegation_in_node(
    parent: AgentSpec, key: str, sub_id: str, task: Any, handle: RunHandle, config: RunnableConfig, emit: Emitter
) -> tuple[Any, Command[Any] | None]:
    """The `delegation` boundary of a run without a start hook, checked by the subagent
    node before anything else: the edge then costs no super-step (`<key>.start` would be
    one more per delegation turn, measured at +13% on a guarded 5-delegation run). What
    pauses goes to `<key>.start`, which asks the person there (`guard_delegation_held`).
    Returns the task to run, or the command that ends the node instead."""
    if "delegation" not in guarded_at(parent) or task.get(GUARD_CHECKED) or task.get("resume_ns"):
        return task, None
    call = task["call"]
    crossing = await cross(
        parent, "delegation", task["prompt"], handle=handle, config=config, emit=emit, ref=call["id"] or "",
        subagent=sub_id, can_pause=False,
    )  # fmt: skip
    if crossing.held is not None:
        return task, Command(goto=Send(start_node(key), {**task, "prompt": crossing.text, GUARD_HELD: list(crossing.held)}))
    stopped = _stopped_delegation(crossing, sub_id, call)
    if stopped is not None:
        return task, Command(update={"messages": [stopped]}, goto=SUPERVISOR_NODE)
    return {**task, "prompt": crossing.text, GUARD_CHECKED: True}, None


async def guard_delegation_held(
    parent: AgentSpec, sub_id: str, task: Any, handle: RunHandle, config: RunnableConfig, emit: Emitter
) -> ToolMessage | None:
    """`<key>.start` asks the person about a `delegation` guard's escalation: None when
    they let the prompt through, else the supervisor's tool result."""
    call = task["call"]
    held = (task[GUARD_HELD][0], task[GUARD_HELD][1])
    trip = await hold_for_person(held, "delegation", task["prompt"], handle, config, emit, call["id"] or "", "")
    if trip is None:
        return None
    text = failure_text(sub_id, TripwireError(trip))
    return ToolMessage(content=text, tool_call_id=call["id"] or "", name=call["name"], status="error")


def _stopped_delegation(crossing: Crossing, sub_id: str, call: Any) -> ToolMessage | None:
    if crossing.tripwire is not None:
        text = failure_text(sub_id, TripwireError(crossing.tripwire))
        return ToolMessage(content=text, tool_call_id=call["id"] or "", name=call["name"], status="error")
    if crossing.feedback is not None:
        text = f"[Delegation Rejected] a guardrail refused this prompt: {crossing.feedback}"
        return ToolMessage(content=text, tool_call_id=call["id"] or "", name=call["name"], status="error")
    return None


async def guard_delegation(
    parent: AgentSpec, sub_id: str, call: Any, prompt: str, handle: RunHandle, config: RunnableConfig, emit: Emitter
) -> tuple[str, ToolMessage | None]:
    """The `delegation` boundary in `<key>.start` (a run with a start hook: after it): the
    prompt the subagent gets, or the supervisor's tool result when the guard stops the
    delegation (it never runs: blocked, or sent back with feedback, which the
    supervisor's model reads and acts on)."""
    crossing = await cross(
        parent, "delegation", prompt, handle=handle, config=config, emit=emit, ref=call["id"] or "", subagent=sub_id
    )
    stopped = _stopped_delegation(crossing, sub_id, call)
    return (prompt, stopped) if stopped is not None else (crossing.text, None)


async def guard_result(
    parent: AgentSpec,
    key: str,
    sub_id: str,
    payload: dict[str, Any],
    artifact: dict[str, Any],
    record: Any,
    handle: RunHandle,
    config: RunnableConfig,
    emit: Emitter,
    *,
    in_node: bool = False,
) -> Command[Any] | None:
    """The `result` boundary, before the hook, the supervisor's model and the result
    references see the subagent's answer: redacted in `record`, failed (the guard named,
    never the text), or a `Send` that runs the delegation again with the guard's feedback
    after its prompt. In `<key>.complete`, or (`in_node`: a run without a complete hook)
    in the subagent node itself, which then costs no super-step (`<key>.complete` was
    measured at +13% on a guarded 5-delegation run): a pause goes to `<key>.complete`,
    which asks the person there."""
    task = payload.get("task")
    attempt = int((task or {}).get("guard_attempt") or 0)
    held = payload.get(GUARD_HELD)
    if held:  # the subagent node's guard escalated: the person decides here
        trip = await hold_for_person((held[0], held[1]), "result", record.text, handle, config, emit, record.tool_call_id, "")
        crossing = Crossing(record.text, False, tripwire=trip)
    else:
        crossing = await cross(
            parent, "result", record.text, handle=handle, config=config, emit=emit, ref=record.tool_call_id,
            subagent=sub_id, attempt=attempt, can_pause=not in_node,
        )  # fmt: skip
    if crossing.held is not None:
        return Command(goto=Send(complete_node(key), {**payload, GUARD_HELD: list(crossing.held)}))
    trip = crossing.tripwire
    if crossing.feedback is not None and task is not None:
        again = {k: v for k, v in task.items() if k != "resume_ns"}
        again["prompt"] = f"{task['prompt']}\n\n[Your last answer was not accepted: {crossing.feedback}]"
        again["guard_attempt"] = attempt + 1
        return Command(goto=Send(key, again))
    if crossing.feedback is not None:  # a remote delegation cannot be run again from here
        trip = Tripwire(guard="", boundary="result", agent_path=handle.agent_path, reason=crossing.feedback)
    if trip is not None:
        record.success, record.error, record.text, record.finish_reason = False, TripwireError(trip), "", "error"
        record.object = None
        artifact["success"] = False
    elif crossing.changed:
        record.text = crossing.text
        record.object = None
    return None


async def announce_result(config: RunnableConfig, handle: RunHandle, record: Any, namespace: str, emit: Emitter) -> None:
    """`delegation-complete` of a delegation whose result is guarded: sent once the guard
    has decided, so streams carry only what may cross."""
    summary = {**record.summary(), "namespace": namespace}
    emit("delegation-complete", summary)
    await announce(config, "delegation-complete", summary, handle.agent_path)
