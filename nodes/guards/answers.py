"""An agent's model turn through its guards (SPEC §30): the top agent's input before
(or, `mode="parallel"`, beside) its model call, its answer checked whole or in windows
while the model streams it (`mode="streaming"`), and how a trip, a retry or an answer
held for a person ends the turn. The boundaries' common machinery (`cross`) is in
nodes/guards/boundaries.py, the streamed answer's windows in nodes/guards/stream.py.

An agent with output guards never streams its model's tokens: what reaches a stream is
the checked text (the stored message, or the windows as each passes)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from functools import partial
from typing import Any, NamedTuple, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.types import Command

from supervisor_graph.nodes.guards.boundaries import Crossing, cross, hold_for_person, tripped
from supervisor_graph.nodes.guards.core import Tripwire, TripwireError, guarded_at, guards_at, guards_of
from supervisor_graph.nodes.guards.stream import quiet, stream_answer
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.options import RunHandle, RunOptions
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.state import FEEDBACK_MARK, SupervisorState, feedback_message, is_run_input
from supervisor_graph.nodes.steps.protocol import ModelHandler, ModelRequest
from supervisor_graph.nodes.steps.structured_output import FINAL_ANSWER_TOOL
from supervisor_graph.nodes.text import text_of
from supervisor_graph.nodes.turn.routing import after_answer, end_update, finish_reason_of

__all__ = [
    "GUARD_FEEDBACK",
    "check_output",
    "checked_text",
    "forget_run",
    "guard_answer",
    "quiet",
    "settle_held",
    "stream_answer",
    "streams_output",
    "tool_trip",
    "tripwire_end",
]

GUARD_FEEDBACK = "guard"  # the feedback source of a guard's `retry` (nodes/state.py FEEDBACK_MARK)


def _input_index(messages: Sequence[BaseMessage]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], AIMessage):
            return None  # the model has answered in this run: its input was checked
        if is_run_input(messages[i]):
            return i
    return None


async def check_input(
    spec: AgentSpec, messages: list[BaseMessage], handle: RunHandle, config: RunnableConfig, emit: Emitter
) -> tuple[list[BaseMessage], list[BaseMessage], Tripwire | None] | None:
    """The `input` boundary, before the top agent's first model call of a run: None when
    there is nothing to check (a subagent, or a turn after the first); else the messages
    the model sees, the update that stores a redaction, and the trip if one tripped (a
    `retry` of the user's text is a trip, with its feedback as the reason)."""
    if len(handle.agent_path) > 1:
        return None
    index = _input_index(messages)
    if index is None:
        return None
    message = messages[index]
    crossing = await cross(spec, "input", text_of(message), handle=handle, config=config, emit=emit, ref=f"{handle.run_id}-input")
    trip = crossing.tripwire
    if trip is None and crossing.feedback is not None:
        guard = next((g.name for g in guards_at(guards_of(spec), "input")), "")
        trip = Tripwire(guard=guard, boundary="input", agent_path=handle.agent_path, reason=crossing.feedback)
        await tripped(trip, config, handle, emit)
    if trip is not None:
        return messages, [], trip
    if not crossing.changed:
        return messages, [], None
    redacted = message.model_copy(update={"content": crossing.text})
    return [*messages[:index], redacted, *messages[index + 1 :]], [redacted], None


def parallel_input(spec: AgentSpec) -> bool:
    """True when every input guard runs beside the model call (`mode="parallel"`)."""
    return all(g.mode == "parallel" for g in guards_at(guards_of(spec), "input"))


async def race_input(check: Any, call: Any) -> tuple[Any, Any]:
    """Run the input check and the model call together: the model call is cancelled as
    soon as the check says anything but "let it through as it is" (its answer is then
    never used: no tool of it runs)."""
    model = asyncio.ensure_future(call())
    try:
        checked = await check
    except BaseException:
        model.cancel()
        raise
    if checked is not None and (checked[2] is not None or checked[1]):
        model.cancel()
        try:
            await model
        except BaseException:  # noqa: BLE001 - cancelled, or failed after the trip: either way unused
            pass
        return checked, None
    return checked, await model


def forget_run(messages: Sequence[BaseMessage], keep: Sequence[BaseMessage] = ()) -> list[BaseMessage]:
    """Removals of every message of the current run, its input included (a top-level trip
    stores nothing of the blocked turn, so the conversation can go on)."""
    start = next((i for i in range(len(messages) - 1, -1, -1) if is_run_input(messages[i])), None)
    if start is None:
        return []
    kept = {m.id for m in keep}
    return [RemoveMessage(id=m.id) for m in messages[start:] if m.id and m.id not in kept]


def guard_feedback(text: str) -> BaseMessage:
    return feedback_message(f"Your answer was not sent: {text} Answer again.", GUARD_FEEDBACK)


def retries_at_output(messages: Sequence[BaseMessage]) -> int:
    """How many times this run's answer was already sent back by a guard."""
    count = 0
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.additional_kwargs.get(FEEDBACK_MARK) == GUARD_FEEDBACK:
            count += 1
        elif is_run_input(message):
            break
    return count


class Answer(NamedTuple):
    """An answer after its output guards: the message to store (redacted, or None when it
    must not be stored), feedback to send back, or the trip."""

    message: AIMessage | None
    feedback: BaseMessage | None = None
    tripwire: Tripwire | None = None
    held: tuple[str, str] | None = None


async def check_output(
    spec: AgentSpec,
    response: AIMessage,
    messages: Sequence[BaseMessage],
    handle: RunHandle,
    config: RunnableConfig,
    emit: Emitter,
    *,
    windowed: Crossing | None = None,
    can_pause: bool = False,
) -> Answer:
    """The `output` boundary of an agent's final answer (whole-answer guards; `windowed`
    is what the streaming guards decided while it streamed, see `stream_answer`)."""
    attempt = retries_at_output(messages)
    crossing = windowed
    blocking = [g for g in guards_at(guards_of(spec), "output") if g.mode != "streaming"]
    text = windowed.text if windowed is not None else text_of(response)
    changed = windowed is not None and windowed.changed
    if blocking and (crossing is None or (crossing.tripwire is None and crossing.feedback is None and crossing.held is None)):
        crossing = await cross(
            spec, "output", text, handle=handle, config=config, emit=emit, ref=f"{handle.run_id}-output-{attempt}",
            attempt=attempt, can_pause=can_pause, guards=blocking,
        )  # fmt: skip
        changed = changed or crossing.changed
    if crossing is None:
        return Answer(response)
    if crossing.tripwire is not None:
        return Answer(None, tripwire=crossing.tripwire)
    if crossing.feedback is not None:
        return Answer(None, feedback=guard_feedback(crossing.feedback))
    if crossing.held is not None:
        return Answer(_with_text(response, crossing.text) if changed else response, held=crossing.held)
    return Answer(_with_text(response, crossing.text) if changed else response)


def _with_text(response: AIMessage, text: str) -> AIMessage:
    return response.model_copy(update={"content": text})


def streams_output(spec: AgentSpec) -> bool:
    return any(g.mode == "streaming" for g in guards_at(guards_of(spec), "output"))


async def guard_answer(spec: AgentSpec, request: ModelRequest, handler: ModelHandler) -> AIMessage | None:
    """The turn's model call (`handler`) through the agent's guards: the top agent's input
    checked before (or, `parallel`, beside) it, the answer streamed through the
    streaming output guards, then checked whole. Returns the answer to keep (redacted,
    or marked `mark_held` for a person to decide first), or None when it was sent back
    (the feedback is in `request.added`, after a redacted input); a trip raises
    `TripwireError`."""
    at, handle, config, emit = guarded_at(spec), request.handle, request.config, request.emit
    streamed = "output" in at and streams_output(spec)
    send = streamed and all(g.mode == "streaming" for g in guards_at(guards_of(spec), "output"))
    # an answer a guard may still refuse never streams token by token
    hushed = "output" in at or ("input" in at and len(handle.agent_path) == 1)
    request = request.override(quiet=hushed, stream=partial(_through_windows, spec, send) if streamed else None)
    history, response = request.messages, None
    if "input" in at:
        if parallel_input(spec) and not streamed:
            checked, response = await race_input(check_input(spec, list(history), handle, config, emit), lambda: handler(request))
        else:
            checked = await check_input(spec, list(history), handle, config, emit)
        if checked is not None:
            history, stored, trip = checked
            if trip is not None:
                raise TripwireError(trip)
            if stored:
                request.added.extend(stored)
                request = request.override(messages=history)
    if response is None:
        response = await handler(request)
    windowed: Crossing | None = None
    if streamed:
        response, windowed = response
        if response is None:  # a window tripped, was sent back or escalated: the model stopped
            await _stopped(windowed, request)
            return None
    if "output" not in at or not isinstance(response, AIMessage) or response.invalid_tool_calls:
        return response  # type: ignore[no-any-return]
    view = final_answer_view(response)
    if response.tool_calls and view is None:
        return response
    answer = await check_output(spec, view or response, history, handle, config, emit, windowed=windowed)
    if answer.tripwire is not None:
        raise TripwireError(answer.tripwire)
    if answer.message is None:
        assert answer.feedback is not None
        request.added.append(answer.feedback)
        return None
    message = from_view(response, answer.message) if view is not None else answer.message
    return mark_held(message, "output", answer.held) if answer.held is not None else message


async def _through_windows(spec: AgentSpec, send: bool, chunks: Any, request: ModelRequest) -> Any:
    return await stream_answer(spec, chunks, request.config, request.handle, request.emit, send=send)


async def _stopped(windowed: Crossing, request: ModelRequest) -> None:
    """A streamed answer its windows stopped: sent back (None), or a trip; an escalation
    inside a stream has nothing whole to show a person, so it trips too."""
    if windowed.feedback is not None:
        request.added.append(guard_feedback(windowed.feedback))
        return None
    trip = windowed.tripwire
    if trip is None:
        assert windowed.held is not None
        handle = request.handle
        trip = Tripwire(guard=windowed.held[0], boundary="output", agent_path=handle.agent_path, reason=windowed.held[1])
        await tripped(trip, request.config, handle, request.emit)
    raise TripwireError(trip)


def checked_text(spec: AgentSpec, message: AIMessage) -> str:
    """The text of a checked answer that its agent streams itself once checked (a leaf's
    loop: its node's messages never reach the parent's stream); empty when the
    streaming guards already sent it window by window."""
    if "output" not in guarded_at(spec):
        return ""
    sent = streams_output(spec) and all(g.mode == "streaming" for g in guards_at(guards_of(spec), "output"))
    return "" if sent and not message.tool_calls else text_of(message)


M = TypeVar("M", bound=BaseMessage)

# marks a leaf subagent's answer or tool result a guard escalated, until a person decides
# (kept in the delegation's journal, so a resumed task asks again instead of re-running)
HELD_MARK = "supervisor_graph_guard_held"


def mark_held(message: M, boundary: str, held: tuple[str, str]) -> M:
    kwargs = {**message.additional_kwargs, HELD_MARK: {"boundary": boundary, "guard": held[0], "reason": held[1]}}
    return message.model_copy(update={"additional_kwargs": kwargs})


def unmark(message: M) -> M:
    kwargs = {k: v for k, v in message.additional_kwargs.items() if k != HELD_MARK}
    return message.model_copy(update={"additional_kwargs": kwargs})


def final_answer_view(response: AIMessage) -> AIMessage | None:
    """A turn whose only call is the output schema's `final_answer` (SPEC §28) is an
    answer too: its arguments, as JSON text, are what the output guards check."""
    calls = response.tool_calls
    if len(calls) != 1 or calls[0]["name"] != FINAL_ANSWER_TOOL:
        return None
    return response.model_copy(update={"content": json.dumps(calls[0]["args"], ensure_ascii=False), "tool_calls": []})


def from_view(response: AIMessage, checked: AIMessage) -> AIMessage:
    """The `final_answer` call with the checked text as its arguments. A guard's rewrite
    that is no JSON object leaves no arguments: the answer fails its schema and goes back
    to the model, and the unchecked arguments never cross."""
    try:
        args = json.loads(text_of(checked))
    except ValueError:
        args = None
    call = {**response.tool_calls[0], "args": args if isinstance(args, dict) else {}}
    return response.model_copy(update={"tool_calls": [call]})


def tool_trip(messages: Sequence[BaseMessage]) -> Tripwire | None:
    """A trip at a tool boundary of the top agent's last turn (the tools node marks its
    result; the supervisor ends the run once every result is in)."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if not isinstance(message, ToolMessage):
            return None
        if isinstance(message.artifact, dict) and message.artifact.get("tripwire"):
            return Tripwire.model_validate(message.artifact["tripwire"])
    return None


def tripwire_end(
    state: SupervisorState, messages: Sequence[BaseMessage], trip: Tripwire, handle: RunHandle, consumed: dict[str, Any]
) -> Command[Any]:
    """A guard stopped this agent (SPEC §30). At the top the run ends `"tripwire"` and its
    messages leave the thread, its input included; in a delegation the subagent fails."""
    if len(handle.agent_path) > 1:
        raise TripwireError(trip)
    update = {**end_update(state, "tripwire", forget_run(messages)), "tripwire": trip.model_dump(mode="json"), **consumed}
    if state.get("guard_held"):
        update["guard_held"] = None
    return Command(update=update, goto=END)


async def settle_held(
    state: SupervisorState, opts: RunOptions, handle: RunHandle, config: RunnableConfig, emit: Emitter,
    messages: Sequence[BaseMessage], held: dict[str, Any], consumed: dict[str, Any],
) -> Command[Any]:  # fmt: skip
    """A person decides on an answer a guard escalated: approved, it is the run's answer."""
    response: AIMessage = held["message"]
    guard = (held["guard"][0], held["guard"][1])
    trip = await hold_for_person(guard, "output", text_of(response), handle, config, emit, f"{handle.run_id}-output", "")
    if trip is not None:
        return tripwire_end(state, messages, trip, handle, consumed)
    update = {**end_update(state, finish_reason_of(response), [response]), "guard_held": None, **consumed}
    return Command(update=update, goto=after_answer(opts))
