"""AG-UI runs that start background tasks (SPEC §12, issue 24 item 3): the event stream
stays open until each outcome is answered, unless the run or the bridge says otherwise;
the tasks show as `CUSTOM` events."""

from __future__ import annotations

import json
from typing import Any

import httpx
from ag_ui_validate.pytest_plugin import validate_agui
from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import Agent, Memory
from supervisor_graph.agui import AGUIAgent, create_app
from supervisor_graph.agui.playground import PLAYGROUND_AGENT_PATH as PLAYGROUND
from supervisor_graph.testing import ScriptedChatModel, delegate
from tests.agui.conftest import ThreadServer, collect, make_input, of_type, types
from tests.agui.test_endpoint import body, post


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
    wired = events if events and isinstance(events[0], dict) else of_type(events, "TEXT_MESSAGE_CONTENT")
    return "".join(e["delta"] for e in wired if e["type"] == "TEXT_MESSAGE_CONTENT")


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


async def test_over_http_a_launch_gets_its_started_result_and_the_notice_its_marker() -> None:
    """The launching call's result is the real 'started' text (never the run-end
    placeholder), its attributed invocation ends at the launch, the stored notice carries
    its marker in the playground's history, and the playground keeps `until_idle=False`."""
    with ThreadServer(create_app(team(), resource_id="u1")) as server:
        for path, thread in (("/agent", "t-bg-http"), (PLAYGROUND, "t-bg-http-pg")):
            events, _, _ = await post(server.url + path, body(thread))
            report = validate_agui([json.dumps(e) for e in events])
            assert not [d.message for d in report.diagnostics if d.severity == "error"]
            [started] = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"].endswith("-started")]
            [result] = [e for e in events if e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"] == started["tool_call_id"]]
            assert result["content"].startswith(f"Background task started. Task ID: {started['task_id']}.")
            assert events.index(result) < next(i for i, e in enumerate(events) if e["type"] == "TEXT_MESSAGE_START")
            subagents = [(e["type"], e.get("outcome"), e.get("metadata")) for e in events if e["type"].startswith("SUBAGENT_")]
            assert subagents == ([] if path == "/agent" else [
                ("SUBAGENT_STARTED", None, None),
                ("SUBAGENT_FINISHED", {"type": "success"}, {"supervisor_graph": {"background_task_id": started["task_id"]}}),
            ])
        async with httpx.AsyncClient() as client:
            history = (await client.get(f"{server.url}{PLAYGROUND}/threads/t-bg-http-pg")).json()["messages"]
        [notice] = [m for m in history if m.get("backgroundTask")]
        assert notice["role"] == "user" and notice["content"].startswith(f"[Background task {started['task_id']} completed]")
        assert notice["backgroundTask"] == {"task_id": started["task_id"], "agent_key": "research", "status": "completed"}
    with ThreadServer(create_app(team(), resource_id="u1", until_idle=False)) as server:
        events, _, _ = await post(server.url + PLAYGROUND, body("t-bg-http-off"))
        assert "started, will report" in texts(events) and "the research is in" not in texts(events)
