"""`Agent(agents=callable)`: subagents chosen per call from the request context (SPEC §21)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from supervisor_graph import Agent, Memory, RequestContext
from supervisor_graph.testing import ScriptedChatModel, delegate

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


def test_compile_without_context_uses_the_empty_contexts_set() -> None:
    parent, _ = boss()
    nodes = set(parent.compile().get_graph().nodes)
    assert "support" in nodes and "legal" not in nodes  # what Studio shows


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
