"""Prompt caching and cost in money on a compiled graph driven by the app (SPEC §33,
docs/capabilities.md): no facade, the same node code."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from supervisor_graph import Agent, create_tool
from supervisor_graph.nodes.steps.prompt_cache import BREAKPOINT
from supervisor_graph.testing import ScriptedChatModel, tool_call
from supervisor_graph.testing.anthropic_server import FakeAnthropic
from tests.nodes.steps.test_prompt_cache import INSTRUCTIONS, claude, team
from tests.supervisor_graph.test_cost import priced


@pytest.fixture
def anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(claude) as fake:
        for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_URL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake


async def test_the_compiled_graph_asks_anthropic_to_cache_the_prompt(anthropic: FakeAnthropic) -> None:
    graph = team("anthropic/claude-sonnet-4-5").compile()
    out = await graph.ainvoke({"messages": [HumanMessage("tides")]})
    assert str(out["messages"][-1].content).startswith("final answer from")
    first, research, second = anthropic.requests
    assert first["system"] == [{"type": "text", "text": INSTRUCTIONS, "cache_control": BREAKPOINT}]
    assert all(body["cache_control"] == BREAKPOINT for body in (first, research, second))
    assert second["messages"][: len(first["messages"])] == first["messages"]  # the same prefix: read from the cache


class _Query(BaseModel):
    q: str = ""


async def test_the_compiled_graph_takes_a_cost_budget_from_its_context() -> None:
    lookup = create_tool(id="lookup", description="Looks up.", input_schema=_Query, execute=lambda q: "more")
    model = ScriptedChatModel(
        model_name="gpt-4o", provider="openai", input_tokens=100_000, output_tokens=1_000, policy=lambda m: tool_call("lookup")
    )
    graph = Agent(id="looper", model=model, tools=[lookup]).compile()
    one_call = priced("gpt-4o", "openai", 100_000, 1_000)
    out = await graph.ainvoke(
        {"messages": [HumanMessage("go")]}, {"recursion_limit": 50}, context={"budget": {"cost": 1.5 * one_call}, "max_steps": 6}
    )
    assert out["finish_reason"] == "budget" and len(model.calls) == 2  # priced as it ran: the second call passed it
