"""Time travel over AG-UI (SPEC §34): what a run's `forwardedProps` ask for.

- `checkpoint_id`: the run forks from that checkpoint of its thread (one
  `agent.history` lists, or `GET .../threads/{id}/checkpoints` on the playground's
  routes). The client sends the fork's conversation: its new messages are those the
  checkpoint does not have, and its `MESSAGES_SNAPSHOT` is the fork's.
- `edit: {"tool_call_id": ..., "prompt": ...}`: a delegation of the thread runs again
  with a new prompt (`run/rerun.py`), at `checkpoint_id` when given.

Either leaves the thread's latest branch as it is, paused or not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    FunctionCall,
    Message,
    MessagesSnapshotEvent,
    SystemMessage,
    ToolCall,
    UserMessage,
)
from ag_ui.core import ToolMessage as AGUIToolMessage
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages import SystemMessage as LCSystemMessage
from pydantic import ValidationError

from supervisor_graph.agui.frontend import InputError
from supervisor_graph.memory.memory import Memory
from supervisor_graph.run.history import checkpoint_error
from supervisor_graph.run.rerun import DelegationEdit

__all__ = ["Travel", "fork_snapshot", "travel_of"]


@dataclass(slots=True)
class Travel:
    """Where a run goes back to: a checkpoint to fork from, a delegation to run again."""

    checkpoint: str | None = None
    edit: dict[str, Any] | None = None

    @property
    def forks(self) -> bool:
        return self.checkpoint is not None or self.edit is not None


async def travel_of(props: dict[str, Any], memory: Memory, thread_id: str) -> Travel:
    """What `props` ask for, checked before anything runs (`InputError` otherwise)."""
    travel = Travel()
    checkpoint = props.get("checkpoint_id")
    if checkpoint is not None:
        if not isinstance(checkpoint, str) or not checkpoint:
            raise InputError("INVALID_CHECKPOINT", "forwardedProps.checkpoint_id must be a checkpoint id (a string); nothing was run.")
        error = await checkpoint_error(await memory.checkpointer(), thread_id, checkpoint)
        if error is not None:
            raise InputError("UNKNOWN_CHECKPOINT", f"{error}; nothing was run.")
        travel.checkpoint = checkpoint
    if props.get("edit") is not None:
        try:
            travel.edit = DelegationEdit.model_validate(props["edit"]).model_dump()
        except ValidationError as exc:
            raise InputError("INVALID_EDIT", f"forwardedProps.edit: {exc.errors()[0]['msg']} (it takes tool_call_id and prompt); nothing was run.") from None
    return travel


async def fork_snapshot(memory: Memory, thread_id: str) -> MessagesSnapshotEvent:
    """The thread's conversation after a fork's run, for a client that showed another branch."""
    shown = (_agui(m) for m in await memory.get_messages(thread_id))
    return MessagesSnapshotEvent(messages=[m for m in shown if m is not None])


def _agui(message: BaseMessage) -> Message | None:
    text = message.content if isinstance(message.content, str) else message.text
    mid = message.id or ""
    if isinstance(message, HumanMessage):
        return UserMessage(id=mid, content=text)
    if isinstance(message, AIMessage):
        calls = [
            ToolCall(id=c["id"] or "", function=FunctionCall(name=c["name"], arguments=json.dumps(c["args"])))
            for c in message.tool_calls
        ]
        return AssistantMessage(id=mid, content=text or None, tool_calls=calls or None)
    if isinstance(message, ToolMessage):
        return AGUIToolMessage(id=mid, content=text, tool_call_id=message.tool_call_id)
    if isinstance(message, LCSystemMessage):
        return SystemMessage(id=mid, content=text)
    return None
