"""SPEC §34: a `per_parent_thread` subagent follows its branch of the parent's history in
a run that replays (after an outside update), not the newest checkpoint written before
the replayed one, which another branch may have written."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from supervisor_graph import Agent
from supervisor_graph.testing import ScriptedChatModel, delegate


def _topics(messages: list[Any]) -> str:
    return "sub saw " + " | ".join(str(m.content) for m in messages if isinstance(m, HumanMessage))


def _agent() -> Agent:
    research = Agent(id="research", description="r", inherit_context=False, model=ScriptedChatModel(policy=_topics))
    return Agent(
        id="sup",
        model=ScriptedChatModel(
            policy=lambda m: f"done: {m[-1].content}" if isinstance(m[-1], ToolMessage) else delegate("research", f"topic {m[-1].content}")
        ),
        agents={"research": research},
        subagent_threads="per_parent_thread",
    )


async def test_an_edited_delegation_after_a_fork_runs_in_its_own_branch() -> None:
    graph = _agent().compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"messages": [HumanMessage("A")]}, config)
    after_a = (await graph.aget_state(config)).config
    await graph.ainvoke({"messages": [HumanMessage("B")]}, config)
    head = (await graph.aget_state(config)).config
    await graph.ainvoke({"messages": [HumanMessage("C")]}, after_a)  # a fork: its subagent checkpoint is newer than B's
    out = await graph.ainvoke({"messages": [HumanMessage("D")]}, head)
    assert out["messages"][-1].content == "done: sub saw topic A | topic B | topic D"
    before = next(s for s in [s async for s in graph.aget_state_history(config)] if s.next == ("research",))
    call = before.values["messages"][-1]
    edited = call.model_copy(update={"tool_calls": [{**call.tool_calls[0], "args": {"prompt": "topic EDITED"}}]})
    new = await graph.aupdate_state(before.config, {"messages": [edited]}, as_node="supervisor")
    out = await graph.ainvoke(None, new)
    # the edited prompt, as a new turn of D's branch: nothing of C, nor of D's first run
    assert out["messages"][-1].content == "done: sub saw topic A | topic B | topic EDITED"


async def test_a_replay_of_a_forks_delegation_runs_it_again_in_the_fork() -> None:
    graph = _agent().compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"messages": [HumanMessage("A")]}, config)
    after_a = (await graph.aget_state(config)).config
    await graph.ainvoke({"messages": [HumanMessage("B")]}, config)
    await graph.ainvoke({"messages": [HumanMessage("C")]}, after_a)
    # the newest: the fork's delegation; B's subagent checkpoint is older than it
    before_c = next(s for s in [s async for s in graph.aget_state_history(config)] if s.next == ("research",))
    out = await graph.ainvoke(None, before_c.config)
    assert out["messages"][-1].content == "done: sub saw topic A | topic C"
