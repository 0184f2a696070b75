"""Tool approval and suspend as AG-UI interrupts (AGUI.md "Interrupts")."""

from __future__ import annotations

import pytest

from supervisor_graph import Agent, Memory
from supervisor_graph.testing import ScriptedChatModel
from tests.agui.conftest import (
    AGUIAgent,
    after_tool,
    ask_tool,
    boss,
    collect,
    delegate,
    interrupts,
    make_input,
    of_type,
    pay_tool,
    payer,
    tool_call,
    types,
    wire,
)

PAY_SCHEMA = {
    "description": "Pay an amount.",
    "properties": {"amount": {"title": "Amount", "type": "integer"}},
    "required": ["amount"],
    "title": "pay",
    "type": "object",
}
APPROVAL_SCHEMA = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "args": PAY_SCHEMA,
        "message": {"type": "string", "description": "Why it was rejected; the model sees it."},
    },
    "required": ["approved"],
    "additionalProperties": False,
}


def solo_payer(ledger: list[int], **kwargs) -> Agent:
    model = ScriptedChatModel(policy=after_tool("done", tool_call("pay", {"amount": 7}, id="call-pay")))
    return Agent(id="solo", model=model, tools=[pay_tool(ledger)], memory=Memory(), **kwargs)


def resume_entry(interrupt: dict, status: str = "resolved", payload=None) -> dict:
    return {"interrupt_id": interrupt["id"], "status": status, "payload": payload}


async def test_an_approval_ends_the_run_with_an_interrupt_and_holds_the_call_back(ledger) -> None:
    bridge = AGUIAgent(solo_payer(ledger), resource_id="u1")
    events = await collect(bridge, make_input("t-ap"))
    [item] = interrupts(events)
    run_id = item["metadata"]["supervisor_graph"]["run_id"]
    assert item == {
        "id": f"sg-approval::{run_id}::call-pay",
        "reason": "supervisor_graph:tool_approval",
        "toolCallId": "call-pay",
        "responseSchema": APPROVAL_SCHEMA,
        "metadata": {
            "supervisor_graph": {
                "type": "tool_approval",
                "tool_name": "pay",
                "args": {"amount": 7},
                "run_id": run_id,
                "agent_path": ["solo"],
                "allowed_decisions": ["approve", "edit", "reject"],
                "input_schema": PAY_SCHEMA,
            }
        },
    }
    assert run_id != events[0].run_id  # the LangGraph run's id, not RunAgentInput.run_id
    assert not of_type(events, "TOOL_CALL_START")  # held back: never a call without a result
    assert wire(events)[-1]["metadata"]["supervisor_graph"]["finish_reason"] == "suspended"
    assert ledger == []

    resumed = await collect(bridge, make_input("t-ap", resume=[resume_entry(item, payload={"approved": True})]))
    assert wire(resumed)[0]["protocolVersion"] == "1.0"
    kinds = types(resumed)
    assert kinds[1:5] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    start = of_type(resumed, "TOOL_CALL_START")[0]
    assert start["toolCallId"] == "call-pay" and start["parentMessageId"]  # found in the thread
    assert of_type(resumed, "TOOL_CALL_ARGS")[0]["delta"] == '{"amount": 7}'
    assert of_type(resumed, "TOOL_CALL_RESULT")[0]["content"] == "paid 7"
    assert wire(resumed)[-1]["outcome"] == {"type": "success"}
    assert ledger == [7]


@pytest.mark.parametrize("payload", [None, {}, {"approve": True}, {"approved": "yes"}, "yes", False, 1])
async def test_an_invalid_approval_is_refused_and_stays_answerable(ledger, payload) -> None:
    bridge = AGUIAgent(solo_payer(ledger), resource_id="u1")
    thread = f"t-bad-{abs(hash(repr(payload)))}"
    [item] = interrupts(await collect(bridge, make_input(thread)))
    refused = await collect(bridge, make_input(thread, resume=[resume_entry(item, payload=payload)]))
    assert types(refused) == ["RUN_STARTED", "RUN_ERROR"]
    assert wire(refused)[0]["protocolVersion"] == "1.0"
    assert wire(refused)[-1]["code"] == "INVALID_TOOL_APPROVAL"
    assert ledger == []
    again = await collect(bridge, make_input(thread, resume=[resume_entry(item, payload=True)]))
    assert wire(again)[-1]["outcome"] == {"type": "success"} and ledger == [7]


@pytest.mark.parametrize(
    ("status", "payload"), [("resolved", {"approved": False}), ("cancelled", None), ("cancelled", {"approved": True})]
)
async def test_declining_an_approval(ledger, status, payload) -> None:
    bridge = AGUIAgent(solo_payer(ledger), resource_id="u1")
    thread = f"t-decline-{status}-{payload}"
    [item] = interrupts(await collect(bridge, make_input(thread)))
    declined = await collect(bridge, make_input(thread, resume=[resume_entry(item, status, payload)]))
    assert wire(declined)[0]["protocolVersion"] == "1.0"
    result = of_type(declined, "TOOL_CALL_RESULT")[0]
    assert "declined" in result["content"]
    assert wire(declined)[-1]["outcome"] == {"type": "success"} and ledger == []
    again = await collect(bridge, make_input(thread, resume=[resume_entry(item, payload=True)]))
    assert types(again) == ["RUN_STARTED", "RUN_ERROR"] and wire(again)[-1]["code"] == "INTERRUPT_NOT_PENDING"


async def test_an_unknown_interrupt_is_not_pending(ledger) -> None:
    bridge = AGUIAgent(solo_payer(ledger), resource_id="u1")
    events = await collect(bridge, make_input("t-unknown", resume=[{"interrupt_id": "sg-approval::x::y", "status": "resolved", "payload": True}]))
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"] and wire(events)[-1]["code"] == "INTERRUPT_NOT_PENDING"


def suspending_agent(seen: list) -> Agent:
    model = ScriptedChatModel(policy=after_tool("done", tool_call("ask_account", {"question": "Which account?"}, id="call-ask")))
    return Agent(id="solo", model=model, tools=[ask_tool(seen)], memory=Memory())


async def test_suspend_becomes_an_interrupt_and_resumes_with_the_payload() -> None:
    seen: list = []
    bridge = AGUIAgent(suspending_agent(seen), resource_id="u1")
    events = await collect(bridge, make_input("t-sus"))
    [item] = interrupts(events)
    run_id = item["metadata"]["supervisor_graph"]["run_id"]
    assert item["id"] == f"{run_id}::call-ask"
    assert item["reason"] == "supervisor_graph:tool_suspend"
    assert item["message"] == "Which account?"
    assert item["toolCallId"] == "call-ask"
    assert item["responseSchema"]["required"] == ["account"]
    assert item["metadata"]["supervisor_graph"] == {
        "type": "suspend",
        "tool_name": "ask_account",
        "suspend_payload": {"message": "Which account?", "choices": ["ACME-1", "ACME-2"]},
        "args": {"question": "Which account?"},
        "run_id": run_id,
    }
    # the suspended call was streamed (it could not be known in advance), without a result
    assert [e["toolCallId"] for e in of_type(events, "TOOL_CALL_END")] == ["call-ask"]
    assert not of_type(events, "TOOL_CALL_RESULT")

    bad = await collect(bridge, make_input("t-sus", resume=[resume_entry(item, payload={"acct": 1})]))
    assert types(bad) == ["RUN_STARTED", "RUN_ERROR"] and wire(bad)[-1]["code"] == "INVALID_RESUME_PAYLOAD"

    resumed = await collect(bridge, make_input("t-sus", resume=[resume_entry(item, payload={"account": "ACME-2"})]))
    kinds = types(resumed)
    assert kinds[1:4] == ["TOOL_CALL_START", "TOOL_CALL_END", "TOOL_CALL_RESULT"]  # reopened without arguments
    assert of_type(resumed, "TOOL_CALL_RESULT")[0]["content"] == "using ACME-2"
    assert "".join(e["delta"] for e in of_type(resumed, "TEXT_MESSAGE_CONTENT")) == "done: using ACME-2"
    assert [s.account for s in seen] == ["ACME-2"]


async def test_cancelling_a_suspended_tool_declines_it_and_ends_the_run() -> None:
    seen: list = []
    agent = suspending_agent(seen)
    bridge = AGUIAgent(agent, resource_id="u1")
    [item] = interrupts(await collect(bridge, make_input("t-sus-c")))
    calls_before = len(agent.model.calls)
    cancelled = await collect(bridge, make_input("t-sus-c", resume=[resume_entry(item, "cancelled")]))
    assert wire(cancelled)[0]["protocolVersion"] == "1.0"
    assert wire(cancelled)[-1]["outcome"] == {"type": "success"}
    assert wire(cancelled)[-1]["metadata"]["supervisor_graph"]["finish_reason"] == "bail"  # ended early, on purpose
    assert "cancelled" in of_type(cancelled, "TOOL_CALL_RESULT")[0]["content"]
    assert seen == []  # the tool never went on
    assert len(agent.model.calls) == calls_before  # and the run ended without another model turn
    # the thread is consistent: a new message works
    agent.model.policy = lambda m: "fresh answer"
    after = await collect(bridge, make_input("t-sus-c", "new question"))
    assert wire(after)[-1]["outcome"] == {"type": "success"}


async def test_several_interrupts_are_reported_together_and_resumed_in_one_request(ledger) -> None:
    # two delegations to the same subagent, whose model reuses one tool call id
    agent = boss({"payer": payer(ledger, call_id="call-same")}, [delegate("payer", "pay a"), delegate("payer", "pay b")])
    for visibility in ("hidden", "attributed"):
        bridge = AGUIAgent(agent, resource_id="u1", subagent_visibility=visibility)
        thread = f"t-many-{visibility}"
        items = interrupts(await collect(bridge, make_input(thread)))
        assert len(items) == 2 and len({i["id"] for i in items}) == 2  # unique although the call ids repeat
        assert {i["toolCallId"] for i in items} == {"call-same"}
        for item in items:
            assert item["id"].startswith("sg-approval::") and item["id"].endswith("::call-same")
            assert ("subagentRunId" in item) == (visibility == "attributed")
        resumed = await collect(
            bridge, make_input(thread, resume=[resume_entry(items[0], payload=True), resume_entry(items[1], payload={"approved": True})])
        )
        assert wire(resumed)[-1]["outcome"] == {"type": "success"}
    assert ledger == [5, 5, 5, 5]


async def test_resuming_reopens_the_enclosing_delegation_call(ledger) -> None:
    bridge = AGUIAgent(boss({"payer": payer(ledger)}, delegate("payer", "pay")), resource_id="u1")
    first = await collect(bridge, make_input("t-reopen"))
    delegation = of_type(first, "TOOL_CALL_START")[0]
    assert delegation["toolCallName"] == "agent-payer" and len(of_type(first, "TOOL_CALL_ARGS")) == 1
    [item] = interrupts(first)
    resumed = await collect(bridge, make_input("t-reopen", resume=[resume_entry(item, payload=True)]))
    events = wire(resumed)
    reopened = [e for e in events if e.get("toolCallId") == delegation["toolCallId"]]
    assert [e["type"] for e in reopened] == ["TOOL_CALL_START", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    assert reopened[-1]["content"] == "payer: paid 5"


async def test_a_new_message_while_an_interrupt_waits_is_refused(ledger) -> None:
    bridge = AGUIAgent(solo_payer(ledger), resource_id="u1")
    await collect(bridge, make_input("t-wait"))
    events = await collect(bridge, make_input("t-wait", "something else"))
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"] and wire(events)[-1]["code"] == "INTERRUPT_PENDING"


async def test_mastra_compat_shapes(ledger) -> None:
    bridge = AGUIAgent(solo_payer(ledger), resource_id="u1", compat="mastra")
    events = await collect(bridge, make_input("t-mastra"))
    [item] = interrupts(events)
    run_id = item["metadata"]["mastra"]["runId"]
    assert item["id"] == f"mastra-approval::{run_id}::call-pay"
    assert item["reason"] == "mastra:tool_approval"
    assert item["metadata"] == {"mastra": {"type": "mastra_tool_approval", "toolName": "pay", "args": {"amount": 7}, "runId": run_id}}
    assert wire(events)[-1]["metadata"] == {"mastra": {"finishReason": "suspended"}}
    refused = await collect(bridge, make_input("t-mastra", resume=[resume_entry(item, payload={"approve": True})]))
    assert wire(refused)[-1]["code"] == "MASTRA_INVALID_TOOL_APPROVAL"
    done = await collect(bridge, make_input("t-mastra", resume=[resume_entry(item, payload={"approved": True})]))
    assert wire(done)[-1]["metadata"] == {"mastra": {"finishReason": "stop"}} and ledger == [7]

    seen: list = []
    suspender = AGUIAgent(suspending_agent(seen), resource_id="u1", compat="mastra")
    [item] = interrupts(await collect(suspender, make_input("t-mastra-s")))
    meta = item["metadata"]["mastra"]
    assert item["id"] == f"{meta['runId']}::call-ask" and item["reason"] == "mastra:tool_suspend"
    assert meta["type"] == "mastra_suspend" and meta["toolName"] == "ask_account"
    assert meta["suspendPayload"]["message"] == "Which account?" and meta["resumeSchema"]["required"] == ["account"]


async def test_cancelling_a_suspended_tool_inside_a_subagent_ends_the_whole_run() -> None:
    seen: list = []
    asker_model = ScriptedChatModel(policy=after_tool("asked", tool_call("ask_account", {"question": "Which account?"})))
    asker = Agent(id="asker-agent", description="Asks.", tools=[ask_tool(seen)], model=asker_model)
    supervisor = boss({"asker": asker}, delegate("asker", "find the account"))
    bridge = AGUIAgent(supervisor, resource_id="u1", subagent_visibility="attributed")
    [item] = interrupts(await collect(bridge, make_input("t-sub-cancel")))
    assert item["reason"] == "supervisor_graph:tool_suspend" and item["subagentRunId"]
    calls = len(supervisor.model.calls), len(asker_model.calls)
    done = await collect(bridge, make_input("t-sub-cancel", resume=[resume_entry(item, "cancelled")]))
    assert wire(done)[-1]["outcome"] == {"type": "success"} and seen == []
    assert (len(supervisor.model.calls), len(asker_model.calls)) == calls  # nobody's model ran again
    assert [e["outcome"]["type"] for e in of_type(done, "SUBAGENT_FINISHED")] == ["success"]
