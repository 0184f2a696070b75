"""A served agent with an output schema over MCP (SPEC §28): its tool declares an
`outputSchema`, and each answer carries the object in `structuredContent`, which the
`mcp` client validates against that schema."""

from __future__ import annotations

from typing import Any

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel

from supervisor_graph import Agent, Memory
from supervisor_graph.cli.workers import build_app
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call
from tests.mcp.serving import Served, call_tool, serve_settings


class Address(BaseModel):
    city: str


class Contact(BaseModel):
    name: str
    address: Address


def team() -> Agent:
    finder = Agent(id="finder", description="Finds people.", model=ScriptedChatModel(policy=lambda m: "Ada lives in London"))

    def boss(messages: list[Any]) -> Any:
        if messages[-1].type == "tool" and messages[-1].name == "agent-finder":
            return tool_call("final_answer", {"name": "Ada", "address": {"city": "London"}})
        return delegate("finder", "who is Ada?")

    return Agent(
        id="contacts", model=ScriptedChatModel(policy=boss), agents={"finder": finder}, output_schema=Contact, memory=Memory()
    )


async def test_the_tool_declares_an_output_schema_and_answers_with_structured_content() -> None:
    with Served(build_app(team(), serve_settings(None))) as url:
        async with (
            httpx.AsyncClient(timeout=30) as http,
            streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            [tool] = (await session.list_tools()).tools
            assert tool.outputSchema is not None
            assert tool.outputSchema["properties"]["object"]["properties"]["address"] == {"$ref": "#/$defs/Address"}
            assert "Address" in tool.outputSchema["$defs"]
            # the client checks structuredContent against outputSchema itself
            result = await session.call_tool("ask_contacts", {"prompt": "find Ada"})
        assert not result.isError
        assert result.structuredContent["object"] == {"name": "Ada", "address": {"city": "London"}}
        assert result.structuredContent["status"] == "answered"


async def test_an_agent_without_a_schema_declares_none() -> None:
    agent = Agent(id="plain", model=ScriptedChatModel(policy=lambda m: "hi"), memory=Memory())
    with Served(build_app(agent, serve_settings(None))) as url:
        result = await call_tool(url, "ask_plain", {"prompt": "hello"}, None)
    assert result.structuredContent == {"status": "answered", "thread_id": result.structuredContent["thread_id"], "answer": "hi"}
