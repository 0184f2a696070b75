"""Subagents: hidden and attributed visibility (AGUI.md "Subagents")."""

from __future__ import annotations

import asyncio

from langchain_core.messages import ToolMessage

from supervisor_graph import Agent, Memory
from supervisor_graph.testing import ScriptedChatModel
from tests.agui.conftest import (
    AGUIAgent,
    after_tool,
    assert_valid,
    boss,
    collect,
    delegate,
    interrupts,
    make_input,
    of_type,
    payer,
    researcher,
    tool_call,
    types,
    wire,
)


def lookup(query: str) -> dict:
    """Look a fact up."""
    return {"fact": f"about {query}"}


def looker() -> Agent:
    model = ScriptedChatModel(policy=after_tool("looked", tool_call("lookup", {"query": "owls"})), model_name="looker-model")
    return Agent(id="looker-agent", description="Looks facts up.", tools=[lookup], model=model)


async def test_hidden_subagents_show_only_the_delegation_call_and_result() -> None:
    bridge = AGUIAgent(boss({"looker": looker()}, delegate("looker", "owls")), resource_id="u1")
    events = await collect(bridge, make_input())
    assert not [k for k in types(events) if k.startswith("SUBAGENT")]
    assert [e["toolCallName"] for e in of_type(events, "TOOL_CALL_START")] == ["agent-looker"]
    [result] = of_type(events, "TOOL_CALL_RESULT")
    assert result["content"] == "looked: {\"fact\": \"about owls\"}"
    assert all("subagentRunId" not in e for e in wire(events))
    caps = bridge.get_capabilities()
    assert caps.multi_agent is None and caps.human_in_the_loop.approvals and caps.human_in_the_loop.interrupts


async def test_attributed_subagents_are_invocations_with_their_own_events() -> None:
    bridge = AGUIAgent(boss({"looker": looker()}, delegate("looker", "owls")), resource_id="u1", subagent_visibility="attributed")
    events = await collect(bridge, make_input())
    [started] = of_type(events, "SUBAGENT_STARTED")
    [finished] = of_type(events, "SUBAGENT_FINISHED")
    sub = started["subagentRunId"]
    delegation = of_type(events, "TOOL_CALL_START")[0]
    assert started["name"] == "looker-agent" and started["description"] == "Looks facts up."
    assert started["parentToolCallId"] == delegation["toolCallId"]
    assert started["parentMessageId"] == delegation["parentMessageId"]
    assert "parentSubagentRunId" not in started
    assert finished["subagentRunId"] == sub and finished["outcome"] == {"type": "success"}
    assert finished["metadata"]["supervisor_graph"]["usage"] == [
        {"model": "looker-model", "inputTokens": 20, "outputTokens": 10, "totalTokens": 30}
    ]
    own = [e for e in wire(events) if e.get("subagentRunId") == sub and not e["type"].startswith("SUBAGENT")]
    assert {e["type"] for e in own} >= {"TOOL_CALL_START", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"}
    sub_result = next(e for e in own if e["type"] == "TOOL_CALL_RESULT")
    assert sub_result["content"] == '{"fact": "about owls"}'  # a JSON string for a non-text result
    kinds = types(events)
    delegation_result = [i for i, e in enumerate(wire(events)) if e.get("toolCallId") == delegation["toolCallId"]][-1]
    assert kinds.index("SUBAGENT_FINISHED") < delegation_result
    caps = bridge.get_capabilities()
    assert [(s.name, s.description) for s in caps.multi_agent.subagents] == [("looker-agent", "Looks facts up.")]


async def test_omit_sends_subagent_tool_results_empty_but_keeps_errors() -> None:
    def broken(query: str) -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    model = ScriptedChatModel(
        policy=lambda m: "done" if isinstance(m[-1], ToolMessage) else [tool_call("lookup", {"query": "x"}), tool_call("broken", {"query": "y"})]
    )
    sub = Agent(id="looker-agent", description="Looks.", tools=[lookup, broken], model=model)
    supervisor = boss({"looker": sub}, delegate("looker", "x"))
    bridge = AGUIAgent(supervisor, resource_id="u1", subagent_visibility="attributed", subagent_tool_results="omit")
    events = await collect(bridge, make_input())
    sub_results = [e for e in of_type(events, "TOOL_CALL_RESULT") if "subagentRunId" in e]
    assert sorted(e["content"] == "" for e in sub_results) == [False, True]
    assert any("broken failed" in e["content"] for e in sub_results)
    top = [e for e in of_type(events, "TOOL_CALL_RESULT") if "subagentRunId" not in e]
    assert top[0]["content"] == "done"  # the delegation's own result is never omitted
    # and the supervisor's model saw the full delegation result
    assert any(isinstance(m, ToolMessage) and m.content == "done" for m in supervisor.model.calls[-1])


async def test_nested_subagents_name_their_parent_and_close_deepest_first(ledger) -> None:
    mid_model = ScriptedChatModel(policy=after_tool("mid", delegate("payer", "pay")), model_name="mid-model")
    mid = Agent(id="mid-agent", description="Middle manager.", agents={"payer": payer(ledger)}, model=mid_model)
    bridge = AGUIAgent(boss({"mid": mid}, delegate("mid", "handle it")), resource_id="u1", subagent_visibility="attributed")
    paused = await collect(bridge, make_input("t-nest"))
    started = of_type(paused, "SUBAGENT_STARTED")
    assert [s["name"] for s in started] == ["mid-agent", "payer-agent"]
    outer, inner = started
    assert inner["parentSubagentRunId"] == outer["subagentRunId"]
    finished = of_type(paused, "SUBAGENT_FINISHED")
    assert [f["subagentRunId"] for f in finished] == [inner["subagentRunId"], outer["subagentRunId"]]  # deepest first
    [item] = interrupts(paused)
    assert item["subagentRunId"] == inner["subagentRunId"]
    assert finished[0]["outcome"] == {"type": "suspended", "interruptIds": [item["id"]]}
    assert finished[1]["outcome"] == {"type": "suspended"}  # suspended because of a descendant
    assert types(paused).index("RUN_FINISHED") == len(paused) - 1

    resumed = await collect(bridge, make_input("t-nest", resume=[{"interrupt_id": item["id"], "status": "resolved", "payload": True}]))
    again = of_type(resumed, "SUBAGENT_STARTED")
    assert [s["subagentRunId"] for s in again] == [outer["subagentRunId"], inner["subagentRunId"]]  # the same ids again
    closing = [e["subagentRunId"] for e in of_type(resumed, "SUBAGENT_FINISHED")]
    assert closing == [inner["subagentRunId"], outer["subagentRunId"]]
    assert wire(resumed)[-1]["outcome"] == {"type": "success"} and ledger == [5]


async def test_two_delegations_to_one_subagent_get_different_ids() -> None:
    bridge = AGUIAgent(
        boss({"research_agent": researcher()}, [delegate("research_agent", "a"), delegate("research_agent", "b")]),
        resource_id="u1",
        subagent_visibility="attributed",
    )
    events = await collect(bridge, make_input())
    ids = [s["subagentRunId"] for s in of_type(events, "SUBAGENT_STARTED")]
    assert len(ids) == 2 and len(set(ids)) == 2


async def test_a_failed_subagent_is_a_subagent_error_and_the_run_goes_on() -> None:
    failing = Agent(id="flaky-agent", description="Fails.", model=ScriptedChatModel(responses=[RuntimeError("provider 500: secret")]))
    bridge = AGUIAgent(boss({"flaky": failing}, delegate("flaky", "try")), resource_id="u1", subagent_visibility="attributed")
    events = await collect(bridge, make_input())
    [error] = of_type(events, "SUBAGENT_ERROR")
    assert error["code"] == "SUBAGENT_ERROR" and "secret" not in error["message"] and "Traceback" not in error["message"]
    assert wire(events)[-1]["outcome"] == {"type": "success"}
    assert "".join(e["delta"] for e in of_type(events, "TEXT_MESSAGE_CONTENT")).startswith("final: [Delegation Failed]")


async def test_a_guardrail_block_is_reported_as_guardrail() -> None:
    class GuardrailTripped(Exception):
        pass

    blocked = Agent(id="guarded-agent", description="Guarded.", model=ScriptedChatModel(responses=[GuardrailTripped("blocked: pii")]))
    bridge = AGUIAgent(boss({"guarded": blocked}, delegate("guarded", "x")), resource_id="u1", subagent_visibility="attributed")
    events = await collect(bridge, make_input())
    [error] = of_type(events, "SUBAGENT_ERROR")
    assert error["code"] == "GUARDRAIL" and "pii" not in error["message"]


async def test_an_aborted_run_cancels_open_subagents_before_its_end() -> None:
    slow = Agent(id="slow-agent", description="Slow.", model=ScriptedChatModel(responses=["late"], latency=5))
    bridge = AGUIAgent(boss({"slow": slow}, delegate("slow", "wait")), resource_id="u1", subagent_visibility="attributed")
    events = []

    async def consume() -> None:
        async for event in bridge.run(make_input("t-sub-abort")):
            events.append(event)
            if event.type == "SUBAGENT_STARTED":
                bridge.abort_run()

    await asyncio.wait_for(consume(), 5)
    kinds = types(events)
    assert kinds[-2:] == ["SUBAGENT_ERROR", "RUN_FINISHED"]
    assert wire(events)[-2]["code"] == "CANCELLED"
    assert wire(events)[-1]["outcome"] == {"type": "cancelled"}
    assert_valid(events)


async def test_hidden_interrupts_carry_no_subagent_run_id(ledger) -> None:
    bridge = AGUIAgent(boss({"payer": payer(ledger)}, delegate("payer", "pay")), resource_id="u1")
    [item] = interrupts(await collect(bridge, make_input("t-hid")))
    assert "subagentRunId" not in item
    assert item["metadata"]["supervisor_graph"]["agent_path"] == ["boss", "payer-agent"]


async def test_capabilities_of_an_agent_without_memory() -> None:
    plain = Agent(id="plain", model=ScriptedChatModel(responses=["hi"]), agents={"research_agent": researcher()})
    bridge = AGUIAgent(plain, resource_id="u1", subagent_visibility="attributed")
    assert isinstance(bridge.memory, Memory)
    caps = bridge.get_capabilities().model_dump(mode="json", by_alias=True)
    assert caps["humanInTheLoop"] == {"supported": True, "approvals": True, "interrupts": True}
    assert caps["multiAgent"]["subagents"] == [{"name": "research-agent", "description": "Finds facts."}]
    events = await collect(bridge, make_input())
    assert wire(events)[-1]["outcome"] == {"type": "success"}
