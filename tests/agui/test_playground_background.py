"""The playground (SPEC §22) shows a background task (SPEC §12) in headless Chromium: its
card in the delegation tree runs, then shows the outcome; the outcome notice and the
supervisor's answer to it arrive in the same run, with no new user message; a reload keeps
both in the thread's history. Same browser set-up as test_playground.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from supervisor_graph.agui import create_app
from tests.agui.browser import ARTIFACTS, offline_page
from tests.agui.conftest import ThreadServer, background_team


@pytest.fixture(scope="module")
def served_background() -> Iterator[str]:
    boss = background_team(research_latency=1.5, quote=True)
    with ThreadServer(create_app(boss, resource_id="web-user")) as running:
        yield running.url


async def test_the_playground_shows_a_background_task_run_then_answered(served_background: str) -> None:
    from playwright.async_api import expect

    async with offline_page() as page:
        await page.goto(f"{served_background}/")
        await page.fill("#prompt", "how do bees talk?")
        await page.press("#prompt", "Enter")

        # running: one card (the launching delegation's, now the task's), the stream still open
        card = page.locator(".sub[data-background]")
        await expect(card).to_have_class("sub running", timeout=10_000)
        await expect(card.locator(".name")).to_have_text("research-agent (background)")
        await expect(card.locator(".state")).to_have_text("working…")
        await expect(page.locator(".msg.assistant")).to_have_text(["started, will report"])
        await expect(page.locator("#status")).to_have_text("running…")
        await page.screenshot(path=str(ARTIFACTS / "background-running.png"))

        # answered in the same run: the card's outcome, the notice, the supervisor's answer
        await expect(card).to_have_class("sub done", timeout=10_000)
        await expect(card.locator(".state")).to_contain_text("completed, answered")
        await expect(card.locator(".text")).to_have_text("bees dance")
        notice = page.locator(".msg.notice")
        await expect(notice).to_have_count(1)
        await expect(notice).to_contain_text("completed]")
        await expect(page.locator(".msg.assistant")).to_have_text(["started, will report", "the research is in: bees dance"])
        await expect(page.locator("#status")).to_have_text("done")
        await expect(page.locator(".msg.user")).to_have_count(1)
        await expect(page.locator(".sub")).to_have_count(1)  # the run's end does not add or reopen a card
        await expect(card).to_have_class("sub done")
        await page.screenshot(path=str(ARTIFACTS / "background-answered.png"))

        # a reload: the thread's history still has the notice and the answer
        await page.reload()
        await expect(page.locator("#threads li")).to_have_count(2, timeout=10_000)  # the stored thread and a new one
        await page.locator('#threads button[aria-current="false"]').click()
        await expect(page.locator(".msg.user")).to_have_text(["how do bees talk?"])
        await expect(page.locator(".msg.notice")).to_contain_text(["completed]\nbees dance"])
        await expect(page.locator(".msg.assistant")).to_have_text(["started, will report", "the research is in: bees dance"])
