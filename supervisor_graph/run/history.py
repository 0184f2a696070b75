"""A thread's checkpoints, newest first, for time travel (SPEC §34): `agent.history`.

Each entry is the state LangGraph keeps at one checkpoint of the thread (every branch,
as `aget_state_history` lists them), told as a person picks a step: its id (what
`memory={"thread": ..., "checkpoint": ID}` forks from), when and at which step it was
saved, the conversation at that point, and the delegations that finished since the
checkpoint before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig

from supervisor_graph.nodes.options import MemoryOptions

if TYPE_CHECKING:
    from supervisor_graph.agent import Agent

__all__ = ["checkpoint_error", "history"]


async def history(agent: Agent, memory: Any, limit: int | None = None) -> list[dict[str, Any]]:
    """The checkpoints of `memory`'s thread, newest first (at most `limit`)."""
    where = MemoryOptions.model_validate({"thread": memory} if isinstance(memory, str) else memory)
    if where.checkpoint is not None:
        raise ValueError("history() lists a whole thread: pass memory={'thread': ...} without 'checkpoint'")
    if agent.memory is None:
        raise ValueError(f"history() needs storage: declare Agent(id={agent.id!r}, memory=Memory(storage=...))")
    opened = await agent.memory.opened()
    graph = agent.graph_with(opened.saver, opened.store)
    config: RunnableConfig = {"configurable": {"thread_id": where.thread}}
    snapshots = [s async for s in graph.aget_state_history(config, limit=limit + 1 if limit else None)]
    entries = []
    for i, snapshot in enumerate(snapshots[:limit] if limit else snapshots):
        older = snapshots[i + 1] if i + 1 < len(snapshots) else None
        entries.append(_entry(snapshot, older))
    return entries


def _entry(snapshot: Any, older: Any) -> dict[str, Any]:
    configurable = snapshot.config["configurable"]
    parent = (snapshot.parent_config or {}).get("configurable", {})
    messages = list(snapshot.values.get("messages") or []) if isinstance(snapshot.values, dict) else []
    before = {m.id for m in (older.values.get("messages") or [])} if older is not None and isinstance(older.values, dict) else set()
    prompts = {c["id"]: c["args"].get("prompt") for m in messages for c in getattr(m, "tool_calls", None) or []}
    return {
        "checkpoint_id": configurable["checkpoint_id"],
        "parent_checkpoint_id": parent.get("checkpoint_id"),
        "created_at": snapshot.created_at,
        "step": (snapshot.metadata or {}).get("step"),
        "source": (snapshot.metadata or {}).get("source"),
        "next": list(snapshot.next),
        "messages": messages,
        "delegations": [_delegation(m, prompts) for m in messages if m.id not in before and _is_delegation(m)],
    }


def _is_delegation(message: Any) -> bool:
    return isinstance(message, ToolMessage) and isinstance(message.artifact, dict) and "agent_id" in message.artifact


def _delegation(message: ToolMessage, prompts: dict[str, Any]) -> dict[str, Any]:
    artifact = message.artifact
    return {
        "tool_call_id": message.tool_call_id,
        "agent_id": artifact["agent_id"],
        "prompt": prompts.get(message.tool_call_id),
        "success": artifact.get("success", message.status != "error"),
        "text": message.content,
        "sub_agent_thread_id": artifact.get("sub_agent_thread_id"),
    }


async def checkpoint_error(saver: Any, thread_id: str, checkpoint_id: str) -> str | None:
    """Why `checkpoint_id` cannot be forked from on thread `thread_id` (None: it can)."""
    found = await saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}})
    if found is None:
        return (
            f"checkpoint {checkpoint_id!r} is not a checkpoint of thread {thread_id!r}: list the thread's checkpoints "
            f"with agent.history(memory={{'thread': {thread_id!r}}})"
        )
    return None
