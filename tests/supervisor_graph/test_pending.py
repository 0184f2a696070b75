"""A new message while approvals wait (SPEC §17, §19): refused with
`PendingApprovalError`, or `pending="decline"` declines them first; either way every
tool call keeps exactly one result."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, PendingApprovalError, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


class Amount(BaseModel):
    amount: int


def build(memory: Memory, ledger: list[int]) -> Agent:
    pay = create_tool(
        id="pay", description="Pay.", input_schema=Amount, execute=lambda a: ledger.append(a.amount) or "paid", require_approval=True
    )
    sub = Agent(
        id="sub-agent",
        description="Pays too.",
        model=ScriptedChatModel(policy=lambda m: "sub done" if isinstance(m[-1], ToolMessage) else tool_call("pay", {"amount": 2})),
        tools=[pay],
    )

    def policy(messages):
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return "after: " + " | ".join(str(m.content) for m in messages if isinstance(m, ToolMessage))
        if last.content == "pay both":
            return [tool_call("pay", {"amount": 1}, id="top-pay"), delegate("sub", "pay", id="sub-call")]
        return f"reply to {last.content}"

    return Agent(id="boss", model=ScriptedChatModel(policy=policy), tools=[pay], agents={"sub": sub}, memory=memory)


def assert_every_call_answered_once(messages) -> None:
    calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert sorted(calls) == sorted(results)


async def test_a_new_message_is_refused_while_approvals_wait(memory: Memory) -> None:
    ledger: list[int] = []
    agent = build(memory, ledger)
    thread = {"thread": "t", "resource": "u"}
    paused = await agent.generate("pay both", memory=thread)
    assert sorted(i.tool_call_id for i in paused.suspended) == sorted(["top-pay", paused.suspended[1].tool_call_id])
    with pytest.raises(PendingApprovalError, match="pay") as caught:
        await agent.generate("never mind", memory=thread)
    assert len(caught.value.pending) == 2
    # nothing was lost: both still wait, and the refused message did not enter the thread
    from supervisor_graph.run.resume import pending_interrupts

    assert len(await pending_interrupts(agent, memory=thread)) == 2
    assert "never mind" not in [m.content for m in await memory.get_messages("t")]
    done = await agent.resume({item.interrupt_id: {"approved": True} for item in paused.suspended}, memory=thread)
    assert sorted(ledger) == [1, 2] and done.finish_reason == "stop"


async def test_pending_decline_declines_them_first_and_the_transcript_stays_valid(memory: Memory) -> None:
    ledger: list[int] = []
    agent = build(memory, ledger)
    thread = {"thread": "t2", "resource": "u"}
    await agent.generate("pay both", memory=thread)
    result = await agent.generate("never mind", memory=thread, pending="decline")
    assert result.text == "reply to never mind" and ledger == []
    stored = await memory.get_messages("t2")
    assert_every_call_answered_once(stored)
    texts = {m.tool_call_id: m.content for m in stored if isinstance(m, ToolMessage)}
    assert "declined" in texts["top-pay"] and texts["sub-call"].startswith("[Interrupted]")
