"""examples/copilotkit end to end: CopilotKit's v2 runtime (an `HttpAgent` pointed at
`supervisor-graph serve`'s `/agent`) and its React chat, driven in Debian's chromium
(tests/agui/browser.py): the demo's delegations shown as they happen, the `publish`
approval as a card through `useInterrupt`, approved, edited or rejected.

The example's packages come from its package-lock.json (`npm ci`, from npm's cache in
~/.npm once downloaded); node_modules is reinstalled only when the lock file changes and
the page rebuilt only when a source changes. Without node and npm, or where the npm
registry cannot be reached, the test is skipped loudly (a failure under CI).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.aegra import free_port, running
from tests.agui.browser import ARTIFACTS, offline_page
from tests.npm import unavailable

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "copilotkit"
WHAT = "the CopilotKit example test"
AGENT_ID = "research_write"  # examples/copilotkit/src/agent.ts
PROMPT = "Research bees, write a short article and publish it."
# npm's words for a registry it cannot reach (no network, a proxy refusing, DNS)
UNREACHABLE = re.compile(
    r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network|proxy", re.I
)
LOGS = ARTIFACTS.parent / "copilotkit"


def _run(command: list[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=EXAMPLE, capture_output=True, text=True, timeout=timeout)


def _install(npm: str) -> None:
    """`npm ci` unless node_modules was installed from this very lock file."""
    lock = hashlib.sha256((EXAMPLE / "package-lock.json").read_bytes()).hexdigest()
    stamp = EXAMPLE / "node_modules" / ".supervisor-graph-lock"
    if stamp.is_file() and stamp.read_text() == lock:
        return
    try:
        # no install scripts: esbuild's binary comes as a package of its own, and the
        # others only report usage
        proc = _run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline"], timeout=600)
    except subprocess.TimeoutExpired:
        unavailable(WHAT, "npm ci timed out after 10 minutes (is the npm registry reachable?)")
    if proc.returncode != 0:
        if UNREACHABLE.search(proc.stderr):
            unavailable(WHAT, f"npm ci cannot reach the npm registry:\n{proc.stderr[-2000:]}")
        pytest.fail(f"npm ci failed in {EXAMPLE}:\n{proc.stderr[-4000:]}")
    stamp.write_text(lock)


def _build(node: str) -> None:
    """`node build.mjs` unless dist/ is newer than every source."""
    stamp = EXAMPLE / "dist" / ".built"
    sources = [EXAMPLE / "build.mjs", EXAMPLE / "package-lock.json", *(EXAMPLE / "src").rglob("*")]
    if stamp.is_file() and stamp.stat().st_mtime >= max(p.stat().st_mtime for p in sources):
        return
    proc = _run([node, "build.mjs"], timeout=300)
    assert proc.returncode == 0, f"the example's build failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    stamp.touch()


@pytest.fixture(scope="module")
def example() -> Path:
    """The example, installed and built."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        unavailable(WHAT, "node and npm must be on PATH (Node 20 or newer)")
    version = _run([node, "--version"], timeout=30).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 20:
        unavailable(WHAT, f"CopilotKit's runtime needs Node 20 or newer, not {version}")
    _install(npm)
    _build(node)
    return EXAMPLE


@pytest.fixture(scope="module")
def page_url(example: Path) -> Iterator[str]:
    """`supervisor-graph serve` on the demo (scripted model, attributed subagents) and the
    example's runtime + page in front of it; yields the page's URL."""
    LOGS.mkdir(parents=True, exist_ok=True)
    agent_port, page_port = free_port(), free_port()
    agent_url = f"http://127.0.0.1:{agent_port}/agent"
    target = f"{Path(__file__).parent / 'slow_demo.py'}:agent"  # the docs' demo, 0.3 s a model call
    serve = [sys.executable, "-m", "supervisor_graph.cli", "serve", target]
    serve += ["--port", str(agent_port), "--subagents", "attributed"]
    runtime_env = {
        **os.environ,
        "AGENT_URL": agent_url,
        "PORT": str(page_port),
        "COPILOTKIT_TELEMETRY_DISABLED": "true",
        "DO_NOT_TRACK": "1",
    }
    with (
        running(serve, f"{agent_url}/health", env=dict(os.environ), log=LOGS / "serve.log"),
        running(
            ["node", "dist/server.mjs"],
            f"http://127.0.0.1:{page_port}/health",
            env=runtime_env,
            log=LOGS / "runtime.log",
            cwd=example,
        ),
    ):
        yield f"http://127.0.0.1:{page_port}/"


def test_the_example_typechecks(example: Path) -> None:
    proc = _run(["npx", "--no-install", "tsc", "-p", "."], timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_the_runtime_serves_the_agent_under_its_id_only(page_url: str) -> None:
    info = httpx.get(f"{page_url}api/copilotkit/info", timeout=10).json()
    assert list(info["agents"]) == [AGENT_ID]
    # what a chat without agentId asks for: the pitfall docs/agui.md names
    missing = httpx.post(f"{page_url}api/copilotkit/agent/default/run", json={}, timeout=10)
    assert missing.status_code == 404 and "Agent 'default' does not exist" in missing.text


async def _ask_until_approval(page: object, url: str | None = None) -> object:
    """Sends the demo's request (opening `url` first, else on the page's thread); checks
    each delegation showed up while it ran and ended done; returns the approval card."""
    from playwright.async_api import Page, expect

    assert isinstance(page, Page)
    if url is not None:
        await page.goto(url)
        # a message typed before the runtime's /info answers would go to a stand-in agent
        await expect(page.get_by_test_id("connection")).to_have_text(f"connected to {AGENT_ID}", timeout=30_000)
    turn = await page.locator('[data-testid="delegation"][data-agent="research_agent"]').count()
    box = page.get_by_placeholder("Type a message...")
    await box.fill(PROMPT)
    await box.press("Enter")
    research = page.locator('[data-testid="delegation"][data-agent="research_agent"]').nth(turn)
    writing = page.locator('[data-testid="delegation"][data-agent="writing_agent"]').nth(turn)
    # each card is there from the call on, named after the subagent SUBAGENT_STARTED announced
    await expect(research).to_have_attribute("data-subagent", "research-agent", timeout=30_000)
    await expect(research).to_have_attribute("data-status", "done", timeout=30_000)
    result = research.locator('[data-testid="delegation-result"]')
    await expect(result).to_contain_text("- What it is: bees", use_inner_text=False)
    await expect(writing).to_have_attribute("data-subagent", "writing-agent", timeout=30_000)
    await expect(writing).to_have_attribute("data-status", "done", timeout=30_000)
    await expect(writing).to_contain_text("Write a short article about bees")
    card = page.get_by_test_id("approval-card")
    await expect(card).to_be_visible(timeout=30_000)
    await expect(card).to_have_attribute("data-tool", "publish")
    await expect(card).to_contain_text("called by parent-agent")
    await expect(card.get_by_test_id("arg-title")).to_have_text("Bees: what we know")
    article = card.get_by_test_id("arg-article")
    await expect(article).to_contain_text("# Bees: what we know\n\nWhat should you know about bees?")
    return card


# Every status each delegation card shows, in order, by its tool call id.
RECORD_STATES = """
window.delegationStates = {};
new MutationObserver(() => {
  for (const card of document.querySelectorAll('[data-testid="delegation"]')) {
    const seen = (window.delegationStates[card.dataset.toolCallId] ??= []);
    if (seen.at(-1) !== card.dataset.status) seen.push(card.dataset.status);
  }
}).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-status"] });
"""


async def test_delegations_show_as_they_happen_and_the_approval_publishes(page_url: str) -> None:
    from playwright.async_api import expect

    async with offline_page() as page:
        await page.add_init_script(RECORD_STATES)
        card = await _ask_until_approval(page, page_url)
        # each card came with the call and said "working" until the subagent was done
        assert list((await page.evaluate("window.delegationStates")).values()) == [["working", "done"]] * 2
        await page.screenshot(path=str(LOGS / "approval.png"))
        await card.get_by_test_id("approve").click()
        answer = page.get_by_test_id("copilot-assistant-message").last
        await expect(answer).to_contain_text(
            "Published 'Bees: what we know' at /blog/bees-what-we-know", timeout=30_000
        )
        await expect(answer).to_contain_text("Here is your article on bees.")
        await expect(page.get_by_test_id("approval-card")).to_have_count(0)
        await expect(page.get_by_test_id("tool-call").and_(page.locator('[data-tool="publish"]'))).to_have_attribute(
            "data-status", "done"
        )
        # the subagents' own text sits in their cards, not as the supervisor's messages
        await expect(page.get_by_text("Here is your article on bees.")).to_have_count(1)
        # (the research agent's bullet points as chat markdown would be list items)
        await expect(page.get_by_test_id("copilot-assistant-message").locator("li")).to_have_count(0)
        await expect(page.get_by_test_id("copilot-error-banner")).to_have_count(0)
        await page.screenshot(path=str(LOGS / "published.png"), full_page=True)


async def test_an_edited_title_is_published_with_the_article_untouched(page_url: str) -> None:
    from playwright.async_api import expect

    async with offline_page() as page:
        card = await _ask_until_approval(page, page_url)
        await card.get_by_test_id("edit").click()
        article = await card.get_by_test_id("arg-article").input_value()
        await card.get_by_test_id("arg-title").fill("Bees, edited\nat two lines")
        await card.get_by_test_id("run-edited").click()
        # the title kept its line break; the article went back as it came (the word count
        # the tool reports is the original's)
        published = (
            f"Published 'Bees, edited\\nat two lines' at /blog/bees-edited-at-two-lines ({len(article.split())} words)."
        )
        answer = page.get_by_test_id("copilot-assistant-message").last
        await expect(answer).to_contain_text(published, timeout=30_000)
        await expect(page.get_by_test_id("tool-call").and_(page.locator('[data-tool="publish"]'))).to_have_text(
            re.compile(re.escape(published))
        )


async def test_a_rejection_with_or_without_a_reason_reaches_the_agent(page_url: str) -> None:
    """Without a reason the card cancels the interrupt (resume status "cancelled"), with
    one it resolves it with {approved: false, message}; two turns of one thread."""
    from playwright.async_api import expect

    declined = "Not published: The user declined this tool call"
    async with offline_page() as page:
        card = await _ask_until_approval(page, page_url)
        await card.get_by_test_id("reject").click()
        await card.get_by_test_id("confirm-reject").click()
        await expect(page.get_by_text(declined)).to_have_count(1, timeout=30_000)
        await expect(page.get_by_test_id("approval-card")).to_have_count(0)

        card = await _ask_until_approval(page)
        await card.get_by_test_id("reject").click()
        await card.get_by_test_id("reject-reason").fill("not before the editor reads it")
        await card.get_by_test_id("confirm-reject").click()
        refused = page.get_by_text(declined)
        await expect(refused).to_have_count(2, timeout=30_000)
        await expect(refused.last).to_contain_text("not before the editor reads it")
        await expect(page.get_by_text("Published '")).to_have_count(0)
        await page.screenshot(path=str(LOGS / "rejected.png"), full_page=True)
