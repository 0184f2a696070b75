"""`supervisor-graph serve ... --mcp` (SPEC §27, issue 31 item 1): the supervisor as an
MCP server at `/mcp`, driven with the official `mcp` client session over real HTTP
against the app the serve command builds (`cli.workers.build_app`)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from pydantic import BaseModel

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from bench.aegra import free_port  # noqa: E402
from supervisor_graph import Agent, Memory, create_tool  # noqa: E402
from supervisor_graph.cli.workers import build_app  # noqa: E402
from supervisor_graph.testing import ScriptedChatModel, tool_call  # noqa: E402
from tests.mcp.serving import Served, call_tool, serve_settings  # noqa: E402

PAID: list[int] = []
TOKEN = "s3cret-token"


class Amount(BaseModel):
    amount: int


class Seconds(BaseModel):
    seconds: float


def _pay(args: Amount) -> str:
    PAID.append(args.amount)
    return f"paid {args.amount}"


# The test knows the slow call holds its thread when its tool has started (not after a
# guessed sleep a busy machine outruns), and decides when it ends by setting RELEASE.
STARTED = threading.Event()
RELEASE = threading.Event()


async def _wait(args: Seconds) -> str:
    STARTED.set()
    deadline = time.monotonic() + args.seconds  # bounded: a test that never releases still ends
    while not RELEASE.is_set() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return "waited"


def _policy(messages: list[Any]) -> Any:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return f"done: {last.content}"
    text = str(last.content)
    if text.startswith("pay"):
        return tool_call("pay", {"amount": 7})
    if text.startswith("wait"):
        return tool_call("wait", {"seconds": 60.0})
    said = [str(m.content) for m in messages if isinstance(m, HumanMessage)]
    return "you said: " + " | ".join(said)


def _agent() -> Agent:
    return Agent(
        id="help-desk",
        description="Answers questions.",
        model=ScriptedChatModel(policy=_policy, record_calls=False),
        tools=[
            create_tool(id="pay", description="Pay.", input_schema=Amount, execute=_pay, require_approval=True),
            create_tool(id="wait", description="Wait.", input_schema=Seconds, execute=_wait),
        ],
        memory=Memory(":memory:"),
    )


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with Served(build_app(_agent(), serve_settings(None))) as url:
        yield url


async def _holding(url: str, thread: str) -> asyncio.Task[Any]:
    """Start the slow call on `thread` and return once its tool runs (so the thread is
    surely held); it ends when the test sets RELEASE, or it is interrupted."""
    STARTED.clear()
    RELEASE.clear()
    slow = asyncio.create_task(_call(url, {"prompt": "wait a bit", "thread_id": thread}))
    assert await asyncio.to_thread(STARTED.wait, 60), "the slow call never reached its tool"
    return slow


async def _call(url: str, arguments: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    return await call_tool(url, "ask_help_desk", arguments, headers)


def test_lists_one_tool_named_after_the_agent(served: str) -> None:
    async def main() -> Any:
        async with streamable_http_client(f"{served}/mcp") as (read, write, _), ClientSession(read, write) as session:
            init = await session.initialize()
            return init, await session.list_tools()

    init, listed = asyncio.run(main())
    assert init.serverInfo.name == "help-desk"
    assert [t.name for t in listed.tools] == ["ask_help_desk"]
    schema = listed.tools[0].inputSchema
    assert set(schema["properties"]) == {"prompt", "thread_id", "on_busy"}
    assert set(schema["properties"]["on_busy"]["anyOf"][0]["enum"]) == {"reject", "enqueue", "interrupt", "rollback"}
    assert schema["required"] == ["prompt"]


def test_answers_and_continues_the_thread(served: str) -> None:
    first = asyncio.run(_call(served, {"prompt": "hello", "thread_id": "mcp-conv"}))
    assert not first.isError
    assert first.content[0].text == "you said: hello"
    assert first.structuredContent["thread_id"] == "mcp-conv"
    second = asyncio.run(_call(served, {"prompt": "again", "thread_id": "mcp-conv"}))
    assert second.content[0].text == "you said: hello | again"
    # without a thread id each call is a thread of its own, named in the result
    fresh = asyncio.run(_call(served, {"prompt": "alone"}))
    assert fresh.content[0].text == "you said: alone"
    assert fresh.structuredContent["thread_id"].startswith("mcp-")


def test_a_paused_approval_names_what_waits_and_where_to_answer(served: str) -> None:
    PAID.clear()
    result = asyncio.run(_call(served, {"prompt": "pay the bill", "thread_id": "mcp-pay"}))
    assert not result.isError
    text = result.content[0].text
    assert result.structuredContent["status"] == "paused"
    (waiting,) = result.structuredContent["waiting"]
    assert waiting["tool_name"] == "pay" and waiting["args"] == {"amount": 7} and waiting["kind"] == "approval"
    assert "'pay'" in text and '{"amount": 7}' in text and waiting["interrupt_id"] in text
    assert f"{served}/" in text and f"{served}/agent" in text and "resume" in text
    assert PAID == []
    # the thread waits for a person: another call on it is refused, nothing runs
    again = asyncio.run(_call(served, {"prompt": "hello", "thread_id": "mcp-pay"}))
    assert again.isError and again.content[0].text.startswith("INTERRUPT_PENDING")
    assert PAID == []


def test_a_busy_thread_and_a_bad_thread_id_are_tool_errors(served: str) -> None:
    async def both() -> list[Any]:
        slow = await _holding(served, "mcp-busy")
        busy = await _call(served, {"prompt": "hello", "thread_id": "mcp-busy"})
        RELEASE.set()
        return [busy, await slow]

    busy, slow = asyncio.run(both())
    assert busy.isError and busy.content[0].text.startswith("THREAD_BUSY")
    assert slow.content[0].text == "done: waited"
    long = asyncio.run(_call(served, {"prompt": "hi", "thread_id": "x" * 65}))
    assert long.isError and long.content[0].text.startswith("INVALID_THREAD_ID")


def test_on_busy_interrupts_or_queues_behind_a_running_call(served: str) -> None:
    async def both(on_busy: str, thread: str) -> list[Any]:
        slow = await _holding(served, thread)
        second = asyncio.create_task(_call(served, {"prompt": "hello", "thread_id": thread, "on_busy": on_busy}))
        if on_busy == "enqueue":
            # queued behind the held thread: it cannot answer before the slow call ends
            done, _ = await asyncio.wait([second], timeout=1.0)
            assert not done, second.result()
            RELEASE.set()
        return [await second, await slow]

    second, slow = asyncio.run(both("interrupt", "mcp-interrupt"))
    assert second.content[0].text == "you said: wait a bit | hello"  # with the stopped call's context
    assert not slow.isError and slow.structuredContent["status"] == "stopped"  # stopped before it answered
    assert slow.content[0].text.startswith("The run was stopped before it answered")
    second, slow = asyncio.run(both("enqueue", "mcp-enqueue"))
    assert slow.content[0].text == "done: waited" and second.content[0].text == "you said: wait a bit | hello"
    wrong = asyncio.run(_call(served, {"prompt": "hi", "thread_id": "mcp-enqueue", "on_busy": "later"}))
    assert wrong.isError and "enqueue" in wrong.content[0].text


def test_the_token_guards_mcp() -> None:
    with Served(build_app(_agent(), serve_settings(TOKEN))) as url:
        for headers, code in ((None, "AUTH_REQUIRED"), ({"Authorization": "Bearer wrong"}, "AUTH_INVALID")):
            refused = httpx.post(f"{url}/mcp", json={}, headers=headers)
            assert refused.status_code == 401 and refused.json()["code"] == code
            with pytest.raises(Exception):  # noqa: B017 - the client's own error for a 401
                asyncio.run(_call(url, {"prompt": "hello"}, headers=headers))
        result = asyncio.run(_call(url, {"prompt": "hello"}, headers={"Authorization": f"Bearer {TOKEN}"}))
        assert result.content[0].text == "you said: hello"
        wrong_host = httpx.post(f"{url}/mcp", json={}, headers={"Host": "evil.example"})
        assert wrong_host.status_code == 400


def test_the_serve_command_with_mcp(tmp_path: Any) -> None:
    """`supervisor-graph serve tests/agui/served.py:supervisor --mcp --auth-token ...` in a
    subprocess: the tool answers, and a subagent's tool waiting for approval is named."""
    import os
    import sys
    from pathlib import Path

    from bench.aegra import running

    port = free_port()
    target = f"{Path(__file__).parents[1] / 'agui' / 'served.py'}:supervisor"
    command = [sys.executable, "-m", "supervisor_graph.cli", "serve", target, "--port", str(port), "--mcp"]
    command += ["--auth-token", TOKEN]
    url = f"http://127.0.0.1:{port}"
    with running(command, f"{url}/agent/health", env=dict(os.environ), log=tmp_path / "serve.log"):
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.post(f"{url}/mcp", json={}).status_code == 401
        answered = asyncio.run(call_tool(url, "ask_supervisor", {"prompt": "hello", "thread_id": "cli-1"}, auth))
        assert answered.content[0].text == "echo: hello"
        paused = asyncio.run(call_tool(url, "ask_supervisor", {"prompt": "pay 30", "thread_id": "cli-2"}, auth))
        assert paused.structuredContent["status"] == "paused"
        assert [w["tool_name"] for w in paused.structuredContent["waiting"]] == ["pay"]
    assert "and over MCP at" in (tmp_path / "serve.log").read_text()
