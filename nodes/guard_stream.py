"""An answer streamed through its `mode="streaming"` output guards (SPEC §30).

The client, the AG-UI events and the stored thread only ever get text no later text can
change. After each `window_tokens` of new text the guards check everything not yet sent,
and only the part before the earliest point a guard must still hold back goes out: for a
guard whose check has `hold_from(text)` (`pii`), the start of whatever the next characters
could still make (part of) a match, whatever the window, the overlap or the provider's
chunk size; for any other guard, the last `overlap_tokens` (the longest span it was
declared to need whole). The held end is checked again with what follows; the end of the
stream decides the rest."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.messages.utils import message_chunk_to_message
from langchain_core.runnables import RunnableConfig

from supervisor_graph.nodes.events import Emitter
from supervisor_graph.nodes.guard_boundaries import Crossing, cross
from supervisor_graph.nodes.guards import CHARS_PER_TOKEN, Guardrail, guards_at, stream_hold
from supervisor_graph.nodes.options import RunHandle
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.text import text_of

__all__ = ["quiet", "stream_answer"]

# the sent text a guard gets again as context (`GuardContext.before`): more than any
# detector looks behind a match (a version word before an IP address, 12 characters)
CONTEXT_CHARS = 64


def quiet(config: RunnableConfig) -> RunnableConfig:
    """`config` whose model tokens LangGraph does not stream (`nostream`): an answer with
    output guards reaches streams only once checked."""
    return {**config, "tags": [*(config.get("tags") or []), "nostream"]}


class _Stream:
    """One answer on its way out: the model's text so far, how much of it is decided and
    sent, and what went out (redactions applied)."""

    def __init__(self, guards: list[Guardrail]) -> None:
        self.guards = guards
        self.text = ""
        self.sent = 0  # characters of `text` decided and sent
        self.checked_at = 0  # len(text) when the guards last ran
        self.out: list[str] = []
        self.changed = False

    def hold(self) -> int:
        """Where the text no guard can decide yet starts (never before what was sent: a
        cut is made only where no match of any continuation can reach across it)."""
        base = max(0, self.sent - CONTEXT_CHARS)
        tail = self.text[base:]
        return max(self.sent, min(base + stream_hold(guard, tail) for guard in self.guards))

    def decided(self, checked: str, cut: int) -> str | None:
        """What goes out of a window the guards let through as `checked`: all of it but
        the held end, which must have come through untouched (a guard that rewrote it
        matched into text it cannot decide yet: then nothing goes out until it can)."""
        keep = len(self.text) - cut
        if keep == 0:
            return checked
        if not checked.endswith(self.text[cut:]):
            return None
        return checked[: len(checked) - keep]


async def stream_answer(
    spec: AgentSpec,
    model: Any,
    prompt: Any,
    config: RunnableConfig,
    handle: RunHandle,
    emit: Emitter,
    *,
    send: bool,
) -> tuple[AIMessage | None, Crossing]:
    """Stream the model's answer through the streaming output guards: only decided,
    checked text goes out (`emit` as `text-delta`, when `send`). A blocked window stops
    the model at once. Returns the message and what the guards decided (its text what
    went out, which is what the thread stores)."""
    guards = [g for g in guards_at(spec.guards, "output") if g.mode == "streaming"]
    every = min(g.window_tokens for g in guards) * CHARS_PER_TOKEN
    state = _Stream(guards)
    full: AIMessageChunk | None = None
    message_id: str | None = None

    async def window(last: bool) -> Crossing:
        state.checked_at = len(state.text)
        cut = len(state.text) if last else state.hold()
        pending = state.text[state.sent :]
        crossing = await cross(
            spec, "output", pending, handle=handle, config=config, emit=emit, can_pause=False, guards=guards,
            ref=f"{handle.run_id}-output", before=state.text[max(0, state.sent - CONTEXT_CHARS) : state.sent],
            partial=not last,
        )  # fmt: skip
        if crossing.tripwire is not None or crossing.feedback is not None or crossing.held is not None:
            return crossing
        out = state.decided(crossing.text, cut)
        if out is None:
            return crossing
        state.changed = state.changed or out != state.text[state.sent : cut]
        state.sent = cut
        state.out.append(out)
        if send and out:
            emit("text-delta", {"text": out, "message_id": message_id})
        return crossing

    def stopped(crossing: Crossing) -> bool:
        return crossing.tripwire is not None or crossing.feedback is not None or crossing.held is not None

    stream = model.astream(prompt, quiet(config))
    try:
        async for chunk in stream:
            full = chunk if full is None else full + chunk
            message_id = message_id or chunk.id
            state.text += text_of(chunk)
            if len(state.text) - state.checked_at >= every:
                crossing = await window(False)
                if stopped(crossing):
                    return None, crossing  # the model stops here: nothing more is generated
    finally:
        await stream.aclose()
    if state.sent < len(state.text):
        crossing = await window(True)
        if stopped(crossing):
            return None, crossing
    message = message_chunk_to_message(full) if full is not None else AIMessage(content="")
    assert isinstance(message, AIMessage)
    return message, Crossing("".join(state.out), state.changed)
