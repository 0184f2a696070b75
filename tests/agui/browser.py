"""Headless Chromium for the playground tests: Debian's `chromium`, driven by Playwright
for Python with `executable_path` (never `playwright install`), every request to a host
other than this machine blocked. Screenshots go under `ARTIFACTS` (`SG_ARTIFACTS`,
default `<tmp>/supervisor-graph-artifacts/playground`)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

ARTIFACTS = Path(os.environ.get("SG_ARTIFACTS", Path(tempfile.gettempdir()) / "supervisor-graph-artifacts")) / "playground"


def chromium() -> str:
    """Debian's chromium; a loud skip without it (a failure under CI)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "PLAYGROUND TEST CANNOT RUN: Debian's chromium is missing (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        print(f"\n{'!' * 20} {message} {'!' * 20}")
        pytest.skip(message)
    return found


@asynccontextmanager
async def offline_page(width: int = 1280, height: int = 800) -> AsyncIterator[Any]:
    """A page that may reach this machine only; at the end, checks it asked for no other host."""
    from playwright.async_api import async_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    blocked: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": width, "height": height})

            async def guard(route: Any) -> None:
                if urlparse(route.request.url).hostname in ("127.0.0.1", "localhost"):
                    await route.continue_()
                else:
                    blocked.append(route.request.url)
                    await route.abort()

            await page.route("**/*", guard)
            yield page
        finally:
            await browser.close()
    assert blocked == [], f"the page asked for other hosts: {blocked}"
