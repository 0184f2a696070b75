"""Typed chunks of `full_stream` (SPEC §5)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from supervisor_graph.nodes.state import Usage

__all__ = ["ChunkType", "FinishChunk", "StreamChunk", "Usage", "make_chunk"]

ChunkType = Literal[
    "start",
    "step-start",
    "text-delta",
    "object-delta",
    "reasoning-delta",
    "tool-call",
    "tool-result",
    "tool-error",
    "tool-call-approval",
    "tool-call-suspended",
    "delegation-start",
    "delegation-complete",
    "background-task-started",
    "background-task-completed",
    "background-task-failed",
    "step-finish",
    "compaction",
    "guard",
    "tripwire",
    "finish",
    "error",
    "abort",
]


class StreamChunk(BaseModel):
    """One event of a run. `agent_path` names the agents from the top-level one down to
    the one that produced it; `run_id` is the top-level run's id. `namespace` is the
    LangGraph checkpoint namespace of the graph that produced it (`""` for the top-level
    agent, `"<key>:<task id>"` for a delegation, `|`-joined when nested): it tells two
    concurrent delegations to the same subagent apart, and stays the same when a paused
    delegation is resumed."""

    model_config = ConfigDict(frozen=True)

    type: ChunkType
    payload: dict[str, Any] = Field(default_factory=dict)
    run_id: str
    agent_path: tuple[str, ...]
    namespace: str = ""

    @property
    def text(self) -> str:
        """The text of a `text-delta` / `reasoning-delta` chunk."""
        return str(self.payload.get("text", ""))


class FinishChunk(StreamChunk):
    """The last chunk of a run: its `finish_reason` and `usage` (`payload["usage_by_agent"]` splits it by agent)."""

    type: Literal["finish"] = "finish"
    finish_reason: str
    usage: Usage


def make_chunk(
    type_: str, payload: dict[str, Any], run_id: str, agent_path: tuple[str, ...], namespace: str = ""
) -> StreamChunk:
    return StreamChunk.model_construct(
        type=type_, payload=payload, run_id=run_id, agent_path=agent_path, namespace=namespace
    )
