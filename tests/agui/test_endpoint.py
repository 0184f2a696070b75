"""The endpoint over real HTTP on loopback (uvicorn in a thread), read with httpx."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from ag_ui_validate.pytest_plugin import validate_agui_endpoint
from fastapi import FastAPI
from langchain_core.messages import AIMessage, ToolMessage

from supervisor_graph.agui import AGUIAgent, add_agui_endpoint
from tests.agui import served
from tests.agui.conftest import ThreadServer, make_input


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, dict[str, AGUIAgent]]]:
    bridges = {
        "agent": AGUIAgent(served.supervisor, resource_id=lambda request: request.headers.get("x-user", "web-user")),
        "attributed": AGUIAgent(served.supervisor, resource_id="web-user", subagent_visibility="attributed"),
    }
    app = FastAPI()
    add_agui_endpoint(app, bridges["agent"], "/agent", keepalive_seconds=0.3)
    add_agui_endpoint(app, bridges["attributed"], "/attributed")
    with ThreadServer(app) as running:
        yield running.url, bridges


def body(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return make_input(*args, **kwargs).model_dump(mode="json", by_alias=True, exclude_none=True)


async def post(url: str, payload: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[list[dict], list[str], httpx.Response]:
    """The SSE events and comments of one POST."""
    async with httpx.AsyncClient(timeout=20) as client:
        async with client.stream("POST", url, json=payload, headers={"accept": "text/event-stream", **(headers or {})}) as response:
            raw = "".join([chunk async for chunk in response.aiter_text()])
    frames = [f for f in raw.split("\n\n") if f]
    events = [json.loads(f.removeprefix("data: ")) for f in frames if f.startswith("data: ")]
    comments = [f for f in frames if f.startswith(":")]
    return events, comments, response


async def test_health_and_capabilities(server) -> None:
    url, _ = server
    async with httpx.AsyncClient() as client:
        health = (await client.get(f"{url}/agent/health")).json()
        assert health == {"status": "ok", "agent": "supervisor", "protocolVersion": "1.0"}
        hidden = (await client.get(f"{url}/agent/capabilities")).json()
        attributed = (await client.get(f"{url}/attributed/capabilities")).json()
    assert hidden["humanInTheLoop"]["approvals"] and hidden["humanInTheLoop"]["interrupts"]
    assert "multiAgent" not in hidden
    assert {s["name"] for s in attributed["multiAgent"]["subagents"]} == {"payer-agent", "research-agent", "slow-agent"}


async def test_a_run_streams_as_server_sent_events(server) -> None:
    url, _ = server
    events, _, response = await post(f"{url}/agent", body("t-http", "hello there"))
    assert response.headers["content-type"].startswith("text/event-stream")
    assert [e["type"] for e in events][0] == "RUN_STARTED" and events[0]["protocolVersion"] == "1.0"
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "success"}
    assert "".join(e.get("delta", "") for e in events) == "echo: hello there"


async def test_approval_round_trip_over_http(server) -> None:
    url, _ = server
    before = len(served.LEDGER)
    events, _, _ = await post(f"{url}/agent", body("t-http-pay", "pay the invoice"))
    [item] = events[-1]["outcome"]["interrupts"]
    resume = [{"interrupt_id": item["id"], "status": "resolved", "payload": {"approved": True}}]
    done, _, _ = await post(f"{url}/agent", body("t-http-pay", resume=resume))
    assert done[-1]["outcome"] == {"type": "success"} and served.LEDGER[before:] == [12]


async def test_keep_alive_comments_during_long_work(server) -> None:
    url, _ = server
    events, comments, _ = await post(f"{url}/agent", body("t-http-slow", "something slow"))
    assert events[-1]["outcome"] == {"type": "success"}
    assert len(comments) >= 3 and set(comments) == {": keep-alive"}


async def test_a_client_that_disconnects_cancels_its_run(server) -> None:
    url, bridges = server
    bridge = bridges["attributed"]
    async with httpx.AsyncClient(timeout=20) as client:
        async with client.stream("POST", f"{url}/attributed", json=body("t-http-gone", "slow please")) as response:
            async for line in response.aiter_lines():
                if "SUBAGENT_STARTED" in line:
                    break  # leave mid-run: the subagent's model call is in flight
    deadline = time.monotonic() + 10
    while not any(r.thread_id == "t-http-gone" for r in bridge.recent_runs) or bridge.active_runs:
        assert time.monotonic() < deadline, list(bridge.recent_runs)
        await asyncio.sleep(0.05)
    [record] = [r for r in bridge.recent_runs if r.thread_id == "t-http-gone"]
    assert record.outcome == "cancelled"
    # the thread is consistent: every call of the last turn has a result, and it goes on
    messages = await bridge.memory.get_messages("t-http-gone")
    calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    assert calls and set(calls) <= answered
    events, _, _ = await post(f"{url}/attributed", body("t-http-gone", "hello again"))
    assert events[-1]["outcome"] == {"type": "success"}


async def test_concurrent_clients(server) -> None:
    url, _ = server
    results = await asyncio.gather(*(post(f"{url}/agent", body(f"t-many-{i}", f"hello {i}")) for i in range(12)))
    for i, (events, _, _) in enumerate(results):
        assert events[-1]["outcome"] == {"type": "success"}
        assert "".join(e.get("delta", "") for e in events) == f"echo: hello {i}"


async def test_a_thread_of_another_user_is_forbidden_over_http(server) -> None:
    url, _ = server
    await post(f"{url}/agent", body("t-http-alice", "hi"), headers={"x-user": "alice"})
    events, _, _ = await post(f"{url}/agent", body("t-http-alice", "hi"), headers={"x-user": "bob"})
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"] and events[-1]["code"] == "THREAD_FORBIDDEN"


async def test_ag_ui_validate_on_the_live_endpoint(server) -> None:
    url, _ = server
    # the validator's own command with its own default input
    proc = subprocess.run(
        [sys.executable, "-m", "ag_ui_validate.cli", f"{url}/attributed", "--json", "--timeout", "20"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["summary"]["errors"] == 0, proc.stdout + proc.stderr
    # and its API on every kind of run: text, delegation, approval, resume, long work
    for path, payload in [
        ("agent", body("t-val-1", "research owls")),
        ("attributed", body("t-val-2", "research owls")),
        ("attributed", body("t-val-3", "pay it")),
        ("agent", body("t-val-4", "a slow one")),
    ]:
        found = await validate_agui_endpoint(f"{url}/{path}", input=payload, timeout_ms=20_000)
        errors = [f"{d.rule}: {d.message}" for d in found.diagnostics if d.severity == "error"]
        assert not errors, (path, errors)
