"""Where a subagent with one thread per parent thread (`per_parent_thread`) continues
from: the checkpoint its last delegation *in this branch of the parent's history* ended
at (SPEC §34).

LangGraph keeps such a subagent's checkpoints under one namespace of the parent's thread
and, on a new delegation, loads the latest one there, whichever branch of the parent's
history wrote it: a run forked from an earlier parent checkpoint would see what the
abandoned branch told the subagent, and that branch, continued, what the fork told it.
So each delegation's result (its `ToolMessage` artifact, checkpointed with the parent's
messages) names the subagent checkpoint it ended at, and the next delegation to that
subagent starts from the one its own branch names. Forks, copies of the thread and edits
carry the pointer with the parent's messages, at no extra checkpoint write.

A pause resumed is no new delegation: LangGraph continues the subagent from its own
latest checkpoint, as before (`is_resuming`). A replay (a run from an earlier checkpoint
with no input, or after `update_state`: LangGraph marks it resuming too) is one: there
LangGraph would load the newest subagent checkpoint written before the replayed one,
which another branch may have written (`is_replaying`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from supervisor_graph.checkpointers.compat import is_replaying, is_resuming, read_channel

__all__ = ["CHECKPOINT_KEY", "continue_from", "ended_at", "remember"]

CHECKPOINT_KEY = "sub_agent_checkpoint_id"
"""The artifact key of the subagent checkpoint a delegation ended at."""

_SCRATCH_KEY = "sub_agent_checkpoints"


def continue_from(config: RunnableConfig, tool_name: str, thread_id: str, scratch: dict[str, Any]) -> str | None:
    """The checkpoint of subagent thread `thread_id` a new delegation through
    `tool_name` starts from: the one an earlier delegation of this run left (parallel
    delegations take turns), else the newest its branch of the parent's messages names;
    None to let LangGraph choose (a resumed pause, or no earlier delegation)."""
    if is_resuming(config) and not is_replaying(config):
        return None
    ran: dict[str, str] = scratch.get(_SCRATCH_KEY) or {}
    if thread_id in ran:
        return ran[thread_id]
    return ended_at(read_channel(config, "messages") or [], tool_name)


def ended_at(messages: Sequence[BaseMessage], tool_name: str) -> str | None:
    """The subagent checkpoint the newest result of `tool_name` in `messages` names."""
    for message in reversed(messages):
        if isinstance(message, ToolMessage) and message.name == tool_name and isinstance(message.artifact, dict):
            checkpoint = message.artifact.get(CHECKPOINT_KEY)
            if checkpoint:
                return str(checkpoint)
    return None


def remember(scratch: dict[str, Any], thread_id: str, checkpoint_id: str) -> None:
    """Note for the rest of this run where subagent thread `thread_id` now is."""
    scratch.setdefault(_SCRATCH_KEY, {})[thread_id] = checkpoint_id
