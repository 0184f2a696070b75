"""The playground sends while a run is going (SPEC §29): the second message goes with
`forwardedProps.on_busy = "interrupt"`, the running run stops at its next step and the
new message runs with its context, and the transcript marks the stopped run (above the
message that stopped it); in headless Chromium (same set-up as test_playground.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.agui import create_app
from supervisor_graph.testing import ScriptedChatModel, tool_call
from tests.agui.browser import ARTIFACTS, offline_page
from tests.agui.conftest import ThreadServer

STEPS: list[str] = []
LONG = 20  # steps of the long job: 12 s, far more than it takes to stop it


class Step(BaseModel):
    n: int


def _work(args: Step) -> str:
    STEPS.append(f"step {args.n}")
    time.sleep(0.6)
    return f"did step {args.n}"


def _policy(messages: list[Any]) -> Any:
    asked = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
    if asked.startswith("long job"):
        done = sum(1 for m in messages if isinstance(m, ToolMessage))
        return tool_call("work", {"n": done + 1}) if done < LONG else "long job done"
    return f"new answer to: {asked}"


@pytest.fixture(scope="module")
def served_busy() -> Iterator[str]:
    work = create_tool(id="work", description="One step of work.", input_schema=Step, execute=_work)
    agent = Agent(id="worker", model=ScriptedChatModel(policy=_policy), tools=[work], memory=Memory(":memory:"))
    with ThreadServer(create_app(agent, resource_id="web-user")) as running:
        yield running.url


async def test_a_message_sent_while_a_run_goes_interrupts_it(served_busy: str) -> None:
    from playwright.async_api import expect

    async with offline_page() as page:
        await page.goto(f"{served_busy}/")
        await page.fill("#prompt", "long job please")
        await page.press("#prompt", "Enter")
        # the first run is at work: its first step's result is on the page
        await expect(page.locator(".msg.tool").first).to_have_text("work → did step 1", timeout=30_000)
        await page.fill("#prompt", "stop, tell me something else")
        await page.press("#prompt", "Enter")  # sendable while running: on_busy=interrupt
        marker = page.locator('[data-testid="run-interrupted"]')
        await expect(marker).to_have_count(1, timeout=30_000)
        await expect(page.locator(".msg.assistant").last).to_have_text(
            "new answer to: stop, tell me something else", timeout=30_000
        )
        await expect(page.locator("#status")).to_have_text("done", timeout=30_000)
        # the stopped run says so, once its stream has ended with the cancelled outcome
        await expect(marker).to_have_attribute("data-state", "interrupted", timeout=30_000)
        await expect(marker).to_contain_text("Run interrupted by your next message")
        after = await marker.evaluate("m => m.nextElementSibling.textContent")
        assert after == "stop, tell me something else"  # it sits above the message that stopped it
        await page.screenshot(path=str(ARTIFACTS / "double-texting.png"))
    assert len(STEPS) < LONG  # the long job stopped at its next step instead of running to the end
