"""Time travel in the playground (SPEC §34, §22) in headless Chromium: the Timeline tab
lists the steps where a run ended; a person forks from one (the next message goes with
`forwardedProps.checkpoint_id`, and the page shows the fork's conversation from the
run's MESSAGES_SNAPSHOT), and edits a finished delegation's prompt and reruns it
(`forwardedProps.edit`). The subagent keeps a thread per parent thread and says what it
remembers, so the page shows which branch it saw. Same browser set-up as
test_playground.py; the JSON route is checked over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import Agent, Memory
from supervisor_graph.agui import create_app
from supervisor_graph.testing import ScriptedChatModel, delegate
from tests.agui.browser import ARTIFACTS, offline_page
from tests.agui.conftest import ThreadServer
from tests.agui.test_endpoint import body, post

AGENT = "/_playground/agent"


def _lead(messages: list[Any]) -> Any:
    last = messages[-1]
    if isinstance(last, HumanMessage):
        return delegate("research", f"topic {last.content}")
    return f"done: {last.content}" if isinstance(last, ToolMessage) else "?"


def _remembers(messages: list[Any]) -> str:
    """What the subagent's own thread holds: every prompt it was given on this branch."""
    return "saw " + " | ".join(str(m.content) for m in messages if isinstance(m, HumanMessage))


@pytest.fixture(scope="module")
def served_team() -> Iterator[str]:
    research = Agent(
        id="researcher",
        description="Looks up topics.",
        model=ScriptedChatModel(policy=_remembers, latency=0.05, record_calls=False),
        inherit_context=False,
    )
    lead = Agent(
        id="lead",
        model=ScriptedChatModel(policy=_lead, latency=0.05, record_calls=False),
        agents={"research": research},
        subagent_threads="per_parent_thread",
        memory=Memory(":memory:"),
    )
    app = create_app(lead, resource_id=lambda request: request.headers.get("x-user", "web-user"))
    with ThreadServer(app) as running:
        yield running.url


async def _say(page: Any, text: str, answer: str) -> None:
    from playwright.async_api import expect

    await page.fill("#prompt", text)
    await page.press("#prompt", "Enter")
    await expect(page.locator(".msg.assistant").last).to_have_text(answer, timeout=20_000)
    await expect(page.locator("#status")).to_have_text("done")


async def test_a_person_forks_from_a_step_and_the_subagent_forgets_the_branch_left(served_team: str) -> None:
    from playwright.async_api import expect

    async with offline_page() as page:
        sent: list[dict[str, Any]] = []
        page.on("request", lambda r: sent.append(r.post_data_json) if r.method == "POST" and r.url.endswith(AGENT) else None)
        await page.goto(f"{served_team}/")
        await page.get_by_role("tab", name="Timeline").click()
        await expect(page.locator("#checkpoints-empty")).to_be_visible()
        await _say(page, "A", "done: saw topic A")
        await _say(page, "B", "done: saw topic A | topic B")

        # one step per run, oldest first, each with its turn; the latest has no fork button
        steps = page.locator("#checkpoints > li")
        await expect(steps).to_have_count(2)
        await expect(steps.locator(".cp-said")).to_have_text(["“A” → done: saw topic A", "“B” → done: saw topic A | topic B"])
        await expect(steps.first).to_contain_text("delegated to researcher")
        await expect(steps.last.get_by_role("button")).to_have_count(0)
        await expect(page.locator("#checkpoints-empty")).to_be_hidden()

        # pick the step after A: the conversation is A's, and the banner says what comes next
        first = await steps.first.get_attribute("data-step")
        await page.get_by_role("button", name=f"Fork from step {first}").click()
        await expect(page.locator(".msg.user")).to_have_text(["A"])
        await expect(page.locator(".msg.assistant")).to_have_text(["done: saw topic A"])
        await expect(page.locator("#fork-banner")).to_be_visible()
        await expect(page.locator("#fork-text")).to_contain_text(f"Forking from step {first}")
        await expect(steps.first).to_have_attribute("aria-current", "true")
        await page.screenshot(path=str(ARTIFACTS / "time-travel-fork-picked.png"))

        # C forks there: the subagent saw A and C, not the abandoned B
        await _say(page, "C", "done: saw topic A | topic C")
        fork_props = sent[-1]["forwardedProps"]
        assert set(fork_props) == {"checkpoint_id"}, fork_props
        checkpoint = fork_props["checkpoint_id"]
        assert [m["content"] for m in sent[-1]["messages"] if m["role"] == "user"] == ["A", "C"]
        # the conversation shown is the fork's snapshot (the stored ids, the delegation named)
        await expect(page.locator(".msg.user")).to_have_text(["A", "C"])
        await expect(page.locator(".msg.assistant")).to_have_text(["done: saw topic A", "done: saw topic A | topic C"])
        await expect(page.locator('.msg.tool[data-agent="researcher"]')).to_have_text(
            ["researcher → saw topic A", "researcher → saw topic A | topic C"]
        )
        await expect(page.locator("#fork-banner")).to_be_hidden()
        await expect(steps.locator(".cp-said")).to_have_text(["“A” → done: saw topic A", "“C” → done: saw topic A | topic C"])
        thread = sent[-1]["threadId"]
        await page.screenshot(path=str(ARTIFACTS / "time-travel-forked.png"))

        # the branch goes on: only D is new to the server, and the subagent is the fork's
        await _say(page, "D", "done: saw topic A | topic C | topic D")
        assert sent[-1]["forwardedProps"] == {}

    async with httpx.AsyncClient(timeout=20) as client:
        listed = (await client.get(f"{served_team}{AGENT}/threads/{thread}/checkpoints")).json()["checkpoints"]
    assert any(c["id"] == checkpoint for c in listed)  # the branch left is stored still
    left = [c for c in listed if c["next"] == [] and [m["content"] for m in c["messages"] if m["role"] == "user"] == ["A", "B"]]
    assert left, "the abandoned branch's last step is listed"


async def test_a_person_edits_a_delegations_prompt_and_reruns_it(served_team: str) -> None:
    from playwright.async_api import expect

    async with offline_page() as page:
        sent: list[dict[str, Any]] = []
        page.on("request", lambda r: sent.append(r.post_data_json) if r.method == "POST" and r.url.endswith(AGENT) else None)
        await page.goto(f"{served_team}/")
        await _say(page, "A", "done: saw topic A")
        card = page.locator('#tree > .sub[data-subagent="researcher"]')
        await expect(card).to_have_class("sub done")
        call = await card.get_attribute("data-call")

        await card.get_by_role("button", name="Edit prompt").click()
        prompt = card.get_by_role("textbox", name="New prompt for researcher")
        await expect(prompt).to_have_value("topic A")
        await expect(prompt).to_be_focused()
        await prompt.fill("topic EDITED")
        await page.screenshot(path=str(ARTIFACTS / "time-travel-edit.png"))
        await card.get_by_role("button", name="Rerun").click()

        # the delegation ran again from where its call waited: the subagent saw only the edit
        await expect(page.locator(".msg.assistant")).to_have_text(["done: saw topic EDITED"], timeout=20_000)
        await expect(page.locator("#status")).to_have_text("done")
        assert sent[-1]["forwardedProps"] == {"edit": {"tool_call_id": call, "prompt": "topic EDITED"}}
        assert sent[-1]["messages"] == []
        await expect(page.locator(".msg.user")).to_have_text(["A"])
        await expect(page.locator(".msg.tool")).to_have_text(["researcher → saw topic EDITED"])
        rerun = page.locator('#tree > .sub[data-subagent="researcher"]')
        await expect(rerun).to_have_count(1)
        await expect(rerun.locator(".prompt")).to_have_text("“topic EDITED”")
        await expect(rerun).to_have_class("sub done")
        await expect(rerun.get_by_role("button", name="Edit prompt")).to_be_visible()  # it can be edited again
        await page.screenshot(path=str(ARTIFACTS / "time-travel-edited.png"))

        # the thread goes on from the edit; the page's conversation is the stored one
        await _say(page, "B", "done: saw topic EDITED | topic B")
        assert sent[-1]["forwardedProps"] == {}
        thread = sent[-1]["threadId"]

        # a reloaded thread's delegation cards can be edited too
        await page.click("#new-thread")
        await page.locator("#threads button", has_text=thread).click()
        await expect(page.locator(".msg.user")).to_have_text(["A", "B"])
        await expect(page.locator("#tree > .sub .edit-prompt")).to_have_count(2)


async def test_the_checkpoints_route_is_the_threads_steps_for_its_owner_only(served_team: str) -> None:
    events, _, _ = await post(served_team + AGENT, body("tt-route", "owls"), headers={"x-user": "alice"})
    assert events[-1]["outcome"] == {"type": "success"}
    url = f"{served_team}{AGENT}/threads/tt-route/checkpoints"
    async with httpx.AsyncClient(timeout=20) as client:
        own = await client.get(url, headers={"x-user": "alice"})
        other = await client.get(url, headers={"x-user": "bob"})
        sub = await client.get(f"{served_team}{AGENT}/threads/tt-route::research/checkpoints", headers={"x-user": "alice"})
    assert (other.status_code, other.json()["code"]) == (403, "THREAD_FORBIDDEN")
    assert "owls" not in other.text
    assert sub.status_code == 200 and sub.json() == {"checkpoints": []}  # a delegation's thread forks with its parent
    listed = own.json()["checkpoints"]
    newest = listed[0]
    assert set(newest) == {"id", "parent", "step", "source", "created_at", "next", "messages", "delegations"}
    assert newest["next"] == [] and newest["parent"] == listed[1]["id"]
    assert [s["step"] for s in listed] == sorted((s["step"] for s in listed), reverse=True)
    # the page's shape of the messages: the delegation named after its subagent
    assert [m["role"] for m in newest["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert newest["messages"][1]["toolCalls"][0]["agent"] == "researcher"
    assert newest["messages"][2]["agent"] == "researcher"
    [done] = [d for s in listed for d in s["delegations"]]
    assert (done["agent_id"], done["prompt"], done["text"]) == ("researcher", "topic owls", "saw topic owls")
