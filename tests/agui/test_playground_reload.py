"""A pause survives a page reload (SPEC §19): the playground's thread history carries the
thread's pending approvals and suspends, exactly as the paused run's `RUN_FINISHED`
did, and the reloaded page shows their cards and answers them (headless Chromium, same
set-up as test_playground.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import Agent, Memory
from supervisor_graph.agui import create_app
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call
from tests.agui.browser import ARTIFACTS, offline_page
from tests.agui.conftest import ThreadServer, ask_tool, payer
from tests.agui.test_endpoint import body, post

AGENT = "/_playground/agent"


def _clerk(messages: list[Any]) -> Any:
    if isinstance(messages[-1], ToolMessage):
        return f"done: {messages[-1].content}"
    ask = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
    if ask.startswith("ask"):
        return tool_call("ask_account", {"question": "Which account?"})
    return delegate("payer", ask)  # its `pay` tool waits for approval


@pytest.fixture(scope="module")
def served_clerk() -> Iterator[str]:
    clerk = Agent(
        id="clerk",
        model=ScriptedChatModel(policy=_clerk, record_calls=False),
        agents={"payer": payer([])},
        tools=[ask_tool([])],
        memory=Memory(":memory:"),
    )
    with ThreadServer(create_app(clerk, resource_id="web-user")) as running:
        yield running.url


@pytest.mark.parametrize(("thread", "prompt", "answer", "said"), [
    ("t-reload-pay", "pay it", {"approved": True}, "done: payer: paid 5"),
    ("t-reload-ask", "ask me", {"account": "ACME-2"}, "done: using ACME-2"),
])
async def test_the_thread_history_has_the_pending_interrupts(served_clerk: str, thread: str, prompt: str, answer: Any, said: str) -> None:
    paused, _, _ = await post(served_clerk + AGENT, body(thread, prompt))
    live = paused[-1]["outcome"]["interrupts"]
    async with httpx.AsyncClient() as client:
        history = (await client.get(f"{served_clerk}{AGENT}/threads/{thread}")).json()
    assert history["interrupts"] == live and len(live) == 1  # what the live event carried, subagentRunId included
    caller = ["clerk", "payer-agent"] if thread == "t-reload-pay" else ["clerk"]
    assert history["callers"] == {live[0]["id"]: caller}  # who made the call, for the reloaded card
    resumed, _, _ = await post(served_clerk + AGENT, body(thread, resume=[{"interrupt_id": history["interrupts"][0]["id"], "status": "resolved", "payload": answer}]))
    assert resumed[-1]["outcome"] == {"type": "success"}
    assert said in "".join(e["delta"] for e in resumed if e["type"] == "TEXT_MESSAGE_CONTENT")
    async with httpx.AsyncClient() as client:
        assert (await client.get(f"{served_clerk}{AGENT}/threads/{thread}")).json()["interrupts"] == []


async def test_a_reloaded_page_answers_a_pending_approval(served_clerk: str) -> None:
    from playwright.async_api import expect

    async with offline_page() as page:
        await page.goto(f"{served_clerk}/")
        await page.fill("#prompt", "pay the bill")
        await page.press("#prompt", "Enter")
        await expect(page.locator(".approval")).to_contain_text("pay waits for approval", timeout=20_000)
        thread = await page.locator('#threads button[aria-current="true"]').inner_text()

        await page.reload()
        await expect(page.locator(".approval")).to_have_count(0)
        await page.locator("#threads button", has_text=thread).click()
        card = page.locator(".approval")
        await expect(card).to_contain_text("pay waits for approval", timeout=10_000)
        await expect(page.locator("#status")).to_have_text("waiting for you")
        await card.get_by_role("button", name="Arguments").click()
        await expect(card.locator('.args dd[data-arg="amount"]')).to_have_text("5")
        await page.screenshot(path=str(ARTIFACTS / "approval-after-reload.png"))
        await card.get_by_role("button", name="Approve").click()
        await expect(page.locator(".msg.assistant").last).to_have_text("done: payer: paid 5", timeout=20_000)
        await expect(page.locator("#status")).to_have_text("done")
        await expect(page.locator(".approval")).to_have_count(0)
