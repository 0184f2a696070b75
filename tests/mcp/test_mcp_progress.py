"""MCP progress and logging (SPEC §27 "MCP progress", issue 36): a `tools/call` with a
progress token hears `notifications/progress` as the run advances, each delegation
started and finished with its subagent named, in order, over the stateless streamable
HTTP endpoint the serve command builds, with the official `mcp` client
(`ClientSession.call_tool(progress_callback=...)`, `logging_callback`)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage, ToolMessage

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.types import LoggingMessageNotificationParams  # noqa: E402

from supervisor_graph import Agent, Memory  # noqa: E402
from supervisor_graph.cli.workers import build_app  # noqa: E402
from supervisor_graph.testing import ScriptedChatModel, delegate  # noqa: E402
from tests.mcp.serving import Served, serve_settings  # noqa: E402

Heard = list[tuple[float, float | None, str | None]]


def _after_tools(first: Any, then: str) -> Any:
    def policy(messages: list[Any]) -> Any:
        return then + ": " + str(messages[-1].content) if isinstance(messages[-1], ToolMessage) else first

    return policy


def _route(messages: list[Any]) -> Any:
    """Research first, then write; "fail" delegates to a subagent whose model raises."""
    ask = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
    done = [m.name for m in messages if isinstance(m, ToolMessage)]
    if ask.startswith("fail") and not done:
        return delegate("broken", ask)
    if not done:
        return delegate("researcher", ask)
    if done == ["agent-researcher"]:
        return delegate("writer", ask)
    return "final: " + " | ".join(str(m.content) for m in messages if isinstance(m, ToolMessage))


def _agent() -> Agent:
    checker = Agent(id="fact-checker", description="Checks facts.", model=ScriptedChatModel(responses=["checked"] * 20))
    researcher = Agent(
        id="research-agent",
        description="Finds facts.",
        agents={"checker": checker},
        model=ScriptedChatModel(policy=_after_tools(delegate("checker", "check"), "facts"), record_calls=False),
    )
    writer = Agent(id="writer-agent", description="Writes.", model=ScriptedChatModel(responses=["a draft"] * 20))
    broken = Agent(
        id="broken-agent",
        description="Always fails.",
        model=ScriptedChatModel(responses=[RuntimeError("model down")] * 20),
    )
    return Agent(
        id="desk",
        description="Researches and writes.",
        agents={"researcher": researcher, "writer": writer, "broken": broken},
        model=ScriptedChatModel(policy=_route, record_calls=False),
        memory=Memory(":memory:"),
    )


async def _ask(
    url: str, prompt: str, *, progress: bool = True
) -> tuple[Any, Heard, list[LoggingMessageNotificationParams]]:
    heard: Heard = []
    logged: list[LoggingMessageNotificationParams] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logged.append(params)

    async with (
        streamable_http_client(f"{url}/mcp") as (read, write, _),
        ClientSession(read, write, logging_callback=on_log) as session,
    ):
        init = await session.initialize()
        assert init.capabilities.logging is not None
        result = await session.call_tool(
            "ask_desk", {"prompt": prompt}, progress_callback=on_progress if progress else None
        )
    return result, heard, logged


@pytest.fixture(scope="module")
def hidden() -> Any:
    """The serve command's default: `--subagents hidden`."""
    with Served(build_app(_agent(), serve_settings(None))) as url:
        yield url


def test_progress_names_each_delegation_in_order(hidden: str) -> None:
    result, heard, logged = asyncio.run(_ask(hidden, "write about tea"))
    assert result.content[0].text == "final: facts: checked | a draft"
    assert [m for _, _, m in heard] == [
        "Delegation to research-agent started.",
        "Delegation to research-agent finished.",
        "Delegation to writer-agent started.",
        "Delegation to writer-agent finished.",
        "The run finished.",
    ]
    assert [p for p, _, _ in heard] == [1, 2, 3, 4, 5]  # a counter that only goes up
    assert {t for _, t, _ in heard} == {None}  # how many delegations a run makes is unknown
    # the same lines as log messages (the logging capability)
    assert [(m.level, m.logger, m.data) for m in logged] == [("info", "supervisor_graph", m) for _, _, m in heard]


def test_without_a_token_only_log_lines_come(hidden: str) -> None:
    result, heard, logged = asyncio.run(_ask(hidden, "write again", progress=False))
    assert not result.isError and heard == []
    assert [m.data for m in logged][0] == "Delegation to research-agent started."


def test_attributed_subagents_show_every_delegation_with_who_delegated() -> None:
    with Served(build_app(_agent(), serve_settings(None, "--subagents", "attributed"))) as url:
        result, heard, logged = asyncio.run(_ask(url, "write about coffee"))
        failed, failed_heard, failed_logged = asyncio.run(_ask(url, "fail please"))
    assert result.content[0].text == "final: facts: checked | a draft"
    assert [m for _, _, m in heard] == [
        "Delegation to research-agent started.",
        "Delegation to fact-checker started (by research-agent).",
        "Delegation to fact-checker finished.",
        "Delegation to research-agent finished.",
        "Delegation to writer-agent started.",
        "Delegation to writer-agent finished.",
        "The run finished.",
    ]
    assert [p for p, _, _ in heard] == list(range(1, 8))
    # a subagent that fails: a warning; the supervisor is told and answers
    assert [m for _, _, m in failed_heard][:2] == [
        "Delegation to broken-agent started.",
        "Delegation to broken-agent failed (SUBAGENT_ERROR).",
    ]
    assert [m.level for m in failed_logged][:2] == ["info", "warning"]
    assert not failed.isError


def test_a_paused_run_says_so() -> None:
    """A delegation that waits for approval never finishes in this call: the last line
    says the run paused."""
    from pydantic import BaseModel

    from supervisor_graph import create_tool

    class Amount(BaseModel):
        amount: int

    pay = create_tool(
        id="pay", description="Pay.", input_schema=Amount, execute=lambda a: "paid", require_approval=True
    )
    payer = Agent(
        id="payer-agent",
        description="Pays.",
        tools=[pay],
        model=ScriptedChatModel(policy=_after_tools({"name": "pay", "args": {"amount": 3}, "id": "c1"}, "payer")),
    )
    boss = Agent(
        id="desk",
        description="Pays.",
        agents={"payer": payer},
        model=ScriptedChatModel(policy=lambda m: delegate("payer", "pay")),
        memory=Memory(":memory:"),
    )
    with Served(build_app(boss, serve_settings(None))) as url:
        result, heard, _ = asyncio.run(_ask(url, "pay 3"))
    assert result.structuredContent["status"] == "paused"
    assert [m for _, _, m in heard] == [
        "Delegation to payer-agent started.",
        "The run paused: it waits for a person's answer.",
    ]


@pytest.mark.parametrize("token", [1.5, True, {"id": 1}, [1]])
def test_a_progress_token_of_the_wrong_type_is_a_clear_error(hidden: str, token: Any) -> None:
    """Refused before anything runs (-32602 naming the token); strings and integers work,
    and `null` is no token."""
    body = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "ask_desk", "arguments": {"prompt": "write"}, "_meta": {"progressToken": token}},
    }
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    answer = httpx.post(f"{hidden}/mcp", json=body, headers=headers, timeout=30)
    assert answer.status_code == 200
    error = answer.json()["error"]
    assert error["code"] == -32602 and "_meta.progressToken must be a string or an integer" in error["message"]
    assert answer.json()["id"] == 9


@pytest.mark.parametrize("token", ["job-7", 7, None])
def test_string_integer_and_null_tokens_run(hidden: str, token: Any) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 10,
        "method": "tools/call",
        "params": {"name": "ask_desk", "arguments": {"prompt": "write"}, "_meta": {"progressToken": token}},
    }
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    with httpx.stream("POST", f"{hidden}/mcp", json=body, headers=headers, timeout=30) as answer:
        text = answer.read().decode()
    progress = [line for line in text.splitlines() if '"notifications/progress"' in line]
    assert len(progress) == (0 if token is None else 5)
    assert all(f'"progressToken":{json.dumps(token)}' in line for line in progress)
    assert '"result"' in text and "final:" in text


def test_capabilities_are_what_the_server_serves(hidden: str) -> None:
    """tools and logging, no resources, prompts or completions (FastMCP's empty resource
    and prompt handlers are off); `logging/setLevel` is answered."""

    async def main() -> Any:
        async with streamable_http_client(f"{hidden}/mcp") as (read, write, _), ClientSession(read, write) as session:
            init = await session.initialize()
            await session.set_logging_level("warning")
            with pytest.raises(Exception, match="[Mm]ethod not found"):
                await session.list_resources()
            with pytest.raises(Exception, match="[Mm]ethod not found"):
                await session.list_prompts()
            return init.capabilities

    caps = asyncio.run(main())
    assert caps.tools is not None and caps.logging is not None
    assert caps.resources is None and caps.prompts is None and caps.completions is None
