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


async def answered_on_server(client: Any, thread_id: str, text: str = "server facts") -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Wait until the server-hosted task of `thread_id`'s run has reported and the
    supervisor answered it; check that it was reported once. Returns (task id, task
    record, the thread's final values)."""
    import asyncio

    state = await client.threads.get_state(thread_id)
    [(task_id, record)] = state["values"]["background_tasks"].items()
    assert record["server_thread"]  # the task's own thread on the server
    deadline = asyncio.get_running_loop().time() + 60
    while not str(state["values"]["messages"][-1]["content"]).startswith("reported:"):
        assert asyncio.get_running_loop().time() < deadline, state["values"]["messages"][-1]
        await asyncio.sleep(0.2)
        state = await client.threads.get_state(thread_id)
    messages = state["values"]["messages"]
    assert any(str(m["content"]).startswith("research says: Background task started") for m in messages)
    assert messages[-1]["content"] == f"reported: [Background task {task_id} completed] / {text}"
    assert len([m for m in messages if (m.get("additional_kwargs") or {}).get("background_task")]) == 1
    return task_id, record, state["values"]
