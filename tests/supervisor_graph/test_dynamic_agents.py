"""`Agent(agents=callable)`: subagents chosen per call from the request context (SPEC §21)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, RequestContext, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

CALLS: list[str] = []


def worker(name: str) -> Agent:
    return Agent(id=f"{name}-agent", description=f"The {name} specialist.", model=ScriptedChatModel(policy=lambda m: f"{name} done"))


TEAM = {name: worker(name) for name in ("legal", "sales", "support")}


def choose(ctx: RequestContext) -> dict[str, Agent]:
    CALLS.append(str(ctx.get("tier")))
    if ctx.get("tier") == "enterprise":
        return {"legal": TEAM["legal"], "sales": TEAM["sales"]}
    return {"support": TEAM["support"]}


def boss() -> tuple[Agent, ScriptedChatModel]:
    model = ScriptedChatModel(policy=lambda m: f"boss: {m[-1].content}" if isinstance(m[-1], ToolMessage) else delegate(m[-1].content, "help"))
    return Agent(id="boss", model=model, agents=choose, memory=Memory(":memory:")), model


async def test_each_call_gets_the_set_its_context_chooses() -> None:
    parent, model = boss()
    result = await parent.generate("legal", request_context={"tier": "enterprise"})
    assert result.text == "boss: legal done"
    assert sorted(model.bound_tool_names) == ["agent-legal", "agent-sales"]
    result = await parent.generate("support", request_context={"tier": "free"})
    assert result.text == "boss: support done" and model.bound_tool_names == ["agent-support"]
    # a subagent outside the chosen set does not exist for that call
    refused = await parent.generate("legal", request_context={"tier": "free"})
    assert "there is no tool named 'agent-legal'" in str(model.calls[-1][-1].content) and refused.finish_reason == "stop"


def test_the_compiled_graph_has_generic_delegation_nodes() -> None:
    parent, _ = boss()
    nodes = set(parent.compile().get_graph().nodes)
    assert {"subagent.start", "subagent", "subagent.complete", "supervisor", "tools"} <= nodes
    assert not nodes & {"legal", "support"}  # the keys are a run's, not the graph's


async def test_the_compiled_graph_chooses_the_set_per_run_from_its_context() -> None:
    seen: list[str] = []

    def complete(ctx: Any) -> dict[str, Any]:
        seen.append(ctx.result.text)
        return {"result_text": ctx.result.text.upper()}

    model = ScriptedChatModel(policy=lambda m: f"boss: {m[-1].content}" if isinstance(m[-1], ToolMessage) else delegate(m[-1].content, "help"))
    parent = Agent(id="boss", model=model, agents=choose, default_options={"delegation": {"on_delegation_complete": complete}})
    graph = parent.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t1"}}
    out = await graph.ainvoke({"messages": [HumanMessage("legal")]}, config, context={"request_context": {"tier": "enterprise"}})
    assert out["messages"][-1].content == "boss: LEGAL DONE" and seen == ["legal done"]
    assert sorted(model.bound_tool_names) == ["agent-legal", "agent-sales"]
    # the next run on the same thread, another context: another set
    out = await graph.ainvoke({"messages": [HumanMessage("support")]}, config, context={"request_context": {"tier": "free"}})
    assert out["messages"][-1].content == "boss: SUPPORT DONE" and model.bound_tool_names == ["agent-support"]
    # no context: the empty context's set, as the facade without request_context
    out = await graph.ainvoke({"messages": [HumanMessage("legal")]}, {"configurable": {"thread_id": "t2"}})
    assert "there is no tool named 'agent-legal'" in str(out["messages"][-2].content)


class Note(BaseModel):
    text: str


async def test_an_approval_inside_a_chosen_subagent_resumes_on_the_compiled_graph() -> None:
    done: list[str] = []
    note = create_tool(id="note", description="Take a note.", input_schema=Note, execute=lambda a: done.append(a.text) or "noted")
    writer = Agent(
        id="writer-agent", description="Writes.", tools=[note],
        model=ScriptedChatModel(policy=lambda m: f"wrote {m[-1].content}" if isinstance(m[-1], ToolMessage) else tool_call("note", {"text": "x"})),
    )
    parent = Agent(
        id="boss", agents=lambda ctx: {"writer": writer} if ctx.get("can_write") else {},
        model=ScriptedChatModel(policy=lambda m: m[-1].content if isinstance(m[-1], ToolMessage) else delegate("writer", "w")),
        default_options={"require_tool_approval": True},
    )
    graph = parent.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    context = {"request_context": {"can_write": True}}
    paused = await graph.ainvoke({"messages": [HumanMessage("go")]}, config, context=context)
    [item] = paused["__interrupt__"]
    assert item.value["tool_name"] == "note" and done == []
    out = await graph.ainvoke(Command(resume={item.id: {"approved": True}}), config, context=context)
    assert out["messages"][-1].content == "wrote noted" and done == ["x"]


async def test_each_distinct_set_is_compiled_once() -> None:
    parent, _ = boss()
    first = parent.for_request(RequestContext({"tier": "enterprise"}))
    again = parent.for_request(RequestContext({"tier": "enterprise"}))
    other = parent.for_request(RequestContext({"tier": "free"}))
    assert first is again and first is not other
    assert first.graph is again.graph  # compiled once
    assert set(first.agents) == {"legal", "sales"} and first.agents_factory is None
    for i in range(40):  # the cache is bounded
        parent.for_request(RequestContext({"tier": f"t{i}"}))
    assert len(parent._variants) <= 32


def test_a_callable_that_fails_or_returns_nonsense_names_the_agent() -> None:
    def broken(ctx: RequestContext) -> Any:
        raise KeyError("tenant")

    with pytest.raises(ValueError, match=r"Agent 'boss': its agents callable raised KeyError"):
        Agent(id="boss", model=ScriptedChatModel(), agents=broken)
    with pytest.raises(ValueError, match=r"Agent 'boss': its agents callable must return a dict"):
        Agent(id="boss", model=ScriptedChatModel(), agents=lambda ctx: ["not", "a", "dict"])
    picky = Agent(id="boss", model=ScriptedChatModel(), agents=lambda ctx: {} if not ctx.get("x") else 42)
    with pytest.raises(ValueError, match=r"Agent 'boss'"):
        picky.for_request(RequestContext({"x": 1}))
