"""Edit a delegation's prompt and run it again (SPEC §34): `generate(None, memory={"thread":
...}, edit={"tool_call_id": ..., "prompt": ...})`, and its `stream` twin.

It does what LangGraph Studio does: the supervisor's answer that made the call is written
again, as the supervisor, with the new prompt (`aupdate_state`), at the checkpoint where
the call waits to run, which forks the thread there; the run then continues from that
fork without new input, so the delegation runs with the edited prompt
(`compiler/edits.py` routes it) and the supervisor goes on from its result.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DelegationEdit", "edited_fork"]


class DelegationEdit(BaseModel):
    """`edit=`: the delegation call to run again, and its new prompt."""

    model_config = ConfigDict(extra="forbid")

    tool_call_id: str = Field(min_length=1)
    prompt: str = Field(min_length=1)


async def edited_fork(graph: Any, config: RunnableConfig, edit: DelegationEdit, checkpoint: str | None) -> RunnableConfig:
    """The config of a fork where `edit`'s call, with its new prompt, waits to run: found
    in the thread's history (at `checkpoint` when given)."""
    thread = config["configurable"]["thread_id"]
    at: RunnableConfig = {"configurable": {"thread_id": thread}}
    if checkpoint is not None:
        at["configurable"]["checkpoint_id"] = checkpoint
    async for snapshot in graph.aget_state_history(at):
        messages = snapshot.values.get("messages") or []
        last = messages[-1] if messages else None
        if isinstance(last, AIMessage) and any(call["id"] == edit.tool_call_id for call in last.tool_calls):
            calls = [
                {**call, "args": {**call["args"], "prompt": edit.prompt}} if call["id"] == edit.tool_call_id else call
                for call in last.tool_calls
            ]
            edited = last.model_copy(update={"tool_calls": calls})
            forked: RunnableConfig = await graph.aupdate_state(snapshot.config, {"messages": [edited]}, as_node="supervisor")
            return {**config, "configurable": {**config["configurable"], **forked["configurable"]}}
        if checkpoint is not None:
            break  # only the checkpoint asked for
    where = f"checkpoint {checkpoint!r} of thread {thread!r}" if checkpoint else f"thread {thread!r}"
    raise ValueError(
        f"edit: no call {edit.tool_call_id!r} waits to run at {where}; pick one from agent.history(memory=...)'s delegations"
    )
