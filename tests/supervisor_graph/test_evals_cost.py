"""Cost in money in evaluation reports (SPEC §31, §33): each run's `cost` in USD and the
total, in the JSON report, the text and the JUnit output; None (printed "cost unknown")
when a model has no price. Against the declared agent and the compiled graph."""

from __future__ import annotations

import genai_prices
import pytest
from langgraph.checkpoint.memory import InMemorySaver

from supervisor_graph import Agent, evals
from supervisor_graph.testing import ScriptedChatModel, delegate


def team(model_name: str = "gpt-4o") -> Agent:
    writer = Agent(id="writer", description="Writes.", model=ScriptedChatModel(model_name="gpt-4o-mini", provider="openai", policy=lambda m: "a poem"))
    boss = ScriptedChatModel(model_name=model_name, policy=lambda m: "done" if m[-1].type == "tool" else delegate("writer", "write"))
    return Agent(id="boss", model=boss, agents={"writer": writer})


def per_run() -> float:
    """Two gpt-4o calls and one gpt-4o-mini call of the scripted 10 + 5 tokens."""

    def price(model: str, calls: int) -> float:
        return float(genai_prices.calc_price(genai_prices.Usage(input_tokens=10 * calls, output_tokens=5 * calls), model).total_price)

    return price("gpt-4o", 2) + price("gpt-4o-mini", 1)


CASES = [{"id": "one", "input": "a poem"}, {"id": "two", "input": "another"}]


def test_each_case_and_the_total_say_what_they_cost() -> None:
    report = evals.run_sync(team(), CASES)
    assert report.ok, report.text()
    assert [case.runs[0].cost for case in report.cases] == [pytest.approx(per_run())] * 2
    data = report.to_dict()
    assert data["totals"]["cost"] == pytest.approx(2 * per_run())
    assert data["cases"][0]["runs"][0]["cost"] == pytest.approx(per_run())
    assert f"${per_run():.4f}" in report.text() and f"${2 * per_run():.4f}" in report.totals_line()
    assert f"cost={report.cases[0].runs[0].cost}" in report.to_junit()


def test_a_compiled_graph_is_priced_from_its_messages() -> None:
    report = evals.run_sync(team().compile(checkpointer=InMemorySaver()), CASES[:1])
    assert report.cases[0].runs[0].cost == pytest.approx(per_run())


def test_a_model_without_a_price_makes_the_cost_unknown() -> None:
    report = evals.run_sync(team("unpriced-model-49"), CASES[:1])
    assert report.cases[0].runs[0].cost is None and report.totals()["cost"] is None
    assert "cost unknown" in report.totals_line()
