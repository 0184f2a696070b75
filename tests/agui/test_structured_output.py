"""Structured output over AG-UI (SPEC §28): the object in `RUN_FINISHED.result`, a
per-run schema from `forwardedProps.output_schema`, and an answer that never validates
as `RUN_ERROR`, over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from pydantic import BaseModel

from supervisor_graph import Agent, Memory
from supervisor_graph.agui import AGUIAgent, add_agui_endpoint
from supervisor_graph.testing import ScriptedChatModel, tool_call
from tests.agui.conftest import ThreadServer, make_input
from tests.agui.test_endpoint import post


class Verdict(BaseModel):
    verdict: str
    confidence: float


COUNT = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"], "title": "Count"}


def policy(messages: list[Any]) -> Any:
    asked = str(messages[-1].content)
    if "count" in asked:
        return '{"count": 7}'
    if "broken" in asked or "Answer again" in asked:
        return "not json at all"
    return tool_call("final_answer", {"verdict": "yes", "confidence": 0.9})


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    agent = Agent(id="judge", model=ScriptedChatModel(policy=policy), memory=Memory(":memory:"), output_schema=Verdict)
    app = FastAPI()
    add_agui_endpoint(app, AGUIAgent(agent, resource_id="web-user"), "/agent")
    with ThreadServer(app) as running:
        yield f"{running.url}/agent"


def body(thread: str, text: str, **props: Any) -> dict[str, Any]:
    run = make_input(thread, text)
    run.forwarded_props = props
    return run.model_dump(mode="json", by_alias=True, exclude_none=True)


async def test_run_finished_carries_the_object(url: str) -> None:
    events, _, _ = await post(url, body("so-1", "judge it"))
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["result"] == {"verdict": "yes", "confidence": 0.9}


async def test_a_run_may_bring_its_own_schema(url: str) -> None:
    events, _, _ = await post(url, body("so-2", "count them", output_schema=COUNT))
    assert events[-1]["result"] == {"count": 7}
    events, _, _ = await post(url, body("so-3", "count them", output_schema="Count"))
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "INVALID_OUTPUT_SCHEMA"
    assert "not str" in events[-1]["message"]


async def test_an_answer_that_never_validates_is_a_run_error(url: str) -> None:
    events, _, _ = await post(url, body("so-4", "broken answer", output_schema=COUNT))
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "STRUCTURED_OUTPUT_INVALID"
    assert "Count" in events[-1]["message"]
