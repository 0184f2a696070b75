"""The playground's approval card (SPEC §29) in headless Chromium: Edit opens a form built
from the tool's input schema, prefilled with the call's arguments (inputs for strings,
numbers, booleans and enums, JSON for the rest), checked before it is sent; Reject takes a
reason that the next model call sees as the call's result."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.agui import create_app
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call
from tests.agui.browser import ARTIFACTS, offline_page
from tests.agui.conftest import ThreadServer

RAN: list[dict[str, Any]] = []


class Invoice(BaseModel):
    amount: int
    currency: Literal["EUR", "USD"] = "EUR"
    urgent: bool = False
    memo: str = ""
    tags: list[str] = []


def _pay(args: Invoice) -> str:
    RAN.append(args.model_dump())
    return f"paid {args.amount} {args.currency}"


PAYER_MODEL = ScriptedChatModel(
    policy=lambda m: f"payer saw: {m[-1].content}" if isinstance(m[-1], ToolMessage)
    else tool_call("pay", {"amount": 1200, "memo": "March rent"})
)


def _clerk(messages: list[Any]) -> Any:
    if isinstance(messages[-1], ToolMessage):
        return f"done: {messages[-1].content}"
    return delegate("payer", next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage)))


@pytest.fixture(scope="module")
def served_decisions() -> Iterator[str]:
    pay = create_tool(
        id="pay", description="Pay an invoice.", input_schema=Invoice, execute=_pay,
        require_approval={"allowed_decisions": ["approve", "edit", "reject"], "description": "Check the amount before paying."},
    )
    payer = Agent(id="payer-agent", description="Pays invoices.", model=PAYER_MODEL, tools=[pay])
    clerk = Agent(
        id="clerk", model=ScriptedChatModel(policy=_clerk, record_calls=False), agents={"payer": payer}, memory=Memory(":memory:")
    )
    with ThreadServer(create_app(clerk, resource_id="web-user")) as running:
        yield running.url


async def test_edit_then_run_and_reject_with_a_reason(served_decisions: str) -> None:
    from playwright.async_api import expect

    RAN.clear()
    async with offline_page() as page:
        await page.goto(f"{served_decisions}/")
        # 1. edit: the form is built from the schema and prefilled; a bad value is caught first
        await page.fill("#prompt", "pay the rent")
        await page.press("#prompt", "Enter")
        card = page.locator(".approval")
        await expect(card).to_contain_text("pay waits for approval", timeout=20_000)
        await expect(card.locator(".why")).to_have_text("Check the amount before paying.")
        await expect(card.get_by_role("button")).to_have_text(["Approve", "Edit", "Reject", "Arguments"])
        await card.get_by_role("button", name="Edit").click()
        form = card.locator("form.edit")
        await expect(form.locator('input[name="amount"]')).to_have_value("1200")
        await expect(form.locator('input[name="memo"]')).to_have_value("March rent")
        await expect(form.locator('select[name="currency"]')).to_have_value('"EUR"')
        await expect(form.locator('input[name="urgent"]')).not_to_be_checked()
        await expect(form.locator('textarea[name="tags"]')).to_have_value("[]")
        await form.locator('input[name="amount"]').fill("120.5")
        await form.locator('textarea[name="tags"]').fill("[rent")
        await form.get_by_role("button", name="Run with these arguments").click()
        await expect(form.locator(".field-error")).to_contain_text(["a whole number", "", "", "", "not valid JSON"])
        assert RAN == []
        await form.locator('input[name="amount"]').fill("120")
        await form.locator('select[name="currency"]').select_option(label="USD")
        await form.locator('input[name="urgent"]').check()
        await form.locator('textarea[name="tags"]').fill('["rent", "march"]')
        await page.screenshot(path=str(ARTIFACTS / "approval-edit.png"))
        await form.get_by_role("button", name="Run with these arguments").click()
        await expect(page.locator(".msg.assistant").last).to_contain_text("paid 120 USD", timeout=20_000)
        assert RAN == [{"amount": 120, "currency": "USD", "urgent": True, "memo": "March rent", "tags": ["rent", "march"]}]

        # 2. reject with a reason: the tool never runs and the payer's next model call sees why
        await page.click("#new-thread")
        await page.fill("#prompt", "pay the rent again")
        await page.press("#prompt", "Enter")
        await expect(card).to_contain_text("pay waits for approval", timeout=20_000)
        await card.get_by_role("button", name="Reject").click()
        await card.locator('textarea[name="reason"]').fill("Already paid this month.")
        await page.screenshot(path=str(ARTIFACTS / "approval-reject.png"))
        await card.get_by_role("button", name="Send rejection").click()
        await expect(page.locator(".msg.assistant").last).to_contain_text("Their reason: Already paid this month.", timeout=20_000)
    assert len(RAN) == 1
    seen = [m.content for m in PAYER_MODEL.calls[-1] if isinstance(m, ToolMessage)]
    assert seen == ["The user declined this tool call; it did not run. Their reason: Already paid this month."]
