"""`ag-ui-validate` (its command line) on recorded streams of every scenario: zero error
findings. (Every stream of the other tests is also checked through its API, and the
live endpoint in test_endpoint.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable

import pytest
from ag_ui.core import BaseEvent, Tool
from langchain_core.messages import AIMessage

from supervisor_graph import AbortController, Agent, Memory
from supervisor_graph.testing import ScriptedChatModel
from tests.agui.conftest import (
    AGUIAgent,
    after_tool,
    ask_tool,
    boss,
    collect,
    delegate,
    make_input,
    pay_tool,
    payer,
    record,
    researcher,
    tool_call,
    wire,
)

Scenario = Callable[[], Awaitable[list[BaseEvent]]]


def _answer(events: list[BaseEvent], payload=True, status: str = "resolved") -> list[dict]:
    return [{"interrupt_id": i["id"], "status": status, "payload": payload} for i in wire(events)[-1]["outcome"]["interrupts"]]


async def text() -> list[BaseEvent]:
    bridge = AGUIAgent(Agent(id="solo", model=ScriptedChatModel(responses=["Hello there."]), memory=Memory()), resource_id="u")
    return await collect(bridge, make_input())


async def reasoning() -> list[BaseEvent]:
    reply = AIMessage(content=[{"type": "thinking", "thinking": "Hmm.", "signature": "s1"}, {"type": "text", "text": "42"}])
    bridge = AGUIAgent(Agent(id="solo", model=ScriptedChatModel(responses=[reply], provider="anthropic"), memory=Memory()), resource_id="u")
    return await collect(bridge, make_input())


async def tools() -> list[BaseEvent]:
    def lookup(query: str) -> dict:
        """Look up."""
        return {"answer": query}

    model = ScriptedChatModel(policy=after_tool("found", [tool_call("lookup", {"query": "a"}), tool_call("missing", {})]))
    bridge = AGUIAgent(Agent(id="solo", model=model, tools=[lookup], memory=Memory()), resource_id="u")
    return await collect(bridge, make_input())


async def frontend_tools() -> list[BaseEvent]:
    model = ScriptedChatModel(policy=after_tool("shown", tool_call("show", {"x": 1}, id="ui-1")))
    bridge = AGUIAgent(Agent(id="solo", model=model, memory=Memory()), resource_id="u")
    return await collect(bridge, make_input(tools=[Tool(name="show", description="Show.", parameters={"type": "object"})]))


async def approval() -> list[BaseEvent]:
    ledger: list[int] = []
    model = ScriptedChatModel(policy=after_tool("done", tool_call("pay", {"amount": 1})))
    bridge = AGUIAgent(Agent(id="solo", model=model, tools=[pay_tool(ledger)], memory=Memory()), resource_id="u")
    paused = await collect(bridge, make_input("t"))
    invalid = await collect(bridge, make_input("t", resume=_answer(paused, payload={"approve": True})))
    approved = await collect(bridge, make_input("t", resume=_answer(paused)))
    again = await collect(bridge, make_input("t2"))
    declined = await collect(bridge, make_input("t2", resume=_answer(again, payload=None, status="cancelled")))
    return [*paused, *invalid, *approved, *again, *declined]


async def suspend() -> list[BaseEvent]:
    model = ScriptedChatModel(policy=after_tool("done", tool_call("ask_account", {"question": "Which?"})))
    bridge = AGUIAgent(Agent(id="solo", model=model, tools=[ask_tool([])], memory=Memory()), resource_id="u")
    paused = await collect(bridge, make_input("t"))
    resumed = await collect(bridge, make_input("t", resume=_answer(paused, payload={"account": "A"})))
    again = await collect(bridge, make_input("t2"))
    cancelled = await collect(bridge, make_input("t2", resume=_answer(again, status="cancelled")))
    return [*paused, *resumed, *again, *cancelled]


async def cancelled() -> list[BaseEvent]:
    controller = AbortController()
    controller.abort()
    agent = Agent(id="solo", model=ScriptedChatModel(responses=["x"]), memory=Memory(), default_options={"abort_signal": controller.signal})
    return await collect(AGUIAgent(agent, resource_id="u"), make_input())


async def failure() -> list[BaseEvent]:
    agent = Agent(id="solo", model=ScriptedChatModel(responses=[RuntimeError("boom")]), memory=Memory())
    return await collect(AGUIAgent(agent, resource_id="u"), make_input())


def _looker() -> Agent:
    def lookup(query: str) -> str:
        """Look up."""
        return f"about {query}"

    model = ScriptedChatModel(policy=after_tool("looked", tool_call("lookup", {"query": "owls"})))
    return Agent(id="looker-agent", description="Looks.", tools=[lookup], model=model)


async def hidden_subagents() -> list[BaseEvent]:
    bridge = AGUIAgent(boss({"looker": _looker(), "research_agent": researcher()}, [delegate("looker", "a"), delegate("research_agent", "b")]), resource_id="u")
    return await collect(bridge, make_input())


async def attributed_subagents() -> list[BaseEvent]:
    failing = Agent(id="flaky-agent", description="Fails.", model=ScriptedChatModel(responses=[RuntimeError("x")]))
    agent = boss({"looker": _looker(), "flaky": failing}, [delegate("looker", "a"), delegate("flaky", "b")])
    bridge = AGUIAgent(agent, resource_id="u", subagent_visibility="attributed", subagent_tool_results="omit")
    return await collect(bridge, make_input())


async def nested_approval() -> list[BaseEvent]:
    ledger: list[int] = []
    mid = Agent(id="mid-agent", description="Mid.", agents={"payer": payer(ledger)}, model=ScriptedChatModel(policy=after_tool("mid", delegate("payer", "pay"))))
    bridge = AGUIAgent(boss({"mid": mid}, delegate("mid", "go")), resource_id="u", subagent_visibility="attributed")
    paused = await collect(bridge, make_input("t"))
    return [*paused, *await collect(bridge, make_input("t", resume=_answer(paused)))]


async def repeated_call_ids() -> list[BaseEvent]:
    ledger: list[int] = []
    agent = boss({"payer": payer(ledger, call_id="same")}, [delegate("payer", "a"), delegate("payer", "b")])
    bridge = AGUIAgent(agent, resource_id="u", subagent_visibility="attributed")
    paused = await collect(bridge, make_input("t"))
    return [*paused, *await collect(bridge, make_input("t", resume=_answer(paused)))]


async def refusals() -> list[BaseEvent]:
    agent = Agent(id="solo", model=ScriptedChatModel(policy=lambda m: "hi"), memory=Memory())
    owner, other = AGUIAgent(agent, resource_id="a"), AGUIAgent(agent, resource_id="b")
    first = await collect(owner, make_input("t"))
    forbidden = await collect(other, make_input("t"))
    not_pending = await collect(owner, make_input("t", resume=[{"interrupt_id": "nope", "status": "resolved", "payload": True}]))
    return [*first, *forbidden, *not_pending]


async def mastra_compat() -> list[BaseEvent]:
    ledger: list[int] = []
    bridge = AGUIAgent(boss({"payer": payer(ledger)}, delegate("payer", "pay")), resource_id="u", compat="mastra", subagent_visibility="attributed")
    paused = await collect(bridge, make_input("t"))
    return [*paused, *await collect(bridge, make_input("t", resume=_answer(paused, payload={"approved": True})))]


async def shared_state() -> list[BaseEvent]:
    from pydantic import BaseModel

    class Trip(BaseModel):
        city: str | None = None

    model = ScriptedChatModel(responses=[tool_call("update_working_memory", {"memory": {"city": "Oslo"}}), "Oslo."])
    agent = Agent(id="solo", model=model, memory=Memory(), working_memory={"schema": Trip})
    return await collect(AGUIAgent(agent, resource_id="u"), make_input(state={"city": "Bergen"}))


SCENARIOS: dict[str, Scenario] = {
    f.__name__: f
    for f in (
        text,
        reasoning,
        tools,
        frontend_tools,
        approval,
        suspend,
        cancelled,
        failure,
        hidden_subagents,
        attributed_subagents,
        nested_approval,
        repeated_call_ids,
        refusals,
        mastra_compat,
        shared_state,
    )
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_recorded_stream_passes_ag_ui_validate(name: str) -> None:
    events = await SCENARIOS[name]()
    path = record(name, events)
    proc = subprocess.run(
        [sys.executable, "-m", "ag_ui_validate.cli", str(path), "--json"], capture_output=True, text=True, timeout=60
    )
    report = json.loads(proc.stdout)
    errors = [d for d in report["diagnostics"] if d["severity"] == "error"]
    assert proc.returncode == 0 and report["summary"]["errors"] == 0 and not errors, json.dumps(errors, indent=1)
    assert report["summary"]["warnings"] <= 1, report["diagnostics"]  # at most AGUI008 for several runs in one recording
