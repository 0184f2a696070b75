"""Cost in money (SPEC §33, issue 49 item 5): `result.cost` in USD and a `cost` in every
`usage_by_agent` entry, priced by pydantic's `genai-prices` table by the model that
answered each call (cached input as the provider prices it); an unknown model gives
None with one warning; budgets take `{"cost": USD}`, judges' calls included; nothing is
priced until a cost is read."""

from __future__ import annotations

import logging
from typing import Any

import genai_prices
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.guardrails import prompt_injection
from supervisor_graph.nodes.observability import cost as cost_module
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


class Query(BaseModel):
    q: str = ""


class Amount(BaseModel):
    amount: int


def priced(model: str, provider: str, input_tokens: int, output_tokens: int, cache_read: int = 0) -> float:
    """genai-prices' own price of one call."""
    usage = genai_prices.Usage(input_tokens=input_tokens, output_tokens=output_tokens, cache_read_tokens=cache_read or None)
    return float(genai_prices.calc_price(usage, model, provider_id=provider).total_price)


def answer(text: str, input_tokens: int, output_tokens: int, cache_read: int = 0) -> AIMessage:
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": input_tokens + output_tokens}
    if cache_read:
        usage["input_token_details"] = {"cache_read": cache_read}
    return AIMessage(text, usage_metadata=usage)  # type: ignore[arg-type]


def team(memory: Memory | None = None) -> Agent:
    """A supervisor on gpt-4o whose researcher runs on Claude, part of its input cached."""
    researcher = Agent(
        id="research-agent",
        description="Finds facts.",
        model=ScriptedChatModel(
            model_name="claude-sonnet-4-5",
            provider="anthropic",
            responses=[answer("owls hunt at night", 2_000, 300, cache_read=1_500)],
        ),
    )
    boss = ScriptedChatModel(
        model_name="gpt-4o",
        provider="openai",
        responses=[
            AIMessage("", tool_calls=[delegate("research_agent", "owls")], usage_metadata={"input_tokens": 1_000, "output_tokens": 50, "total_tokens": 1_050}),
            answer("Owls hunt at night.", 1_200, 80),
        ],
    )
    return Agent(id="boss", model=boss, agents={"research_agent": researcher}, memory=memory)


async def test_the_run_cost_is_the_sum_of_each_agents_priced_by_its_model() -> None:
    result = await team().generate("owls?")
    assert result.text == "Owls hunt at night."
    boss = priced("gpt-4o", "openai", 1_000, 50) + priced("gpt-4o", "openai", 1_200, 80)
    researcher = priced("claude-sonnet-4-5", "anthropic", 2_000, 300, cache_read=1_500)
    assert result.usage_by_agent["boss"].cost == pytest.approx(boss)
    assert result.usage_by_agent["boss/research-agent"].cost == pytest.approx(researcher)
    assert result.cost == sum(u.cost for u in result.usage_by_agent.values()) == result.usage.cost  # type: ignore[misc]
    assert result.cost == pytest.approx(boss + researcher)
    # the cached tokens are priced as cache reads: cheaper than the same input uncached
    assert researcher < priced("claude-sonnet-4-5", "anthropic", 2_000, 300)
    assert result.delegations[0].usage.cost == pytest.approx(researcher)


async def test_nothing_is_priced_until_a_cost_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = cost_module.price
    monkeypatch.setattr(cost_module, "price", lambda key, counts: calls.append(key) or real(key, counts))
    result = await team().generate("owls?")
    assert calls == []
    assert "cost" not in result.usage.model_dump()  # dumps and stream payloads keep their shape
    assert result.cost is not None and sorted(calls) == ["anthropic:claude-sonnet-4-5", "openai:gpt-4o"]
    assert result.cost == result.cost and len(calls) == 2  # priced once


async def test_the_cost_survives_a_pause_and_a_resume() -> None:
    ledger: list[int] = []

    def pay(args: Any) -> str:
        ledger.append(1)
        return "paid"

    payer = Agent(
        id="payer-agent",
        description="Pays.",
        tools=[create_tool(id="pay", description="Pays.", input_schema=Amount, execute=pay, require_approval=True)],
        model=ScriptedChatModel(model_name="gpt-4o-mini", provider="openai", responses=[tool_call("pay", {"amount": 5}), "paid it"]),
    )
    boss = Agent(
        id="boss",
        model=ScriptedChatModel(model_name="gpt-4o", provider="openai", responses=[delegate("payer", "pay 5"), "done"]),
        agents={"payer": payer},
        memory=Memory(":memory:"),
    )
    paused = await boss.generate("pay", memory={"thread": "t"})
    assert paused.finish_reason == "suspended"
    done = await boss.approve_tool_call(run_id=paused.run_id, memory={"thread": "t"})
    assert ledger == [1] and done.text == "done"
    payer_cost = 2 * priced("gpt-4o-mini", "openai", 10, 5)  # the scripted model's 10 + 5 tokens a call
    assert done.usage_by_agent["boss/payer-agent"].cost == pytest.approx(payer_cost)
    assert done.cost == pytest.approx(2 * priced("gpt-4o", "openai", 10, 5) + payer_cost)


async def test_an_unknown_model_costs_none_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    agent = Agent(id="solo", model=ScriptedChatModel(model_name="no-such-model-49", policy=lambda m: "hi"))
    with caplog.at_level(logging.WARNING, logger="supervisor_graph"):
        first, second = await agent.generate("a"), await agent.generate("b")
        assert first.cost is None and second.cost is None and first.usage_by_agent["solo"].cost is None
    warned = [r for r in caplog.records if "no-such-model-49" in r.getMessage()]
    assert len(warned) == 1 and "no price" in warned[0].getMessage()


async def test_one_unknown_agent_makes_the_total_unknown_not_smaller() -> None:
    sub = Agent(id="local-agent", description="Local.", model=ScriptedChatModel(model_name="my-local-llm", responses=["ok"]))
    boss = Agent(
        id="boss",
        model=ScriptedChatModel(model_name="gpt-4o", provider="openai", responses=[delegate("local", "go"), "done"]),
        agents={"local": sub},
    )
    result = await boss.generate("go")
    assert result.usage_by_agent["boss"].cost == pytest.approx(2 * priced("gpt-4o", "openai", 10, 5))
    assert result.usage_by_agent["boss/local-agent"].cost is None and result.cost is None


def looping(model_name: str, provider: str | None = None) -> tuple[Agent, ScriptedChatModel]:
    lookup = create_tool(id="lookup", description="Looks up.", input_schema=Query, execute=lambda q: "more")
    model = ScriptedChatModel(
        model_name=model_name, provider=provider, input_tokens=100_000, output_tokens=1_000, policy=lambda m: tool_call("lookup")
    )
    return Agent(id="looper", model=model, tools=[lookup]), model


async def test_a_cost_budget_stops_the_agent_before_its_next_model_call() -> None:
    agent, model = looping("gpt-4o", "openai")
    one_call = priced("gpt-4o", "openai", 100_000, 1_000)  # about $0.26
    result = await agent.generate("go", budget={"cost": 1.5 * one_call}, max_steps=6)
    assert result.finish_reason == "budget" and len(model.calls) == 2  # the second call passed the limit
    assert result.cost == pytest.approx(2 * one_call)


async def test_a_cost_budget_counts_nothing_for_an_unknown_model() -> None:
    agent, model = looping("unpriced-model-49")
    result = await agent.generate("go", budget={"cost": 0.000001}, max_steps=6)
    assert result.finish_reason == "max_steps" and result.cost is None  # it could not be counted


async def test_a_judges_calls_are_priced_and_count_toward_a_cost_budget() -> None:
    judge = ScriptedChatModel(
        model_name="gpt-4o",
        provider="openai",
        input_tokens=200_000,
        output_tokens=10,
        policy=lambda m: tool_call("GuardJudgement", {"flagged": False, "reason": "fine"}),
    )
    fetch = create_tool(id="fetch", description="Fetches.", input_schema=Query, execute=lambda q: "page text")
    model = ScriptedChatModel(model_name="gpt-4o-mini", provider="openai", policy=lambda m: "done" if isinstance(m[-1], ToolMessage) else tool_call("fetch"))
    agent = Agent(id="reader", model=model, tools=[fetch], guardrails=[prompt_injection(model=judge)])
    one_judgement = priced("gpt-4o", "openai", 200_000, 10)
    result = await agent.generate("read it")
    assert result.usage_by_agent["reader/guard:prompt_injection"].cost == pytest.approx(one_judgement)
    assert result.cost == pytest.approx(one_judgement + 2 * priced("gpt-4o-mini", "openai", 10, 5))
    capped = await agent.generate("read it", budget={"cost": one_judgement / 2})
    assert capped.finish_reason == "budget"  # the judge alone used the budget up


async def test_generate_until_idle_sums_the_cost_of_its_runs() -> None:
    def boss_policy(messages: list[Any]) -> Any:
        last = messages[-1]
        if str(last.content).startswith("[Background task"):
            return "reported"
        return "started" if isinstance(last, ToolMessage) else delegate("research", "dig")

    research = Agent(id="research-agent", description="Digs.", model=ScriptedChatModel(model_name="gpt-4o-mini", provider="openai", policy=lambda m: "dug"))
    boss = Agent(
        id="boss",
        model=ScriptedChatModel(model_name="gpt-4o", provider="openai", policy=boss_policy),
        agents={"research": research},
        memory=Memory(":memory:"),
        background_tasks={"tools": {"research": {}}},
    )
    result = await boss.generate_until_idle("go", memory={"thread": "idle"})
    assert result.text == "reported"
    # three calls of the boss over two runs (the task's own calls are not the runs' usage)
    assert result.usage_by_agent["boss"].cost == pytest.approx(3 * priced("gpt-4o", "openai", 10, 5))
    assert result.cost == pytest.approx(3 * priced("gpt-4o", "openai", 10, 5))
