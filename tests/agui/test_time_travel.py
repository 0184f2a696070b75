"""Time travel over AG-UI (SPEC §34): `forwardedProps.checkpoint_id` forks a thread and
`forwardedProps.edit` runs one of its delegations again with a new prompt."""

from __future__ import annotations

import uuid

from ag_ui.core import UserMessage
from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import Agent, Memory
from supervisor_graph.testing import ScriptedChatModel, delegate
from tests.agui.conftest import AGUIAgent, collect, make_input, of_type, wire


def _team(storage: str) -> Agent:
    def lead(messages):
        last = messages[-1]
        if isinstance(last, HumanMessage):
            return delegate("research", f"topic {last.content}")
        return f"done: {last.content}" if isinstance(last, ToolMessage) else "?"

    def remembers(messages):  # what the subagent's own thread holds
        return "saw " + " | ".join(m.content for m in messages if isinstance(m, HumanMessage))

    research = Agent(id="research", description="Looks up topics.", model=ScriptedChatModel(policy=remembers), inherit_context=False)
    return Agent(
        id="lead",
        model=ScriptedChatModel(policy=lead),
        agents={"research": research},
        subagent_threads="per_parent_thread",
        memory=Memory(storage),
    )


def _props(input, **props):
    return input.model_copy(update={"forwarded_props": props})


def _said(message: str):
    return UserMessage(id=f"u-{uuid.uuid4().hex[:8]}", content=message)


def _snapshot(events) -> list[dict]:
    return of_type(events, "MESSAGES_SNAPSHOT")[-1]["messages"]


async def test_a_run_with_a_checkpoint_id_forks_and_its_snapshot_is_the_forks(tmp_path) -> None:
    agent = _team(f"file:{tmp_path / 't.db'}")
    bridge = AGUIAgent(agent, resource_id="alice")
    a = _said("A")
    await collect(bridge, make_input("tt", messages=[a]))
    after_a = (await agent.history(memory={"thread": "tt"}))[0]["checkpoint_id"]
    await collect(bridge, make_input("tt", messages=[a, _said("B")]))

    fork = _props(make_input("tt", messages=[a, _said("C")]), checkpoint_id=after_a)
    events = await collect(bridge, fork)
    assert wire(events)[-1]["outcome"] == {"type": "success"}
    texts = [m.get("content") for m in _snapshot(events)]
    assert "done: saw topic A | topic C" in texts  # the subagent forgot the abandoned B
    assert "B" not in texts and "done: saw topic A | topic B" not in texts  # the snapshot is the fork's
    await agent.memory.aclose()


async def test_edit_runs_a_delegation_again_and_bad_ids_run_nothing(tmp_path) -> None:
    agent = _team(f"file:{tmp_path / 't.db'}")
    bridge = AGUIAgent(agent, resource_id="alice")
    await collect(bridge, make_input("te", "A"))
    [done] = [d for entry in await agent.history(memory={"thread": "te"}) for d in entry["delegations"]]
    before = len(await agent.history(memory={"thread": "te"}))

    unknown = await collect(bridge, _props(make_input("te", "X"), checkpoint_id="not-a-checkpoint"))
    assert wire(unknown)[-1]["code"] == "UNKNOWN_CHECKPOINT"
    bad = await collect(bridge, _props(make_input("te", None), edit={"tool_call_id": done["tool_call_id"]}))
    assert wire(bad)[-1]["code"] == "INVALID_EDIT"
    assert len(await agent.history(memory={"thread": "te"})) == before  # nothing was written

    edit = {"tool_call_id": done["tool_call_id"], "prompt": "topic EDITED"}
    events = await collect(bridge, _props(make_input("te", None), edit=edit))
    assert wire(events)[-1]["outcome"] == {"type": "success"}
    assert "done: saw topic EDITED" in [m.get("content") for m in _snapshot(events)]
    await agent.memory.aclose()

