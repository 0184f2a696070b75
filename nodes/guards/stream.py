"""An answer streamed through its `mode="streaming"` output guards (SPEC §30).

The client, the AG-UI events and the stored thread only ever get text no later text can
change. After each `window_tokens` of new text the guards check everything not yet sent,
and only what is before the last place every guard may cut at goes out. A guard whose
check has `hold_from(text, end)` (`pii`) says where that is: before whatever the next
characters could still make (part of) a match, whatever the window, the overlap or the
provider's chunk size. Any other guard cuts `overlap_tokens` before the end (the longest
span it was declared to need whole). The held end is checked again with what follows;
the end of the stream decides the rest.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.messages.utils import message_chunk_to_message
from langchain_core.runnables import RunnableConfig

from supervisor_graph.nodes.guards.boundaries import Crossing, cross
from supervisor_graph.nodes.guards.core import CHARS_PER_TOKEN, Guardrail, guards_at, guards_of, stream_hold
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.options import RunHandle
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.text import text_of

__all__ = ["StreamWindows", "quiet", "stream_answer"]

# the sent text a guard gets again as context (`GuardContext.before`): more than any
# detector looks behind a match (a version word before an IP address, 12 characters)
CONTEXT_CHARS = 64


def quiet(config: RunnableConfig) -> RunnableConfig:
    """`config` whose model tokens LangGraph does not stream (`nostream`): an answer with
    output guards reaches streams only once checked."""
    return {**config, "tags": [*(config.get("tags") or []), "nostream"]}


Check = Callable[[str, str, int | None], Awaitable[Crossing]]
"""`check(pending, before, held_from)`: the guards on the text not yet sent (`cross`)."""


class StreamWindows:
    """One answer on its way out through its streaming guards: the model's text so far,
    how much of it is decided and sent, and what went out (redactions applied)."""

    def __init__(self, guards: Sequence[Guardrail]) -> None:
        self.guards = list(guards)
        self.every = min(g.window_tokens for g in self.guards) * CHARS_PER_TOKEN
        self.text = ""
        self.sent = 0  # characters of `text` decided and sent
        self.checked_at = 0  # len(text) when the guards last ran
        self.out: list[str] = []
        self.changed = False

    def add(self, delta: str) -> bool:
        """Take the model's next text; True when a window is due (`every` new characters)."""
        self.text += delta
        return len(self.text) - self.checked_at >= self.every

    def hold(self) -> int:
        """Where the text no guard can decide yet starts: the last place every guard may
        cut at (each guard's cut at or before the others', until they agree), never before
        what was sent (a cut is only made where no match of any continuation reaches
        across it)."""
        base = max(0, self.sent - CONTEXT_CHARS)
        tail, floor = self.text[base:], self.sent - base
        cut = len(tail)
        while (agreed := max(floor, min(stream_hold(guard, tail, cut) for guard in self.guards))) != cut:
            cut = agreed
        return base + cut

    async def window(self, check: Check, *, last: bool) -> tuple[Crossing, str]:
        """Check what is not sent yet; returns what the guards decided and the text that
        may go out now (all of it but the held end, which must have come through
        untouched: a guard that rewrote it matched into text it cannot decide yet, and
        then nothing goes out until it can)."""
        self.checked_at = len(self.text)
        cut = len(self.text) if last else self.hold()
        before = self.text[max(0, self.sent - CONTEXT_CHARS) : self.sent]
        crossing = await check(self.text[self.sent :], before, None if last else cut - self.sent)
        if crossing.tripwire is not None or crossing.feedback is not None or crossing.held is not None:
            return crossing, ""
        out, keep = crossing.text, len(self.text) - cut
        if keep:
            if not out.endswith(self.text[cut:]):
                return crossing, ""
            out = out[: len(out) - keep]
        self.changed = self.changed or out != self.text[self.sent : cut]
        self.sent = cut
        self.out.append(out)
        return crossing, out

    @property
    def done(self) -> bool:
        return self.sent == len(self.text)


async def stream_answer(
    spec: AgentSpec,
    stream: Any,
    config: RunnableConfig,
    handle: RunHandle,
    emit: Emitter,
    *,
    send: bool,
) -> tuple[AIMessage | None, Crossing]:
    """Stream the model's answer (`stream`, the model's chunks: `nodes/turn/turn.py`
    opens it) through the streaming output guards: only decided,
    checked text goes out (`emit` as `text-delta`, when `send`). A blocked window stops
    the model at once. Returns the message and what the guards decided (its text what
    went out, which is what the thread stores)."""
    state = StreamWindows([g for g in guards_at(guards_of(spec), "output") if g.mode == "streaming"])
    full: AIMessageChunk | None = None
    message_id: str | None = None

    async def check(pending: str, before: str, held_from: int | None) -> Crossing:
        return await cross(
            spec, "output", pending, handle=handle, config=config, emit=emit, can_pause=False, guards=state.guards,
            ref=f"{handle.run_id}-output", before=before, held_from=held_from,
        )  # fmt: skip

    async def window(last: bool) -> Crossing | None:
        crossing, out = await state.window(check, last=last)
        if crossing.tripwire is not None or crossing.feedback is not None or crossing.held is not None:
            return crossing
        if send and out:
            emit("text-delta", {"text": out, "message_id": message_id})
        return None

    try:
        async for chunk in stream:
            full = chunk if full is None else full + chunk
            message_id = message_id or chunk.id
            if state.add(text_of(chunk)) and (stopped := await window(False)) is not None:
                return None, stopped  # the model stops here: nothing more is generated
    finally:
        await stream.aclose()
    if not state.done and (stopped := await window(True)) is not None:
        return None, stopped
    message = message_chunk_to_message(full) if full is not None else AIMessage(content="")
    assert isinstance(message, AIMessage)
    return message, Crossing("".join(state.out), state.changed)
