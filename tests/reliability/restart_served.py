"""The agent the Postgres restart test serves with `supervisor-graph serve` (loaded as a
file). Every model call takes `SG_MODEL_LATENCY` seconds (1 by default): a run is a model
call that calls the `note` tool, the tool, and a model call that answers. The tool takes
`SG_SLOW_TOOL` seconds (10 by default) on a message that says "slow", so such a run is in
the middle of its tool call, writing nothing, when the test stops the database."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.testing import ScriptedChatModel, tool_call


class Note(BaseModel):
    text: str


def _policy(messages: list[Any]) -> Any:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return f"done: {last.content}"
    asked = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
    return tool_call("note", {"text": asked})


async def _note(note: Note) -> str:
    if "slow" in note.text:
        await asyncio.sleep(float(os.environ.get("SG_SLOW_TOOL", "10")))
    return f"noted {note.text}"


note = create_tool(id="note", description="Take a note.", input_schema=Note, execute=_note)

agent = Agent(
    id="restart-agent",
    description="Notes what it is told.",
    tools=[note],
    model=ScriptedChatModel(policy=_policy, latency=float(os.environ.get("SG_MODEL_LATENCY", "1.0")), record_calls=False),
    # the suite imports every module for its doctests: in-memory there, the test's database when served
    memory=Memory(os.environ.get("SG_STORAGE", ":memory:")),
)
