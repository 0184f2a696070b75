"""The playground's approval card (SPEC §29, issue 47) in headless Chromium (same set-up
as test_playground.py): edited arguments round-trip byte for byte (text areas for
multi-line and long text; a field left alone is sent exactly as the call had it), the
card names the agent that made the call, a subagent's approval updates its delegation
card instead of leaving a stale "waiting" one beside the finished one, and a reloaded
thread names its delegations after their subagents, as the live view does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.agui import create_app
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call
from tests.agui.browser import ARTIFACTS, offline_page
from tests.agui.conftest import ThreadServer, after_tool, pay_tool

# what a text field can hold that an <input> (line breaks) or a text area ("\r\n", read
# back as "\n") would change
ARTICLE = (
    "# Owls: what we know\n\nWhat should you know about owls?\r\n"
    "\tThey turn their heads 270°.  \n"
    "- Eyes: fixed in their sockets 🦉\r\n"
    "- Ears: asymmetric, « pour mieux entendre »\n\n"
    "Ende.   \n"
)
BYLINE = "Ana\tLópez  "
NOTE = "A single line that is long enough to want a text area: " + "owls hunt at night, mostly by ear; " * 3
CRLF_ARTICLE = "# Tides\r\n\r\nThe moon pulls the sea.\r\nTwice a day.\r\n"
PUBLISHED: list[dict[str, Any]] = []
PAID: list[int] = []


class Article(BaseModel):
    title: str
    article: str
    byline: str = ""
    note: str = ""


def _publish(args: Article) -> str:
    PUBLISHED.append(args.model_dump())
    return f"published {args.title!r}"


def _desk(messages: list[Any]) -> Any:
    if isinstance(messages[-1], ToolMessage):
        return f"done: {messages[-1].content}"
    ask = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
    if ask.startswith("publish tides"):
        return tool_call("publish", {"title": "Tides", "article": CRLF_ARTICLE})
    if ask.startswith("publish"):
        return tool_call("publish", {"title": "Owls: what we know", "article": ARTICLE, "byline": BYLINE, "note": NOTE})
    return delegate("payments_agent", ask)


def _desk_agent() -> Agent:
    publish = create_tool(
        id="publish", description="Publish an article.", input_schema=Article, execute=_publish,
        require_approval={"allowed_decisions": ["approve", "edit", "reject"], "description": "Read it before it goes out."},
    )
    payments = Agent(
        id="payments-agent", description="Pays bills.", tools=[pay_tool(PAID)],
        model=ScriptedChatModel(policy=after_tool("payments", tool_call("pay", {"amount": 5}))),
    )
    return Agent(
        id="desk", model=ScriptedChatModel(policy=_desk, record_calls=False), tools=[publish],
        agents={"payments_agent": payments}, memory=Memory(":memory:"),
    )


@pytest.fixture(scope="module")
def served_desk() -> Iterator[str]:
    with ThreadServer(create_app(_desk_agent(), resource_id="web-user")) as running:
        yield running.url


@pytest.fixture(scope="module")
def served_desk_mastra() -> Iterator[str]:
    """The Mastra dialect: its approvals carry no agent path, only the subagent run."""
    with ThreadServer(create_app(_desk_agent(), resource_id="web-user", compat="mastra")) as running:
        yield running.url


async def test_an_edited_field_leaves_the_others_exactly_as_they_were(served_desk: str) -> None:
    from playwright.async_api import expect

    PUBLISHED.clear()
    async with offline_page() as page:
        await page.goto(f"{served_desk}/")
        await page.fill("#prompt", "publish the owls article")
        await page.press("#prompt", "Enter")
        card = page.locator(".approval")
        await expect(card).to_contain_text("publish waits for approval", timeout=30_000)
        # the card says who made the call: the supervisor here
        await expect(card.locator(".who")).to_have_text("Called by desk, the supervisor")
        await expect(card).to_have_attribute("data-agent", "desk")
        # the arguments as they read: the article with its line breaks, not JSON's "\n"
        await card.get_by_role("button", name="Arguments").click()
        shown = await card.locator('.args dd[data-arg="article"]').text_content()
        assert shown == ARTICLE
        await card.screenshot(path=str(ARTIFACTS / "approval-card.png"))

        await card.get_by_role("button", name="Edit").click()
        form = card.locator("form.edit")
        # multi-line and long text get text areas (an <input> drops line breaks); short text an input
        assert await form.locator('[name="article"]').evaluate("e => e.tagName") == "TEXTAREA"
        assert await form.locator('[name="note"]').evaluate("e => e.tagName") == "TEXTAREA"
        assert await form.locator('[name="title"]').evaluate("e => e.tagName") == "INPUT"
        assert await form.locator('[name="byline"]').evaluate("e => e.tagName") == "INPUT"
        await expect(form.locator('[name="article"]')).to_have_value(ARTICLE.replace("\r\n", "\n"))
        await form.locator('[name="title"]').fill("Owls: what we know now")
        await page.screenshot(path=str(ARTIFACTS / "approval-edit-text.png"))
        await form.get_by_role("button", name="Run with these arguments").click()
        await expect(page.locator(".msg.assistant").last).to_contain_text("published '", timeout=30_000)
    # byte for byte: "\n", "\r\n", tabs, trailing spaces and unicode as the call had them
    assert PUBLISHED == [{"title": "Owls: what we know now", "article": ARTICLE, "byline": BYLINE, "note": NOTE}]


async def test_edited_text_keeps_its_line_breaks(served_desk: str) -> None:
    from playwright.async_api import expect

    PUBLISHED.clear()
    async with offline_page() as page:
        await page.goto(f"{served_desk}/")
        await page.fill("#prompt", "publish tides")
        await page.press("#prompt", "Enter")
        card = page.locator(".approval")
        await expect(card).to_contain_text("publish waits for approval", timeout=30_000)
        await card.get_by_role("button", name="Edit").click()
        article = card.locator('form.edit [name="article"]')
        # typed into the text area: new lines come as "\n", and go out as the text's "\r\n"
        await article.fill("# Tides\n\nThe moon pulls the sea.\nTwice a day, or so 🌊.\n")
        await card.get_by_role("button", name="Run with these arguments").click()
        await expect(page.locator(".msg.assistant").last).to_contain_text("published '", timeout=30_000)
    assert PUBLISHED == [
        {"title": "Tides", "article": "# Tides\r\n\r\nThe moon pulls the sea.\r\nTwice a day, or so 🌊.\r\n", "byline": "", "note": ""}
    ]


@pytest.mark.parametrize("dialect", ["supervisor_graph", "mastra"])
async def test_a_subagents_approval_names_it_and_updates_its_card(dialect: str, request: pytest.FixtureRequest) -> None:
    from playwright.async_api import expect

    served = request.getfixturevalue("served_desk" if dialect == "supervisor_graph" else "served_desk_mastra")
    PAID.clear()
    async with offline_page() as page:
        await page.goto(f"{served}/")
        await page.fill("#prompt", "pay the bill")
        await page.press("#prompt", "Enter")
        card = page.locator(".approval")
        await expect(card).to_contain_text("pay waits for approval", timeout=30_000)
        await expect(card.locator(".who")).to_have_text("Called by payments-agent, subagent of desk")
        await expect(card).to_have_attribute("data-agent", "payments-agent")
        sub = page.locator('.sub[data-subagent="payments-agent"]')
        await expect(sub).to_have_class("sub waiting")
        await page.screenshot(path=str(ARTIFACTS / f"approval-subagent-{dialect}.png"))
        await card.get_by_role("button", name="Approve").click()
        await expect(page.locator(".msg.assistant").last).to_have_text("done: payments: paid 5", timeout=30_000)
        # one card for the delegation, done: the resumed delegation took the waiting one over
        await expect(sub).to_have_count(1)
        await expect(sub).to_have_class("sub done")
        await expect(page.locator(".sub.waiting")).to_have_count(0)
        assert PAID == [5]

        # a reload names the delegation after its subagent, as the live view did
        thread = await page.locator('#threads button[aria-current="true"]').inner_text()
        await page.reload()
        await page.locator("#threads button", has_text=thread).click()
        await expect(page.locator(".msg.assistant").last).to_have_text("done: payments: paid 5", timeout=30_000)
        await expect(page.locator('.msg.tool[data-agent="payments-agent"]')).to_have_text("payments-agent → payments: paid 5")
        await expect(page.locator("#messages")).not_to_contain_text("agent-payments_agent")
        await expect(sub).to_have_count(1)
        await expect(sub).to_have_class("sub done")
        await expect(sub.locator(".name")).to_have_text("payments-agent")
        await page.screenshot(path=str(ARTIFACTS / f"history-delegation-{dialect}.png"))


@pytest.fixture(scope="module")
def served_demo() -> Iterator[str]:
    from supervisor_graph.examples.research_write import build_agents

    with ThreadServer(create_app(build_agents(memory=Memory(":memory:")), resource_id="web-user")) as running:
        yield running.url


async def test_the_demo_publishes_its_article_whole_after_a_new_title(served_demo: str) -> None:
    """The report: on the demo's `publish`, changing only the title published the article
    run together ("# Owls: what we knowWhat should you know…"), which its word count shows."""
    from playwright.async_api import expect

    from supervisor_graph.examples.research_write import PUBLISH_PROMPT

    async with offline_page() as page:
        await page.goto(f"{served_demo}/")
        await page.fill("#prompt", PUBLISH_PROMPT)
        await page.press("#prompt", "Enter")
        card = page.locator(".approval")
        await expect(card).to_contain_text("publish waits for approval", timeout=30_000)
        await expect(card.locator(".who")).to_have_text("Called by parent-agent, the supervisor")
        article = await card.locator('.args dd[data-arg="article"]').text_content()
        assert article and "\n\n" in article
        await card.get_by_role("button", name="Edit").click()
        await card.locator('form.edit [name="title"]').fill("AI in education: what we know")
        await card.get_by_role("button", name="Run with these arguments").click()
        published = page.locator(".msg.tool", has_text="publish →")
        await expect(published).to_contain_text(f"({len(article.split())} words)", timeout=30_000)
        await expect(published).to_contain_text("Published 'AI in education: what we know'")


@pytest.mark.parametrize("dialect", ["supervisor_graph", "mastra"])
async def test_a_reloaded_approval_still_names_its_agent(dialect: str, request: pytest.FixtureRequest) -> None:
    """After a reload there is no delegation card to name the subagent from: this project's
    interrupts carry the agent path, and for the Mastra dialect's the history gives it."""
    from playwright.async_api import expect

    served = request.getfixturevalue("served_desk" if dialect == "supervisor_graph" else "served_desk_mastra")
    async with offline_page() as page:
        await page.goto(f"{served}/")
        await page.fill("#prompt", "pay the other bill")
        await page.press("#prompt", "Enter")
        card = page.locator(".approval")
        await expect(card).to_contain_text("pay waits for approval", timeout=30_000)
        thread = await page.locator('#threads button[aria-current="true"]').inner_text()
        await page.reload()
        await page.locator("#threads button", has_text=thread).click()
        await expect(card).to_contain_text("pay waits for approval", timeout=30_000)
        await expect(card.locator(".who")).to_have_text("Called by payments-agent, subagent of desk")
        await card.get_by_role("button", name="Approve").click()
        await expect(page.locator(".msg.assistant").last).to_have_text("done: payments: paid 5", timeout=30_000)
