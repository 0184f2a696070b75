"""The text and reasoning messages one run has open, per namespace, and the events that
open, continue and close them: one text message per model call, under the call's
`AIMessage` id; a reasoning span ends with the provider's artefacts as an encrypted
value. Each model call is also a step (`STEP_STARTED` / `STEP_FINISHED`, the call's
usage in the finish's metadata), which the playground's timeline draws."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ag_ui.core import (
    BaseEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)

from supervisor_graph.agui.messages import encode_reasoning, reasoning_message_id

__all__ = ["MessageStreams"]


def _now() -> int:
    return int(time.time() * 1000)


class MessageStreams:
    """`subagent_of(namespace)` is the `subagent_run_id` events in that namespace carry."""

    def __init__(self, subagent_of: Callable[[str], str | None], step_meta: Callable[..., Any] | None = None) -> None:
        self._sub = subagent_of
        self._step_meta = step_meta  # None: no STEP events (the Mastra dialect sends none)
        self.steps: dict[str, str] = {}  # namespace -> the step open there
        self.text: dict[str, str] = {}
        self.reasoning_message: dict[str, str] = {}
        self.reasoning_span: dict[str, str] = {}

    def close_text(self, ns: str) -> list[BaseEvent]:
        mid = self.text.pop(ns, None)
        return [TextMessageEndEvent(message_id=mid, subagent_run_id=self._sub(ns), timestamp=_now())] if mid else []

    def close_reasoning_message(self, ns: str) -> list[BaseEvent]:
        rid = self.reasoning_message.pop(ns, None)
        return [ReasoningMessageEndEvent(message_id=rid, subagent_run_id=self._sub(ns), timestamp=_now())] if rid else []

    def close_messages(self, ns: str) -> list[BaseEvent]:
        """End the text and reasoning messages open in `ns` (a reasoning span stays open)."""
        return self.close_text(ns) + self.close_reasoning_message(ns)

    def close_span(self, ns: str) -> list[BaseEvent]:
        events = self.close_reasoning_message(ns)
        rid = self.reasoning_span.pop(ns, None)
        if rid:
            events.append(ReasoningEndEvent(message_id=rid, subagent_run_id=self._sub(ns), timestamp=_now()))
        return events

    def close(self, ns: str | None = None) -> list[BaseEvent]:
        """End open text and reasoning (in `ns` and below, or everywhere)."""
        names = {*self.text, *self.reasoning_message, *self.reasoning_span, *self.steps}
        if ns is not None:
            names = {n for n in names if n == ns or n.startswith(ns + "|")}
        events: list[BaseEvent] = []
        for name in sorted(names, key=lambda n: n.count("|"), reverse=True):
            events += self.close_text(name) + self.close_span(name) + self.close_step(name)
        return events

    def step_started(self, ns: str, name: str) -> list[BaseEvent]:
        if self._step_meta is None:
            return []
        events = self.close_step(ns)
        self.steps[ns] = name
        return [*events, StepStartedEvent(step_name=name, subagent_run_id=self._sub(ns), timestamp=_now())]

    def close_step(self, ns: str, usage: dict[str, Any] | None = None) -> list[BaseEvent]:
        """End the step open in `ns` (with the model call's usage when it finished)."""
        name = self.steps.pop(ns, None)
        if name is None:
            return []
        meta = self._step_meta(usage=usage) if usage and self._step_meta is not None else None
        return [StepFinishedEvent(step_name=name, subagent_run_id=self._sub(ns), metadata=meta, timestamp=_now())]

    def text_delta(self, ns: str, message_id: str, delta: str) -> list[BaseEvent]:
        sub, events = self._sub(ns), []
        if self.text.get(ns) != message_id:
            events += self.close_messages(ns)
            events.append(TextMessageStartEvent(message_id=message_id, role="assistant", subagent_run_id=sub, timestamp=_now()))
            self.text[ns] = message_id
        events.append(TextMessageContentEvent(message_id=message_id, delta=delta, subagent_run_id=sub, timestamp=_now()))
        return events

    def reasoning_delta(self, ns: str, message_id: str, delta: str) -> list[BaseEvent]:
        rid = reasoning_message_id(message_id)
        return [*self._open_reasoning(ns, rid), ReasoningMessageContentEvent(message_id=rid, delta=delta, subagent_run_id=self._sub(ns), timestamp=_now())]

    def _open_reasoning(self, ns: str, rid: str) -> list[BaseEvent]:
        sub, events = self._sub(ns), self.close_text(ns)
        if self.reasoning_span.get(ns) != rid:
            events += self.close_span(ns)
            events.append(ReasoningStartEvent(message_id=rid, subagent_run_id=sub, timestamp=_now()))
            self.reasoning_span[ns] = rid
        if self.reasoning_message.get(ns) != rid:
            events += self.close_reasoning_message(ns)
            events.append(ReasoningMessageStartEvent(message_id=rid, role="reasoning", subagent_run_id=sub, timestamp=_now()))
            self.reasoning_message[ns] = rid
        return events

    def step_finished(self, ns: str, payload: dict[str, Any]) -> list[BaseEvent]:
        """A model call in `ns` ended: its messages close, and its reasoning span with the
        provider's artefacts (`reasoning_artifacts` of the `step-finish` payload)."""
        events = self.close_messages(ns)
        artifacts, mid = payload.get("reasoning_artifacts"), payload.get("message_id")
        if artifacts and mid:
            rid = reasoning_message_id(str(mid))
            if self.reasoning_span.get(ns) != rid:
                events += self._open_reasoning(ns, rid) + self.close_reasoning_message(ns)
            events.append(
                ReasoningEncryptedValueEvent(
                    subtype="message",
                    entity_id=rid,
                    encrypted_value=encode_reasoning(artifacts),
                    subagent_run_id=self._sub(ns),
                    timestamp=_now(),
                )
            )
        return events + self.close_span(ns) + self.close_step(ns, payload.get("usage"))
