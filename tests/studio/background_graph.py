"""A supervisor whose research subagent is declared to run in the background, served by
`langgraph dev` in the Studio tests: the server hosts the task as a run of this graph on
a thread of its own, and the outcome comes back to the parent thread as a new run."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage

from supervisor_graph import Agent
from supervisor_graph.testing import ScriptedChatModel, delegate


def _boss(messages: list[Any]) -> Any:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return f"research says: {last.content}"
    if str(last.content).startswith("[Background task"):
        return "reported: " + " / ".join(str(last.content).splitlines())
    return delegate("research", "dig")


research = Agent(id="research-agent", description="Researches.", model=ScriptedChatModel(policy=lambda m: "server facts"))
agent = Agent(
    id="boss",
    model=ScriptedChatModel(policy=_boss),
    agents={"research": research},
    background_tasks={"tools": {"research": {"timeout_ms": 60_000}}},
)
graph = agent.compile()
