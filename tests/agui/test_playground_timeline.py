"""The playground's run timeline (SPEC §24, last bullet) in headless Chromium: a waterfall
of the supervisor's steps, its delegation (named after the subagent, with its duration
and tokens) and the subagent's tool call nested in it, in start order, on one time axis;
a running bar grows; a second run replaces it; each thread keeps its last run. Same
browser set-up as test_playground.py."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.agui import create_app
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call
from tests.agui.browser import ARTIFACTS, offline_page
from tests.agui.conftest import ThreadServer, background_team


class Topic(BaseModel):
    topic: str


# Set by a test once it has seen the run live; until then the lookup (and so the
# delegation) stays running, however slowly a busy machine's browser gets to see it.
LOOKED_AT = threading.Event()
LOOKED_AT.set()


def _lookup(args: Topic) -> str:
    started = time.monotonic()
    LOOKED_AT.wait(60)  # bounded: a test that never sets it still ends
    time.sleep(max(0.0, 0.5 - (time.monotonic() - started)))  # at least 0.5 s, which the durations check
    return f"bees dance to say where {args.topic} are"


def _finder(messages: list[Any]) -> Any:
    if isinstance(messages[-1], ToolMessage):
        return f"found: {messages[-1].content}"
    return tool_call("lookup", {"topic": "flowers"})


class Amount(BaseModel):
    amount: int


def _payer(messages: list[Any]) -> Any:
    if isinstance(messages[-1], ToolMessage):
        return f"payer: {messages[-1].content}"
    return tool_call("pay", {"amount": 12})


def _boss(messages: list[Any]) -> Any:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return f"final: {last.content}"
    if isinstance(last, HumanMessage) and "bees" in str(last.content):
        return delegate("finder", str(last.content))
    if isinstance(last, HumanMessage) and "pay" in str(last.content):
        return delegate("payer", str(last.content))
    return f"echo: {last.content}"


@pytest.fixture(scope="module")
def served_timeline() -> Iterator[str]:
    lookup = create_tool(id="lookup", description="Looks a topic up.", input_schema=Topic, execute=_lookup)
    finder = Agent(
        id="fact-finder",
        description="Finds facts.",
        tools=[lookup],
        model=ScriptedChatModel(policy=_finder, latency=0.3, model_name="finder-model", record_calls=False),
    )
    pay = create_tool(
        id="pay", description="Pays.", input_schema=Amount, execute=lambda a: f"paid {a.amount}", require_approval=True
    )
    payer = Agent(
        id="payer-agent",
        description="Pays invoices.",
        tools=[pay],
        model=ScriptedChatModel(policy=_payer, latency=0.2, model_name="payer-model", record_calls=False),
    )
    boss = Agent(
        id="supervisor",
        agents={"finder": finder, "payer": payer},
        model=ScriptedChatModel(policy=_boss, latency=0.3, model_name="boss-model", record_calls=False),
        memory=Memory(":memory:"),
    )
    with ThreadServer(create_app(boss, resource_id="web-user")) as running:
        yield running.url


ROWS = """rows => rows.map(r => ({
  kind: r.dataset.kind, name: r.dataset.name, label: r.querySelector('.tl-kind').textContent,
  state: r.dataset.state, start: Number(r.dataset.start), duration: Number(r.dataset.duration),
  tokens: r.dataset.tokens ? Number(r.dataset.tokens) : null,
  meta: r.querySelector('.tl-meta').textContent,
}))"""


async def test_the_timeline_draws_steps_a_delegation_and_its_tool_call(served_timeline: str) -> None:
    from playwright.async_api import expect

    async with offline_page() as page:
        await page.goto(f"{served_timeline}/")
        tab = page.get_by_role("tab", name="Timeline")
        await tab.click()
        await expect(tab).to_have_attribute("aria-selected", "true")
        await expect(page.locator("#tree-panel")).to_be_hidden()
        await expect(page.locator("#timeline-summary")).to_have_text("No run yet on this thread.")

        LOOKED_AT.clear()
        try:
            await page.fill("#prompt", "how do bees talk?")
            await page.press("#prompt", "Enter")

            # live: the delegation's bar is running, and grows until it ends
            delegation = page.locator('#timeline .tl-row[data-kind="delegation"]')
            await expect(delegation).to_have_attribute("data-state", "running", timeout=30_000)
            await expect(delegation.locator(":scope > .tl-line .tl-meta")).to_contain_text("running", timeout=30_000)
            await expect(page.locator("#timeline-summary")).to_contain_text("Run · running", timeout=30_000)
            seen = int(await delegation.get_attribute("data-duration") or 0)
            await page.wait_for_function(
                "seen => +document.querySelector('#timeline .tl-row[data-kind=delegation]').dataset.duration > seen + 150",
                arg=seen,
                timeout=30_000,
            )
        finally:
            LOOKED_AT.set()

        await expect(page.locator("#status")).to_have_text("done", timeout=20_000)
        await expect(page.locator(".msg.assistant").last).to_contain_text("final: found: bees dance")

        # the waterfall, in start order: supervisor step, delegation (its step, its tool
        # call, its step), supervisor step
        rows = await page.locator("#timeline .tl-row").evaluate_all(ROWS)
        assert [(r["kind"], r["name"], r["label"]) for r in rows] == [
            ("step", "supervisor", "step 1"),
            ("delegation", "fact-finder", "delegation"),
            ("step", "fact-finder", "step 1"),
            ("tool", "lookup", "tool"),
            ("step", "fact-finder", "step 2"),
            ("step", "supervisor", "step 2"),
        ]
        starts = [r["start"] for r in rows]
        assert starts == sorted(starts)
        assert all(r["state"] == "done" for r in rows)
        by = {(r["kind"], r["name"], r["label"]): r for r in rows}
        # each supervisor step is a model call of 0.3 s; the tool sleeps 0.5 s
        assert all(r["duration"] >= 250 for r in rows if r["kind"] == "step")
        assert by[("tool", "lookup", "tool")]["duration"] >= 450
        # the delegation: its duration and tokens (two finder calls of 10 + 5 tokens)
        found = by[("delegation", "fact-finder", "delegation")]
        assert found["tokens"] == 30
        assert re.fullmatch(r"\d\.\d\d s · 30 tokens", found["meta"]), found["meta"]
        assert found["duration"] >= 1000
        # the tool call is nested in the delegation, and its bar lies within the delegation's
        tool = page.locator('#timeline > .tl-row[data-kind="delegation"] .tl-row[data-kind="tool"]')
        await expect(tool).to_have_count(1)
        await expect(page.locator("#timeline > .tl-row")).to_have_count(3)
        outer = await delegation.locator(":scope > .tl-track > .tl-bar").bounding_box()
        inner = await tool.locator(":scope > .tl-track > .tl-bar").bounding_box()
        assert outer and inner
        assert outer["x"] - 1 <= inner["x"] and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 1
        # the run: its total (the supervisor's two calls and the finder's two)
        await expect(page.locator("#timeline-summary")).to_have_text(re.compile(r"^Run · \d\.\d\d s · 60 tokens$"))
        await expect(page.locator("#timeline-end")).to_have_text(re.compile(r"^\d\.\d\d s$"))
        await page.screenshot(path=str(ARTIFACTS / "timeline.png"))

        # a second run replaces it: one supervisor step, no delegation
        await page.fill("#prompt", "hello")
        await page.press("#prompt", "Enter")
        await expect(page.locator(".msg.assistant").last).to_have_text("echo: hello", timeout=20_000)
        await expect(page.locator("#status")).to_have_text("done")
        rows = await page.locator("#timeline .tl-row").evaluate_all(ROWS)
        assert [(r["kind"], r["name"], r["label"], r["state"]) for r in rows] == [
            ("step", "supervisor", "step 1", "done")
        ]
        await expect(page.locator("#timeline-summary")).to_have_text(re.compile(r"^Run · \d+ ms · 15 tokens$"))

        # kept per thread while the page lives: a new thread has none, the old one its last
        await page.click("#new-thread")
        await expect(page.locator("#timeline-summary")).to_have_text("No run yet on this thread.")
        await expect(page.locator("#timeline .tl-row")).to_have_count(0)
        await page.locator('#threads button[aria-current="false"]').click()
        await expect(page.locator(".msg.user")).to_have_text(["how do bees talk?", "hello"])
        await expect(page.locator("#timeline .tl-row")).to_have_count(1)
        await expect(page.locator('#timeline .tl-row[data-kind="step"]')).to_have_attribute("data-name", "supervisor")

        # the tabs work with the keyboard
        await tab.focus()
        await page.keyboard.press("ArrowLeft")
        await expect(page.get_by_role("tab", name="Delegations")).to_be_focused()
        await expect(page.locator("#tree-panel")).to_be_visible()
        await expect(page.locator("#timeline-panel")).to_be_hidden()


async def test_a_paused_run_waits_and_its_resume_continues_without_a_new_model_call(served_timeline: str) -> None:
    """An approval inside a subagent: the run ends with the delegation waiting; the resumed
    run (a new timeline) starts with the approved tool call inside the reopened delegation,
    not with a step, since no model is called before the tool runs."""
    from playwright.async_api import expect

    async with offline_page() as page:
        await page.goto(f"{served_timeline}/")
        await page.get_by_role("tab", name="Timeline").click()
        await page.fill("#prompt", "pay the invoice")
        await page.press("#prompt", "Enter")
        await expect(page.locator(".approval")).to_be_visible(timeout=20_000)
        rows = await page.locator("#timeline .tl-row").evaluate_all(ROWS)
        assert [(r["kind"], r["name"], r["label"], r["state"]) for r in rows] == [
            ("step", "supervisor", "step 1", "done"),
            ("delegation", "payer-agent", "delegation", "waiting"),
            # its model call ended (STEP_FINISHED): the tool call it made is what waits
            ("step", "payer-agent", "step 1", "done"),
        ]
        await expect(page.locator("#timeline-summary")).to_contain_text("Run · waiting")
        await page.get_by_role("button", name="Approve").click()
        await expect(page.locator(".msg.assistant").last).to_have_text("final: payer: paid 12", timeout=20_000)
        await expect(page.locator("#status")).to_have_text("done")
        rows = await page.locator("#timeline .tl-row").evaluate_all(ROWS)
        assert [(r["kind"], r["name"], r["label"], r["state"]) for r in rows] == [
            ("delegation", "payer-agent", "delegation", "done"),
            ("tool", "pay", "tool", "done"),
            ("step", "payer-agent", "step 1", "done"),
            ("step", "supervisor", "step 1", "done"),
        ]


class _HeldUntilSeen(AsyncCallbackHandler):
    """Holds the background task's model call until the test has seen the task running
    (LOOKED_AT), so a busy machine's browser cannot miss its 0.8 s."""

    async def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        await asyncio.to_thread(LOOKED_AT.wait, 60)


@pytest.fixture(scope="module")
def served_background() -> Iterator[str]:
    boss = background_team(research_latency=0.8, boss_latency=0.2)
    boss.agents["research"].model.callbacks = [_HeldUntilSeen()]  # type: ignore[union-attr]
    with ThreadServer(create_app(boss, resource_id="web-user")) as running:
        yield running.url


async def test_the_timeline_draws_a_background_task_from_launch_to_outcome(served_background: str) -> None:
    """The launching delegation ends at the launch; the task runs until its outcome; the
    supervisor's answer to the outcome is a step of its own."""
    from playwright.async_api import expect

    async with offline_page() as page:
        await page.goto(f"{served_background}/")
        await page.get_by_role("tab", name="Timeline").click()
        LOOKED_AT.clear()
        try:
            await page.fill("#prompt", "how do bees talk?")
            await page.press("#prompt", "Enter")
            task = page.locator('#timeline .tl-row[data-kind="task"]')
            await expect(task).to_have_attribute("data-state", "running", timeout=30_000)
        finally:
            LOOKED_AT.set()
        await expect(page.locator("#status")).to_have_text("done", timeout=20_000)
        await expect(page.locator(".msg.assistant").last).to_have_text("the research is in")
        rows = await page.locator("#timeline .tl-row").evaluate_all(ROWS)
        assert [(r["kind"], r["name"], r["label"], r["state"]) for r in rows] == [
            ("step", "boss", "step 1", "done"),
            ("delegation", "research-agent", "background launch", "done"),
            ("task", "research-agent", "background task", "done"),
            ("step", "boss", "step 2", "done"),
            ("step", "boss", "step 3", "done"),
        ]
        by = {r["label"]: r for r in rows}
        assert by["background task"]["duration"] >= 700  # the research model's 0.8 s
        assert by["step 3"]["start"] >= by["background task"]["start"] + by["background task"]["duration"] - 5
        assert by["step 3"]["duration"] >= 150  # the boss's 0.2 s answer, not the wait before it
        await page.screenshot(path=str(ARTIFACTS / "timeline-background.png"))


def _sse(*events: dict[str, Any]) -> str:
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events)


async def test_the_timeline_uses_step_events_when_the_stream_has_them(served_timeline: str) -> None:
    """The bridge sends no STEP_STARTED / STEP_FINISHED today (steps are inferred from the
    model messages); a stream that has them gets its steps from them, with their tokens."""
    from playwright.async_api import expect

    sub, usage = "sub-1", lambda n: {"supervisor_graph": {"usage": [{"model": "m", "totalTokens": n}]}}
    body = _sse(
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "STEP_STARTED", "stepName": "supervisor"},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "agent-finder", "parentMessageId": "m1"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "STEP_FINISHED", "stepName": "supervisor", "metadata": usage(15)},
        {"type": "SUBAGENT_STARTED", "subagentRunId": sub, "name": "fact-finder", "parentToolCallId": "c1"},
        {"type": "STEP_STARTED", "stepName": "fact-finder", "subagentRunId": sub},
        {"type": "TEXT_MESSAGE_START", "messageId": "m2", "role": "assistant", "subagentRunId": sub},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m2", "delta": "found", "subagentRunId": sub},
        {"type": "TEXT_MESSAGE_END", "messageId": "m2", "subagentRunId": sub},
        {"type": "STEP_FINISHED", "stepName": "fact-finder", "subagentRunId": sub, "metadata": usage(7)},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": sub, "metadata": usage(7)},
        {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "found", "role": "tool"},
        {"type": "STEP_STARTED", "stepName": "supervisor"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m3", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m3", "delta": "done"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m3"},
        {"type": "STEP_FINISHED", "stepName": "supervisor", "metadata": usage(20)},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {"type": "success"},
            "usage": [{"model": "m", "totalTokens": 42}],
        },
    )

    async def recorded(route: Any) -> None:
        if route.request.method != "POST":
            await route.fallback()
            return
        await route.fulfill(status=200, headers={"Content-Type": "text/event-stream"}, body=body)

    async with offline_page() as page:
        await page.route("**/_playground/agent", recorded)
        await page.goto(f"{served_timeline}/")
        await page.get_by_role("tab", name="Timeline").click()
        await page.fill("#prompt", "replayed")
        await page.press("#prompt", "Enter")
        await expect(page.locator("#status")).to_have_text("done", timeout=10_000)
        rows = await page.locator("#timeline .tl-row").evaluate_all(ROWS)
        assert [(r["kind"], r["name"], r["label"], r["tokens"]) for r in rows] == [
            ("step", "supervisor", "step 1", 15),
            ("delegation", "fact-finder", "delegation", 7),
            ("step", "fact-finder", "step 1", 7),
            ("step", "supervisor", "step 2", 20),
        ]
        await expect(page.locator("#timeline-summary")).to_contain_text("42 tokens")
