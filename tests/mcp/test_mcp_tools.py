"""Tools from an MCP server as an agent's tools (SPEC §27, issue 31 item 4): a stdio MCP
server built with the `mcp` package (`notes_server.py`), loaded with
`langchain-mcp-adapters`, needing approval: the run pauses before it runs, approving runs
it, and its side effect (a line appended to a file) happens exactly once."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

pytest.importorskip("langchain_mcp_adapters")

from langchain_mcp_adapters.client import MultiServerMCPClient  # noqa: E402

from supervisor_graph import Agent, Memory  # noqa: E402
from supervisor_graph.testing import ScriptedChatModel, tool_call  # noqa: E402

SERVER = Path(__file__).with_name("notes_server.py")


def _policy(messages: list[Any]) -> Any:
    if isinstance(messages[-1], ToolMessage):
        return f"done: {messages[-1].content}"
    return tool_call("append_note", {"text": "buy milk"})


async def _tools(notes: Path) -> list[Any]:
    client = MultiServerMCPClient(
        {
            "notes": {
                "command": sys.executable,
                "args": [str(SERVER)],
                "transport": "stdio",
                "env": {**os.environ, "NOTES_FILE": str(notes)},
            }
        }
    )
    tools = await client.get_tools()
    for tool in tools:  # approval is tool metadata, as create_tool(require_approval=True) sets it
        tool.metadata = {**(tool.metadata or {}), "require_approval": True}
    return tools


async def test_an_mcp_tool_waits_for_approval_and_runs_once(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    tools = await _tools(notes)
    assert [t.name for t in tools] == ["append_note"]
    agent = Agent(
        id="notes-keeper",
        model=ScriptedChatModel(policy=_policy, record_calls=False),
        tools=tools,
        memory=Memory(":memory:"),
    )
    memory = {"thread": "mcp-notes", "resource": "tester"}
    paused = await agent.generate("note that I need milk", memory=memory)
    assert paused.finish_reason == "suspended"
    (item,) = paused.suspended
    assert item.kind == "approval" and item.tool_name == "append_note" and item.args == {"text": "buy milk"}
    assert not notes.exists()  # nothing ran before the approval

    done = await agent.approve_tool_call(memory=memory)
    assert "noted (1 lines)" in done.text
    assert notes.read_text(encoding="utf-8") == "buy milk\n"


async def test_a_declined_mcp_tool_never_runs(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    agent = Agent(
        id="notes-keeper",
        model=ScriptedChatModel(policy=_policy, record_calls=False),
        tools=await _tools(notes),
        memory=Memory(":memory:"),
    )
    memory = {"thread": "mcp-notes-declined", "resource": "tester"}
    paused = await agent.generate("note that I need milk", memory=memory)
    assert paused.finish_reason == "suspended"
    done = await agent.decline_tool_call(memory=memory)
    assert done.finish_reason != "suspended"
    assert not notes.exists()
