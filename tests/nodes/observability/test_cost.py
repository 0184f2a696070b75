"""Pricing model calls (SPEC §33, `nodes/observability/cost.py`): LangChain's usage and
AG-UI's `TokenUsage` priced by `genai-prices`, cached input as cache reads and writes,
no price for a model the table lacks; and the `cost` limit of a budget."""

from __future__ import annotations

import genai_prices
import pytest
from langchain_core.messages import AIMessage

from supervisor_graph.nodes.observability import cost
from supervisor_graph.nodes.steps.budget import Budget, budget_notice, open_budget, over_budget, spend


def table(model: str, provider: str | None, **usage: int) -> float:
    return float(genai_prices.calc_price(genai_prices.Usage(**usage), model, provider_id=provider).total_price)  # type: ignore[arg-type]


def reply(model: str, provider: str | None = None, **usage: object) -> AIMessage:
    meta = {"model_name": model, **({"model_provider": provider} if provider else {})}
    return AIMessage("x", usage_metadata=usage or None, response_metadata=meta)  # type: ignore[arg-type]


def test_a_call_is_priced_by_the_model_that_answered_with_its_cache_reads_and_writes() -> None:
    usage = {
        "input_tokens": 10_000,
        "output_tokens": 500,
        "total_tokens": 10_500,
        "input_token_details": {"cache_read": 6_000, "cache_creation": 2_000},
    }
    message = reply("claude-sonnet-4-5-20250929", "anthropic", **usage)
    assert cost.model_key(message) == "anthropic:claude-sonnet-4-5-20250929"
    expected = table(
        "claude-sonnet-4-5-20250929", "anthropic", input_tokens=10_000, output_tokens=500, cache_read_tokens=6_000, cache_write_tokens=2_000
    )
    assert cost.call_cost(usage, message) == pytest.approx(expected)
    assert expected != pytest.approx(table("claude-sonnet-4-5", "anthropic", input_tokens=10_000, output_tokens=500))


def test_a_model_without_a_provider_is_found_by_its_name() -> None:
    usage = {"input_tokens": 1_000, "output_tokens": 100, "total_tokens": 1_100}
    assert cost.call_cost(usage, reply("gpt-4o-mini")) == pytest.approx(table("gpt-4o-mini", None, input_tokens=1_000, output_tokens=100))


def test_no_price_is_none_never_zero() -> None:
    usage = {"input_tokens": 5, "output_tokens": 5, "total_tokens": 10}
    assert cost.call_cost(usage, reply("scripted")) is None
    assert cost.call_cost(usage, reply("gpt-4o", "a-provider-nobody-prices")) is None
    assert cost.call_cost(usage) is None  # no message: no model named
    assert cost.call_cost(None) == 0.0  # no call reported, nothing spent
    assert cost.sum_costs([0.5, None, 1.0]) is None and cost.sum_costs([]) == 0.0


def test_agui_token_usage_is_priced_as_json_and_as_models() -> None:
    from ag_ui.core import TokenUsage

    entries = [
        TokenUsage(provider="openai", model="gpt-4o", input_tokens=1_000, output_tokens=10, cached_input_tokens=400),
        TokenUsage(provider="anthropic", model="claude-haiku-4-5", input_tokens=50, output_tokens=5, cache_write_input_tokens=20),
    ]
    expected = table("gpt-4o", "openai", input_tokens=1_000, output_tokens=10, cache_read_tokens=400) + table(
        "claude-haiku-4-5", "anthropic", input_tokens=50, output_tokens=5, cache_write_tokens=20
    )
    assert cost.token_usage_cost(entries) == pytest.approx(expected)
    assert cost.token_usage_cost([e.model_dump(mode="json", by_alias=True) for e in entries]) == pytest.approx(expected)
    assert cost.token_usage_cost(entries + [TokenUsage(model="scripted", input_tokens=1)]) is None
    assert cost.token_usage_cost([]) == 0.0


def test_tokens_no_model_accounts_for_make_an_agents_cost_unknown() -> None:
    by_model = {"boss": {"openai:gpt-4o": {"input_tokens": 100, "output_tokens": 10}}}
    runs = cost.RunCosts({"boss": {"input_tokens": 100, "output_tokens": 10}, "boss/remote": {"input_tokens": 7, "output_tokens": 1}}, by_model)
    assert runs.of("boss") == pytest.approx(table("gpt-4o", "openai", input_tokens=100, output_tokens=10))
    assert runs.of("boss/remote") is None and runs.total() is None


def test_a_budget_without_a_cost_limit_prices_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cost, "price", lambda *a: pytest.fail("priced"))
    scope = open_budget(Budget(tokens=1_000), None)
    assert scope is not None and not scope.priced
    spend(scope, {"input_tokens": 10, "output_tokens": 5}, reply("gpt-4o", "openai"))
    assert scope.meters[0].cost == 0.0 and scope.meters[0].usage["total_tokens"] == 15


def test_a_cost_limit_counts_each_priced_call_and_stops_at_100_percent() -> None:
    usage = {"input_tokens": 100_000, "output_tokens": 0, "total_tokens": 100_000}
    one = table("gpt-4o", "openai", input_tokens=100_000)
    scope = open_budget(Budget.model_validate({"cost": 2 * one}), Budget(cost=10.0))
    assert scope is not None and scope.priced
    spend(scope, usage, reply("gpt-4o", "openai", **usage))
    spend(scope, usage, reply("unpriced-model-49", **usage))  # counts nothing: it has no price
    assert [m.cost for m in scope.meters] == [pytest.approx(one)] * 2 and not over_budget(scope)
    spend(scope, usage, reply("gpt-4o", "openai", **usage))
    assert over_budget(scope) and scope.exceeded == "cost"
    assert f"of the cost budget (${2 * one:,.4f} of ${2 * one:g})" in budget_notice(scope, "")
    with pytest.raises(ValueError):
        Budget(cost=-1)
