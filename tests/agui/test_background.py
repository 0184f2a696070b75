"""AG-UI runs that start background tasks (SPEC §12, issue 24 item 3): the event stream
stays open until each outcome is answered, unless the run or the bridge says otherwise;
the tasks show as `CUSTOM` events."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import Agent, Memory
from supervisor_graph.agui import AGUIAgent
from supervisor_graph.testing import ScriptedChatModel, delegate
from tests.agui.conftest import collect, make_input, of_type, types


def boss_policy(messages: list[Any]) -> Any:
    last = messages[-1]
    if isinstance(last, HumanMessage) and str(last.content).startswith("[Background task"):
        return "the research is in: " + str(last.content).splitlines()[-1]
    if isinstance(last, ToolMessage):
        return "started, will report"
    return delegate("research", "dig")


def team() -> Agent:
    research = Agent(id="research-agent", description="Researches.", model=ScriptedChatModel(policy=lambda m: "bees dance"))
    return Agent(
        id="boss", model=ScriptedChatModel(policy=boss_policy), agents={"research": research},
        memory=Memory(":memory:"), background_tasks={"tools": {"research": {}}},
    )


def texts(events: list[Any]) -> str:
    return "".join(e["delta"] for e in of_type(events, "TEXT_MESSAGE_CONTENT"))


async def test_the_stream_stays_open_until_the_outcome_is_answered() -> None:
    events = await collect(AGUIAgent(team(), resource_id="u1"), make_input("t-bg"))
    assert types(events)[0] == "RUN_STARTED" and types(events)[-1] == "RUN_FINISHED"
    assert "started, will report" in texts(events) and "the research is in: bees dance" in texts(events)
    custom = [(e["name"], e["value"].get("agent_key")) for e in of_type(events, "CUSTOM")]
    assert ("supervisor_graph.background-task-started", "research") in custom
    assert ("supervisor_graph.background-task-completed", "research") in custom


async def test_until_idle_can_be_turned_off_per_run_or_per_bridge() -> None:
    per_run = make_input("t-bg-off")
    per_run.forwarded_props = {"until_idle": False}
    for bridge, run in ((AGUIAgent(team(), resource_id="u1"), per_run), (AGUIAgent(team(), resource_id="u1", until_idle=False), make_input("t-bg-off2"))):
        events = await collect(bridge, run)
        assert "started, will report" in texts(events) and "the research is in" not in texts(events)
