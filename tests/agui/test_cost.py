"""Cost in money over AG-UI (SPEC §33): `RUN_FINISHED.metadata["supervisor_graph"]`
carries the run's `cost` in USD and `cost_by_agent`, and `SUBAGENT_FINISHED` the
delegation's, priced from the usage the bridge reports (ag-ui-validate passes)."""

from __future__ import annotations

import genai_prices
import pytest

from tests.agui.conftest import AGUIAgent, boss, collect, delegate, make_input, of_type, researcher, solo, wire


def table(model: str, calls: int) -> float:
    """A scripted model's calls (10 input, 5 output tokens each) as genai-prices prices them."""
    usage = genai_prices.Usage(input_tokens=10 * calls, output_tokens=5 * calls)
    return float(genai_prices.calc_price(usage, model).total_price)


async def test_the_run_and_each_subagent_report_what_they_cost() -> None:
    team = boss({"research": researcher("gpt-4o-mini")}, delegate("research", "owls"), model_name="gpt-4o")
    events = await collect(AGUIAgent(team, resource_id="u1", subagent_visibility="attributed"), make_input())
    ours = wire(events)[-1]["metadata"]["supervisor_graph"]
    assert ours["cost_by_agent"] == {"boss": pytest.approx(table("gpt-4o", 2)), "boss/research-agent": pytest.approx(table("gpt-4o-mini", 1))}
    assert ours["cost"] == pytest.approx(table("gpt-4o", 2) + table("gpt-4o-mini", 1))
    [finished] = of_type(events, "SUBAGENT_FINISHED")
    assert finished["metadata"]["supervisor_graph"]["cost"] == pytest.approx(table("gpt-4o-mini", 1))


async def test_a_model_without_a_price_reports_a_null_cost() -> None:
    events = await collect(AGUIAgent(solo("hi"), resource_id="u1"), make_input())  # the "scripted" model
    ours = wire(events)[-1]["metadata"]["supervisor_graph"]
    assert ours["cost"] is None and ours["cost_by_agent"] == {"solo": None}
