"""What an agent's own model calls cost, in USD, on its OpenTelemetry span (SPEC §33):
`supervisor_graph.usage.cost_usd` (no GenAI convention names a cost), left out when a
model has no price."""

from __future__ import annotations

import genai_prices
import pytest

from supervisor_graph.nodes.observability.otel import COST_ATTRIBUTE
from tests.nodes.observability.test_otel import by_name, run_worker


def test_an_agent_span_carries_what_its_model_calls_cost() -> None:
    spans = by_name(run_worker("cost")["spans"])
    priced, local = spans["invoke_agent Priced"]["attributes"], spans["invoke_agent Local"]["attributes"]
    # two calls of the scripted 10 input + 5 output tokens
    expected = genai_prices.calc_price(genai_prices.Usage(input_tokens=20, output_tokens=10), "gpt-4o", provider_id="openai")
    assert COST_ATTRIBUTE == "supervisor_graph.usage.cost_usd"
    assert priced[COST_ATTRIBUTE] == pytest.approx(float(expected.total_price))
    assert COST_ATTRIBUTE not in local and local["gen_ai.usage.input_tokens"] == 10  # no price: no cost, tokens still
