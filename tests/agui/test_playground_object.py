"""The playground shows a typed answer (SPEC §28: `RUN_FINISHED.result`) as formatted
JSON, in headless Chromium (same browser set-up as test_playground.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from supervisor_graph import Agent, Memory
from supervisor_graph.agui import create_app
from supervisor_graph.testing import ScriptedChatModel, tool_call
from tests.agui.browser import ARTIFACTS, offline_page
from tests.agui.conftest import ThreadServer


class Forecast(BaseModel):
    city: str
    days: list[str]


@pytest.fixture(scope="module")
def served_typed() -> Iterator[str]:
    model = ScriptedChatModel(policy=lambda m: tool_call("final_answer", {"city": "Oslo", "days": ["snow", "sun"]}))
    agent = Agent(id="forecaster", model=model, memory=Memory(":memory:"), output_schema=Forecast)
    with ThreadServer(create_app(agent, resource_id="web-user")) as running:
        yield running.url


async def test_the_playground_shows_the_object_as_formatted_json(served_typed: str) -> None:
    from playwright.async_api import expect

    async with offline_page() as page:
        await page.goto(f"{served_typed}/")
        await page.fill("#prompt", "forecast for Oslo")
        await page.press("#prompt", "Enter")
        shown = page.get_by_test_id("answer-object")
        await expect(shown).to_be_visible(timeout=20_000)
        text = await shown.text_content()
        assert text is not None and json.loads(text) == {"city": "Oslo", "days": ["snow", "sun"]}
        assert "\n  " in text  # indented, not one line
        await expect(page.locator("#status")).to_have_text("done")
        await page.screenshot(path=str(ARTIFACTS / "typed-answer.png"))
