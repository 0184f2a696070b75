"""A guard's tripwire over MCP (SPEC §30): the tool call returns isError with the reason,
and the blocked turn is not stored."""

from __future__ import annotations

import asyncio

from supervisor_graph import Agent, Memory
from supervisor_graph.cli.workers import build_app
from supervisor_graph.guardrails import allow, block, guardrail
from supervisor_graph.testing import ScriptedChatModel
from tests.mcp.serving import Served, call_tool, serve_settings


def no_passwords(ctx) -> object:  # type: ignore[no-untyped-def]
    return block("passwords are not discussed here") if "password" in ctx.text else allow()


def test_a_tripwire_is_a_tool_error_with_the_reason() -> None:
    memory = Memory()
    agent = Agent(
        id="helper",
        model=ScriptedChatModel(policy=lambda m: "sure"),
        memory=memory,
        guardrails=[guardrail(no_passwords, at="input", name="no-passwords")],
    )
    with Served(build_app(agent, serve_settings(None))) as url:
        blocked = asyncio.run(call_tool(url, "ask_helper", {"prompt": "my password is hunter2", "thread_id": "g1"}, None))
        fine = asyncio.run(call_tool(url, "ask_helper", {"prompt": "hello", "thread_id": "g1"}, None))
    assert blocked.isError and blocked.content[0].text.startswith("GUARDRAIL")
    assert "hunter2" not in blocked.content[0].text
    assert not fine.isError and fine.content[0].text == "sure"
    stored = asyncio.run(memory.get_messages("g1"))
    assert [m.content for m in stored] == ["hello", "sure"]  # the blocked turn left nothing
