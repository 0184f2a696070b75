"""What a run cost over MCP (SPEC §33): each tool result's `_meta` holds the run's `usage`
and its `cost` in USD (None when a model has no price)."""

from __future__ import annotations

import genai_prices
import pytest

from supervisor_graph import Agent, Memory
from supervisor_graph.cli.workers import build_app
from supervisor_graph.testing import ScriptedChatModel
from tests.mcp.serving import Served, call_tool, serve_settings


async def test_a_result_carries_the_runs_usage_and_cost() -> None:
    model = ScriptedChatModel(model_name="gpt-4o", provider="openai", policy=lambda m: "hi")
    with Served(build_app(Agent(id="priced", model=model, memory=Memory()), serve_settings(None))) as url:
        result = await call_tool(url, "ask_priced", {"prompt": "hello"}, None)
    assert not result.isError and result.content[0].text == "hi"
    expected = genai_prices.calc_price(genai_prices.Usage(input_tokens=10, output_tokens=5), "gpt-4o", provider_id="openai")
    assert result.meta == {"usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}, "cost": pytest.approx(float(expected.total_price))}


async def test_an_unpriced_model_gives_a_null_cost() -> None:
    agent = Agent(id="plain", model=ScriptedChatModel(policy=lambda m: "hi"), memory=Memory())
    with Served(build_app(agent, serve_settings(None))) as url:
        result = await call_tool(url, "ask_plain", {"prompt": "hello"}, None)
    assert result.meta is not None and result.meta["cost"] is None and result.meta["usage"]["total_tokens"] == 15
