"""The playground page (SPEC §22) end to end in a real headless Chromium
(tests/agui/browser.py: Debian's chromium, other hosts blocked, screenshots saved)."""

from __future__ import annotations

from tests.agui.browser import ARTIFACTS, offline_page


async def test_the_playground_shows_the_team_at_work(served_cli: str) -> None:
    from playwright.async_api import expect

    base = served_cli.rsplit("/agent", 1)[0]
    async with offline_page() as page:
        await page.goto(f"{base}/")
        await expect(page.locator("#agent-name")).to_have_text("supervisor")

        # 1. two delegations, shown live: the quick one finishes while the slow one works
        await page.fill("#prompt", "both at once please")
        await page.press("#prompt", "Enter")  # the keyboard sends
        await expect(page.locator('.sub[data-subagent="research-agent"].done')).to_be_visible(timeout=20_000)
        await expect(page.locator('.sub[data-subagent="slow-agent"].running')).to_be_visible()
        await page.screenshot(path=str(ARTIFACTS / "delegations-live.png"))
        await expect(page.locator(".msg.assistant").last).to_contain_text("final:", timeout=20_000)
        await expect(page.locator(".sub.done")).to_have_count(2)
        await expect(page.locator('.sub[data-subagent="research-agent"] .text')).to_have_text("- the sky is blue")
        await expect(page.locator('.sub[data-subagent="research-agent"] .meta')).to_contain_text("tokens")

        # 2. a second turn on the same thread
        await page.fill("#prompt", "hello again")
        await page.click("#send")
        await expect(page.locator(".msg.assistant").last).to_have_text("echo: hello again", timeout=20_000)
        await expect(page.locator(".msg.user")).to_have_count(2)
        await expect(page.locator('#threads button[aria-current="true"]')).to_have_count(1)

        # 3. an approval, clicked (its arguments shown first)
        await page.fill("#prompt", "pay the invoice")
        await page.press("#prompt", "Enter")
        card = page.locator(".approval")
        await expect(card).to_contain_text("pay waits for approval", timeout=20_000)
        await card.get_by_role("button", name="Arguments").click()
        await expect(card.locator('.args dd[data-arg="amount"]')).to_have_text("12")
        await page.screenshot(path=str(ARTIFACTS / "approval.png"))
        await card.get_by_role("button", name="Approve").click()
        await expect(page.locator(".msg.assistant").last).to_contain_text("payer: paid 12", timeout=20_000)
        await expect(page.locator("#status")).to_have_text("done")

        # 4. a cancel, on a new thread
        await page.click("#new-thread")
        await page.fill("#prompt", "something slow")
        await page.press("#prompt", "Enter")
        await expect(page.locator('.sub[data-subagent="slow-agent"].running')).to_be_visible(timeout=20_000)
        await page.click("#cancel")
        await expect(page.locator("#status")).to_have_text("cancelled")
        await expect(page.locator('.sub[data-subagent="slow-agent"] .state')).to_contain_text("cancelled")

        # 5. the thread list and a thread's history
        await expect(page.locator("#threads li")).to_have_count(2, timeout=10_000)
        await page.locator('#threads button[aria-current="false"]').first.click()
        await expect(page.locator(".msg.user").first).to_have_text("both at once please")
        await page.screenshot(path=str(ARTIFACTS / "history.png"))

        # 6. a suspended tool's form, checked against its resume schema, used with the keyboard
        await page.fill("#prompt", "which account?")
        await page.press("#prompt", "Enter")
        form = page.locator("form.suspend")
        await expect(form).to_contain_text("Which account should I use?", timeout=20_000)
        await form.locator('input[name="account"]').fill("ACME-7")
        await form.locator('input[name="seats"]').fill("2.5")
        await form.locator('input[name="seats"]').press("Enter")
        await expect(form.locator(".field-error")).to_contain_text(["", "a whole number"])
        await form.locator('input[name="seats"]').fill("3")
        await form.locator('input[name="seats"]').press("Enter")
        await expect(page.locator(".msg.assistant").last).to_contain_text("using ACME-7 for 3 seats", timeout=20_000)

        # 7. the working memory (shared state) as the agent updates it
        await page.fill("#prompt", "remember green tea")
        await page.press("#prompt", "Enter")
        await expect(page.locator("#memory")).to_contain_text('"favourite": "green tea"', timeout=20_000)

        # 8. readable on a narrow window
        await page.set_viewport_size({"width": 480, "height": 800})
        await expect(page.locator("#composer")).to_be_visible()
        await page.screenshot(path=str(ARTIFACTS / "narrow.png"))
