"""A LangGraph-server subagent's run is priced by the models its answers name (SPEC §33):
its messages come back as JSON, each AI message with its usage and response metadata."""

from __future__ import annotations

import genai_prices
import pytest

from supervisor_graph.nodes.delegation.result import DelegationRecord
from supervisor_graph.nodes.remote.langgraph import _outcome


def ai(model: str | None, input_tokens: int, output_tokens: int) -> dict[str, object]:
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": input_tokens + output_tokens}
    return {"type": "ai", "content": "x", "usage_metadata": usage, "response_metadata": {"model_name": model} if model else {}}


def test_the_remote_answers_are_priced_by_their_models() -> None:
    record = DelegationRecord(tool_call_id="c1", key="far", agent_id="far-agent", prompt="hi")
    _outcome({"messages": [{"type": "human", "content": "hi"}, ai("gpt-4o", 1_000, 20), ai("gpt-4o", 500, 10)]}, record)
    assert record.usage_by_model == {"far-agent": {":gpt-4o": {"input_tokens": 1_500, "output_tokens": 30}}}
    expected = genai_prices.calc_price(genai_prices.Usage(input_tokens=1_500, output_tokens=30), "gpt-4o").total_price
    assert record.to_result().usage.cost == pytest.approx(float(expected))


def test_a_remote_answer_that_names_no_model_has_no_price() -> None:
    record = DelegationRecord(tool_call_id="c1", key="far", agent_id="far-agent", prompt="hi")
    _outcome({"messages": [ai(None, 10, 5)]}, record)
    assert record.usage["total_tokens"] == 15 and record.to_result().usage.cost is None
