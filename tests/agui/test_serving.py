"""Serving safely (SPEC §19) over real HTTP: the token, the Host check, the limits, the
owner of a delegation's thread, and malformed requests answered with a code, never a 500.
One server (uvicorn in a thread) for the app's checks; `supervisor-graph serve` in a
subprocess for the command's flags and the page's token flow in headless Chromium."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

import httpx
import pytest

from bench.aegra import free_port, running
from supervisor_graph import Memory
from supervisor_graph.agui import create_app
from supervisor_graph.cli.main import main
from tests.agui.browser import chromium
from tests.agui.conftest import RECORDINGS, ThreadServer, boss, delegate, researcher
from tests.agui.test_endpoint import body

TOKEN = "s3cret-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
HISTORY = "/_playground/agent/threads"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The app with a token, a 4000-byte body limit, and the user from `x-user` (a
    request without it makes the callable raise KeyError)."""
    storage = f"file:{tmp_path_factory.mktemp('serving') / 'threads.db'}"
    agent = boss({"research": researcher()}, delegate("research", "owls"), storage=storage)
    app = create_app(agent, resource_id=lambda request: request.headers["x-user"], auth_token=TOKEN, max_body_bytes=4000)
    with ThreadServer(app) as served:
        yield served.url, storage


async def _run(client: httpx.AsyncClient, url: str, thread: str, user: str | None = "alice", path: str = "/agent") -> Any:
    """The SSE events of one run, or the response when it was refused before streaming."""
    headers = {**BEARER, **({"x-user": user} if user else {})}
    response = await client.post(f"{url}{path}", json=body(thread, "research owls"), headers=headers)
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        return response
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=20) as http:
        yield http


async def test_a_delegation_thread_is_refused_like_its_parent(server, client) -> None:
    url, storage = server
    assert (await _run(client, url, "alice-1"))[-1]["type"] == "RUN_FINISHED"
    memory = Memory(storage)
    try:
        [child] = [t.thread_id for t in await memory.list_threads() if t.parent_thread_id == "alice-1"]
    finally:
        await memory.aclose()
    assert child.startswith("alice-1::research")

    for thread in ("alice-1", child):
        seen = await client.get(f"{url}{HISTORY}/{quote(thread)}", headers={**BEARER, "x-user": "bob"})
        assert seen.status_code == 403 and seen.json()["code"] == "THREAD_FORBIDDEN", seen.text
        assert "owls" not in seen.text
    own = await client.get(f"{url}{HISTORY}/{quote(child)}", headers={**BEARER, "x-user": "alice"})
    assert own.status_code == 200 and "- fact one" in own.text
    # a run naming it: Bob is refused as on the parent; nobody can run a delegation's thread
    assert (await _run(client, url, child, "bob"))[-1]["code"] == "THREAD_FORBIDDEN"
    assert (await _run(client, url, child, "alice"))[-1]["code"] == "INVALID_THREAD_ID"


async def test_every_api_route_needs_the_token_but_the_page_loads(server, client) -> None:
    url, _ = server
    user = {"x-user": "alice"}
    for method, path in [
        ("GET", "/agent/capabilities"),
        ("POST", "/agent"),
        ("GET", HISTORY),
        ("GET", f"{HISTORY}/alice-1"),
        ("POST", "/_playground/agent"),
        ("GET", "/openapi.json"),
    ]:
        payload = body("t-token") if method == "POST" else None
        missing = await client.request(method, f"{url}{path}", json=payload, headers=user)
        wrong = await client.request(method, f"{url}{path}", json=payload, headers={**user, "Authorization": "Bearer nope"})
        assert (missing.status_code, missing.json()["code"]) == (401, "AUTH_REQUIRED"), path
        assert (wrong.status_code, wrong.json()["code"]) == (401, "AUTH_INVALID"), path
    assert (await client.get(f"{url}/agent/capabilities", headers=BEARER)).status_code == 200
    for open_path in ("/", "/playground/app.js", "/agent/health", "/_playground/agent/health"):
        assert (await client.get(f"{url}{open_path}")).status_code == 200, open_path


async def test_a_foreign_host_header_gets_400(server, client) -> None:
    url, _ = server
    port = urlparse(url).port
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", ""):
        refused = await client.get(f"{url}/agent/health", headers={"Host": host})
        assert (refused.status_code, refused.json()["code"]) == (400, "HOST_NOT_ALLOWED"), host
    for host in (f"localhost:{port}", f"[::1]:{port}", "127.0.0.1"):
        assert (await client.get(f"{url}/", headers={"Host": host})).status_code == 200, host
    with ThreadServer(create_app(researcher(), allowed_hosts=["*"])) as anywhere:
        assert (await client.get(f"{anywhere.url}/agent/health", headers={"Host": "evil.example"})).status_code == 200


async def test_limits_answer_413_and_422(server, client) -> None:
    url, _ = server
    headers = {**BEARER, "x-user": "alice", "content-type": "application/json"}
    big = json.dumps(body("t-big", "x" * 5000)).encode()
    declared = await client.post(f"{url}/agent", content=big, headers=headers)
    assert (declared.status_code, declared.json()["code"]) == (413, "BODY_TOO_LARGE")

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        for start in range(0, len(big), 1000):
            yield big[start : start + 1000]

    streamed = await client.post(f"{url}/agent", content=chunks(), headers=headers)
    assert (streamed.status_code, streamed.json()["code"]) == (413, "BODY_TOO_LARGE")
    assert (await client.post(f"{url}/agent", content=big[:3000], headers=headers)).json()["code"] == "INVALID_REQUEST"

    long = "t" * 257
    assert (await _run(client, url, long)).status_code == 422
    read = await client.get(f"{url}{HISTORY}/{long}", headers={**BEARER, "x-user": "alice"})
    assert (read.status_code, read.json()["code"]) == (422, "INVALID_THREAD_ID")
    assert (await client.get(f"{url}{HISTORY}/{long[:256]}", headers={**BEARER, "x-user": "alice"})).status_code == 200


async def test_malformed_requests_get_a_code_never_a_500(server, client) -> None:
    url, _ = server
    no_user = await client.get(f"{url}{HISTORY}", headers=BEARER)
    assert (no_user.status_code, no_user.json()["code"]) == (401, "RESOURCE_REQUIRED")
    assert (await _run(client, url, "t-nobody", user=None))[-1]["code"] == "RESOURCE_REQUIRED"
    for thread in ("", "::", "::x", "a\x00b", "a\nb", "a\x1fb", "a\x7fb", "a/b", ".", ".."):
        refused = await _run(client, url, thread)
        assert (refused.status_code, refused.json()["code"]) == (422, "INVALID_THREAD_ID"), repr(thread)
    for segment in ("%3A%3A", "a%00b", "a%0Ab", "%3A%3Aresearch"):
        read = await client.get(f"{url}{HISTORY}/{segment}", headers={**BEARER, "x-user": "alice"})
        assert (read.status_code, read.json()["code"]) == (422, "INVALID_THREAD_ID"), segment
    for content in (b"{not json", b'{"threadId": "t"}'):
        bad = await client.post(f"{url}/agent", content=content, headers={**BEARER, "content-type": "application/json"})
        assert (bad.status_code, bad.json()["code"]) == (422, "INVALID_REQUEST")
    missing = await client.get(f"{url}/nowhere", headers=BEARER)
    assert (missing.status_code, missing.json()["code"]) == (404, "NOT_FOUND")


async def test_a_body_that_is_not_json_is_422_whatever_failed_in_the_parser(client) -> None:
    """Not UTF-8, nested past Python's recursion limit, a number of 5,000 digits: FastAPI
    answered these 400 BAD_REQUEST; like any body that is not JSON they are 422
    INVALID_REQUEST, with a `json_invalid` issue that says why in our words."""
    headers = {"content-type": "application/json"}
    with ThreadServer(create_app(researcher())) as served:
        for content, why in (
            (b'{"threadId": "\xff\xfe"}', "not UTF-8"),
            (b"[" * 10_000 + b"]" * 10_000, "too deep"),
            (b'{"threadId": "t", "runId": ' + b"9" * 5000 + b"}", "number"),
        ):
            bad = await client.post(f"{served.url}/agent", content=content, headers=headers)
            assert (bad.status_code, bad.json()["code"]) == (422, "INVALID_REQUEST"), bad.text
            [issue] = bad.json()["detail"]
            assert issue["type"] == "json_invalid" and issue["loc"] == ["body"], issue
            assert why in issue["msg"], issue
            assert "codec" not in bad.text and "recursion" not in bad.text


async def test_the_openapi_document_describes_the_refusals(server, client) -> None:
    """Every 422 the app sends has the shape the document gives it (a Refusal, not
    FastAPI's HTTPValidationError), and each route lists the statuses it answers."""
    url, _ = server
    document = (await client.get(f"{url}/openapi.json", headers=BEARER)).json()
    models = document["components"]["schemas"]
    assert "HTTPValidationError" not in models
    assert set(models["Refusal"]["required"]) == {"code", "detail"}
    run = document["paths"]["/agent"]["post"]
    assert set(run["responses"]) == {"200", "400", "401", "408", "413", "422"}
    assert run["responses"]["422"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Refusal"}
    assert run["security"] == [{"bearer": []}]
    assert document["paths"]["/agent/health"]["get"]["security"] == []
    history = document["paths"][HISTORY + "/{thread_id}"]["get"]
    assert {"401", "403", "404", "422", "503"} <= set(history["responses"])
    thread_id = models["RunAgentInput"]["properties"]["threadId"]
    assert thread_id["maxLength"] == 256 and thread_id["minLength"] == 1
    import re

    pattern = re.compile(thread_id["pattern"])
    for good in ("t-1", "a::b", "ü", "..."):
        assert pattern.search(good), good
    for bad in (".", "..", "a/b", "::x", "a\nb", "a\x00b", "a\u2028b"):
        assert not pattern.search(bad), bad


def test_serve_refuses_a_public_host_without_a_token(monkeypatch, capsys) -> None:
    monkeypatch.delenv("SUPERVISOR_GRAPH_AUTH_TOKEN", raising=False)
    target = f"{Path(__file__).parent / 'served.py'}:supervisor"
    assert main(["serve", target, "--host", "0.0.0.0"]) == 2
    error = capsys.readouterr().err
    assert "refusing to serve on 0.0.0.0 without a token" in error and "--auth-token" in error


async def test_the_page_takes_the_token_from_its_address(client) -> None:
    """`serve` with the token from SUPERVISOR_GRAPH_AUTH_TOKEN: the API refuses requests
    without it; the page opened at `/?token=...` drops it from the address bar, keeps it
    in the tab, and runs."""
    from playwright.async_api import async_playwright, expect

    port = free_port()
    target = f"{Path(__file__).parent / 'served.py'}:supervisor"
    command = [sys.executable, "-m", "supervisor_graph.cli", "serve", target, "--port", str(port)]
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "SUPERVISOR_GRAPH_AUTH_TOKEN": TOKEN}
    with running(command, f"{base}/agent/health", env=env, log=RECORDINGS.parent / f"supervisor-graph-serve-{port}.log"):
        assert (await client.get(f"{base}/agent/capabilities")).status_code == 401
        assert (await client.get(f"{base}/agent/health", headers={"Host": "evil.example"})).status_code == 400
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
            try:
                page = await browser.new_page()
                await page.goto(f"{base}/?token={TOKEN}")
                await expect(page).to_have_url(f"{base}/")
                assert await page.evaluate("sessionStorage.getItem('supervisor-graph-token')") == TOKEN
                await page.fill("#prompt", "hello with a token")
                await page.press("#prompt", "Enter")
                await expect(page.locator(".msg.assistant").last).to_have_text("echo: hello with a token", timeout=20_000)
                await expect(page.locator("#threads li")).to_have_count(1)
            finally:
                await browser.close()
