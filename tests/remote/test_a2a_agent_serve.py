"""`A2AAgent` against this project's own A2A server (`serve --a2a`: `add_a2a_routes` on the
AG-UI app, uvicorn in a thread): a supervisor delegates to another supervisor served over
A2A; its answer streams as the subagent's text, and its tool approval (`input-required`)
is the parent's pending approval, approved once and run once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import A2AAgent, Agent, Memory
from supervisor_graph.a2a import add_a2a_routes
from supervisor_graph.agui import AGUIAgent, create_app
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call
from tests.agui.conftest import ThreadServer, pay_tool


def _served_boss(ledger: list[int]) -> Agent:
    def policy(messages: list[Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"done: {messages[-1].content}"
        said = [m.content for m in messages if isinstance(m, HumanMessage)]
        if said and "pay" in str(said[-1]):
            return tool_call("pay", {"amount": 5})
        return "Hello from the served boss."

    return Agent(
        id="served-boss",
        description="Answers questions and pays invoices.",
        tools=[pay_tool(ledger)],
        model=ScriptedChatModel(policy=policy),
        memory=Memory(":memory:"),
    )


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, list[int]]]:
    ledger: list[int] = []
    bridge = AGUIAgent(_served_boss(ledger), resource_id="user-1")
    app = create_app(bridge)
    add_a2a_routes(app, bridge)
    with ThreadServer(app) as server:
        yield server.url, ledger


def _parent(url: str, prompt: str) -> Agent:
    def policy(messages: list[Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"parent: {messages[-1].content}"
        return delegate("helper", prompt)

    sub = A2AAgent(url=url, description="Another supervisor.", id="helper-agent")
    return Agent(id="parent", model=ScriptedChatModel(policy=policy), agents={"helper": sub}, memory=Memory(":memory:"))


async def test_a_served_supervisor_answers_as_an_a2a_subagent(served: tuple[str, list[int]]) -> None:
    url, _ = served
    stream = await _parent(url, "hi").stream("go", memory={"thread": "p-1"})
    chunks = [c async for c in stream.full_stream]
    result = await stream.result()
    assert result.text == "parent: Hello from the served boss."
    deltas = [c.text for c in chunks if c.type == "text-delta" and c.agent_path == ("parent", "helper-agent")]
    assert "".join(deltas) == "Hello from the served boss."


async def test_a_served_approval_is_the_parents_pending_approval(served: tuple[str, list[int]]) -> None:
    url, ledger = served
    parent = _parent(url, "please pay")
    paused = await parent.generate("go", memory={"thread": "p-2"})
    assert paused.finish_reason == "suspended"
    [item] = paused.suspended
    assert (item.kind, item.tool_name, item.args, item.agent_path) == ("approval", "pay", {"amount": 5}, ("parent", "helper-agent"))
    assert ledger == []
    done = await parent.approve_tool_call(interrupt_id=item.interrupt_id, memory={"thread": "p-2"})
    assert done.text == "parent: done: paid 5" and ledger == [5]
