"""Shared state (AGUI.md "Shared state"): the served agent's working memory, synced with
`RunAgentInput.state` both ways."""

from __future__ import annotations

import jsonpatch
from pydantic import BaseModel

from supervisor_graph import Agent, Memory
from supervisor_graph.testing import ScriptedChatModel
from tests.agui.conftest import AGUIAgent, collect, delegate, make_input, of_type, tool_call, types, wire


class Trip(BaseModel):
    city: str | None = None
    days: int | None = None
    notes: list[str] = []


def update(memory) -> dict:
    return tool_call("update_working_memory", {"memory": memory})


def planner(*replies, **working) -> Agent:
    return Agent(
        id="planner",
        model=ScriptedChatModel(responses=list(replies)),
        memory=Memory(":memory:"),
        working_memory=working or {"schema": Trip},
    )


async def test_state_capabilities_only_with_working_memory() -> None:
    assert AGUIAgent(planner(), resource_id="u").get_capabilities().state.persistent_state is True
    plain = Agent(id="plain", model=ScriptedChatModel(responses=["hi"]), memory=Memory())
    bridge = AGUIAgent(plain, resource_id="u")
    assert bridge.get_capabilities().state is None
    # without working memory the client's state is ignored and no state event is sent
    events = await collect(bridge, make_input(state={"anything": 1}))
    assert not [t for t in types(events) if t.startswith("STATE_")]
    assert wire(events)[-1]["outcome"] == {"type": "success"}


async def test_client_state_is_written_before_the_run_and_updates_arrive_as_deltas() -> None:
    agent = planner(update({"days": 3, "notes": ["museum"]}), "Three days in Lyon.")
    bridge = AGUIAgent(agent, resource_id="u1")
    events = await collect(bridge, make_input("trip", state={"city": "Lyon"}))
    kinds = types(events)
    assert kinds[:2] == ["RUN_STARTED", "STATE_SNAPSHOT"]
    assert of_type(events, "STATE_SNAPSHOT")[0]["snapshot"] == {"city": "Lyon"}
    # the model saw the client's state
    assert '"city": "Lyon"' in agent.model.calls[0][-1].content  # type: ignore[union-attr]  # after the conversation
    deltas = of_type(events, "STATE_DELTA")
    assert len(deltas) == 1
    state = jsonpatch.apply_patch({"city": "Lyon"}, deltas[0]["delta"])
    assert state == {"city": "Lyon", "days": 3, "notes": ["museum"]}
    assert await bridge.memory.get_working_memory(resource="u1") == state
    # the update tool's own events never reach the client
    assert not [e for e in wire(events) if e.get("toolCallName") == "update_working_memory"]
    assert "TOOL_CALL_START" not in kinds and "TOOL_CALL_RESULT" not in kinds
    assert "".join(e["delta"] for e in of_type(events, "TEXT_MESSAGE_CONTENT")) == "Three days in Lyon."


async def test_an_invalid_state_is_refused_and_changes_nothing() -> None:
    agent = planner("never")
    bridge = AGUIAgent(agent, resource_id="u1")
    await bridge.memory.set_working_memory({"city": "Nice"}, resource="u1")
    events = await collect(bridge, make_input(state={"days": "a week"}))
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert wire(events)[-1]["code"] == "INVALID_STATE" and "days" in wire(events)[-1]["message"]
    assert await bridge.memory.get_working_memory(resource="u1") == {"city": "Nice"}
    assert agent.model.calls == []  # type: ignore[union-attr]


async def test_template_mode_state_is_an_object_with_the_text() -> None:
    agent = planner(update("# Trip\n- City: Rome\n"), "Rome it is.", template="# Trip\n- City:\n", scope="thread")
    bridge = AGUIAgent(agent, resource_id="u1")
    events = await collect(bridge, make_input("rome"))
    assert of_type(events, "STATE_SNAPSHOT")[0]["snapshot"] == {"working_memory": "# Trip\n- City:\n"}
    delta = of_type(events, "STATE_DELTA")[0]["delta"]
    assert delta == [{"op": "replace", "path": "/working_memory", "value": "# Trip\n- City: Rome\n"}]
    bad = await collect(bridge, make_input("rome", state={"working_memory": 7}))
    assert wire(bad)[-1]["code"] == "INVALID_STATE"
    # a state change alone (no new message) is applied and acknowledged
    same = await collect(bridge, make_input("rome", messages=[], state={"working_memory": "# Trip\n- City: Milan\n"}))
    assert types(same) == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_FINISHED"]
    assert await bridge.memory.get_working_memory(thread="rome") == "# Trip\n- City: Milan\n"


async def test_a_subagents_memory_is_hidden_and_not_the_clients_state() -> None:
    scribe = Agent(
        id="scribe",
        description="Writes notes.",
        model=ScriptedChatModel(responses=[update("- note"), "noted"]),
        working_memory=True,
    )
    parent = Agent(
        id="planner",
        model=ScriptedChatModel(responses=[delegate("scribe", "note it"), "done"]),
        agents={"scribe": scribe},
        memory=Memory(":memory:"),
        working_memory={"schema": Trip},
    )
    events = await collect(AGUIAgent(parent, resource_id="u1", subagent_visibility="attributed"), make_input())
    assert not [e for e in wire(events) if e.get("toolCallName") == "update_working_memory"]
    assert of_type(events, "STATE_DELTA") == []
    assert [e["toolCallName"] for e in of_type(events, "TOOL_CALL_START")] == ["agent-scribe"]
