"""A supervisor whose research subagent is declared to run in the background, served by
`langgraph dev` in the Studio tests: without the run facade nothing hosts a background
task, so the delegation runs inline and the run answers with its result."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage

from supervisor_graph import Agent
from supervisor_graph.testing import ScriptedChatModel, delegate


def _boss(messages: list[Any]) -> Any:
    if isinstance(messages[-1], ToolMessage):
        return f"research says: {messages[-1].content}"
    return delegate("research", "dig")


research = Agent(id="research-agent", description="Researches.", model=ScriptedChatModel(policy=lambda m: "inline facts"))
agent = Agent(
    id="boss",
    model=ScriptedChatModel(policy=_boss),
    agents={"research": research},
    background_tasks={"tools": {"research": {"timeout_ms": 60_000}}},
)
graph = agent.compile()
