"""Tool approval through delegation, at any depth (SPEC §9)."""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage
from langgraph.types import Command
from pydantic import BaseModel

from supervisor_graph import Agent, NothingPendingError, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


class Payment(BaseModel):
    amount: int


def payment_tool(ledger: list[int]):
    def execute(args: Payment) -> str:
        ledger.append(args.amount)  # the side effect that must happen exactly once
        return f"paid {args.amount}"

    return create_tool(id="pay", description="Pay someone.", input_schema=Payment, execute=execute, require_approval=True)


def payer(ledger: list[int], id: str = "payer-agent", amount: int = 5) -> Agent:
    def policy(messages):
        if isinstance(messages[-1], ToolMessage):
            return f"{id} reports: {messages[-1].content}"
        return tool_call("pay", {"amount": amount})

    return Agent(id=id, description="Pays.", model=ScriptedChatModel(policy=policy), tools=[payment_tool(ledger)])


def reporter(calls: int = 1):
    def policy(messages):
        results = [m for m in messages if isinstance(m, ToolMessage)]
        return " | ".join(str(m.content) for m in results) if len(results) >= calls else None

    return policy


def supervisor(policy_calls, agents, store) -> Agent:
    def policy(messages):
        if not any(isinstance(m, ToolMessage) for m in messages):
            return policy_calls
        return "final: " + " | ".join(str(m.content) for m in messages if isinstance(m, ToolMessage))

    return Agent(id="boss", model=ScriptedChatModel(policy=policy), agents=agents, memory=store.memory)


async def test_approval_at_depth_one_then_approve(store) -> None:
    ledger: list[int] = []
    boss = supervisor(delegate("payer", "pay the invoice"), {"payer": payer(ledger)}, store)
    call = store.call()
    result = await boss.generate("go", **call)
    assert result.finish_reason == "suspended" and ledger == []
    [item] = result.suspended
    assert (item.kind, item.tool_name, item.args, item.agent_path, item.run_id) == (
        "approval", "pay", {"amount": 5}, ("boss", "payer-agent"), result.run_id
    )
    assert item.interrupt_id and item.tool_call_id
    done = await boss.approve_tool_call(run_id=result.run_id, tool_call_id=item.tool_call_id, memory=call["memory"])
    assert ledger == [5]
    assert done.finish_reason == "stop" and done.text == "final: payer-agent reports: paid 5"
    assert done.run_id == result.run_id  # the same run, resumed
    assert done.usage.total_tokens == 4 * 15  # usage of the whole run, across the pause
    with pytest.raises(NothingPendingError):
        await boss.approve_tool_call(run_id=result.run_id, memory=call["memory"])


async def test_decline_never_runs_and_the_model_is_told(store) -> None:
    ledger: list[int] = []
    boss = supervisor(delegate("payer", "pay"), {"payer": payer(ledger)}, store)
    call = store.call()
    result = await boss.generate("go", **call)
    done = await boss.decline_tool_call(run_id=result.run_id, memory=call["memory"])
    assert ledger == []
    assert "declined" in done.text


async def test_approval_at_depth_two_and_streams(store) -> None:
    ledger: list[int] = []
    middle = Agent(
        id="middle-agent",
        description="Delegates payments.",
        model=ScriptedChatModel(policy=lambda m: f"middle: {m[-1].content}" if isinstance(m[-1], ToolMessage) else delegate("payer", "pay")),
        agents={"payer": payer(ledger)},
    )
    boss = supervisor(delegate("middle", "handle payment"), {"middle": middle}, store)
    call = store.call()
    stream = await boss.stream("go", **call)
    chunks = [c async for c in stream.full_stream]
    paused = await stream.result()
    approvals = [c for c in chunks if c.type == "tool-call-approval"]
    assert len(approvals) == 1 and approvals[0].agent_path == ("boss", "middle-agent", "payer-agent")
    assert chunks[-1].finish_reason == "suspended"
    resumed = await boss.approve_tool_call_stream(run_id=paused.run_id, memory=call["memory"])
    rest = [c async for c in resumed.full_stream]
    assert (await resumed.result()).text == "final: middle: payer-agent reports: paid 5"
    assert ledger == [5] and rest[-1].finish_reason == "stop"


async def test_invalid_answers_are_refused_and_stay_pending(store) -> None:
    ledger: list[int] = []
    boss = supervisor(delegate("payer", "pay"), {"payer": payer(ledger)}, store)
    call = store.call()
    result = await boss.generate("go", **call)
    for bad in ({"approved": "yes"}, {"ok": True}, True, None):
        with pytest.raises(ValueError, match="approval answer must be"):
            await boss.resume({result.suspended[0].interrupt_id: bad}, memory=call["memory"])
    # the plain LangGraph way with a bad value: asked again, not consumed
    graph = boss.compile(checkpointer=await store.memory.checkpointer())
    config = {"configurable": {"thread_id": call["memory"]["thread"]}}
    out = await graph.ainvoke(Command(resume={result.suspended[0].interrupt_id: {"approved": "maybe"}}), config)
    [again] = out["__interrupt__"]
    assert "approval answer must be" in again.value["error"] and ledger == []
    # ...and a valid raw Command resumes it
    final = await graph.ainvoke(Command(resume={"approved": True}), config)
    assert ledger == [5] and final["messages"][-1].content.startswith("final:")


async def test_several_pending_each_answered_and_exactly_once(store) -> None:
    ledger: list[int] = []
    boss = supervisor(
        [delegate("payer", "a"), delegate("payer", "b"), delegate("other", "c")],
        {"payer": payer(ledger, amount=1), "other": payer(ledger, id="other-agent", amount=2)},
        store,
    )
    call = store.call()
    result = await boss.generate("go", **call)
    assert len(result.suspended) == 3 and ledger == []
    first, second, third = result.suspended
    step = await boss.approve_tool_call(interrupt_id=first.interrupt_id, memory=call["memory"])
    assert step.finish_reason == "suspended" and len(step.suspended) == 2
    assert sorted(ledger) == [first.args["amount"]]
    with pytest.raises(ValueError, match="2 items are pending"):
        await boss.approve_tool_call(memory=call["memory"])
    done = await boss.resume(
        {second.interrupt_id: {"approved": True}, third.interrupt_id: {"approved": False}}, memory=call["memory"]
    )
    assert done.finish_reason == "stop"
    assert sorted(ledger) == sorted([first.args["amount"], second.args["amount"]])  # each once; declined never


async def test_agent_wide_require_tool_approval(store) -> None:
    ran = []

    class Q(BaseModel):
        q: str

    plain = create_tool(id="look", description="Look.", input_schema=Q, execute=lambda a: ran.append(a.q) or "seen")
    model = ScriptedChatModel(policy=lambda m: "done" if isinstance(m[-1], ToolMessage) else tool_call("look", {"q": "x"}))
    agent = Agent(id="solo", model=model, tools=[plain], memory=store.memory, default_options={"require_tool_approval": True})
    call = store.call()
    result = await agent.generate("go", **call)
    assert result.finish_reason == "suspended" and result.suspended[0].agent_path == ("solo",) and ran == []
    assert (await agent.approve_tool_call(memory=call["memory"])).text == "done" and ran == ["x"]


async def test_runs_without_memory_can_be_resumed_by_run_id() -> None:
    ledger: list[int] = []
    boss = Agent(
        id="boss",
        model=ScriptedChatModel(policy=lambda m: "ok" if isinstance(m[-1], ToolMessage) else delegate("payer", "pay")),
        agents={"payer": payer(ledger)},
    )
    result = await boss.generate("go")
    assert result.finish_reason == "suspended" and result.thread_id is None
    done = await boss.approve_tool_call(run_id=result.run_id)
    assert done.text == "ok" and ledger == [5]
    with pytest.raises(NothingPendingError, match="no paused run"):
        await boss.approve_tool_call(run_id=result.run_id)


async def test_resuming_inside_a_subagent_does_not_call_its_model_again(store) -> None:
    ledger: list[int] = []
    sub = payer(ledger)
    sub_model = sub.model
    boss = supervisor(delegate("payer", "pay"), {"payer": sub}, store)
    for call in (store.call(), {}):  # with memory, and a run without memory
        before = len(sub_model.calls)
        result = await boss.generate("go", **call)
        assert len(sub_model.calls) == before + 1
        done = await boss.approve_tool_call(run_id=result.run_id, **({"memory": call["memory"]} if call else {}))
        assert done.finish_reason == "stop"
        assert len(sub_model.calls) == before + 2  # the call after the tool result, not a repeat of the first


async def test_current_tool_call_is_the_models_call_and_stable_across_a_restart(store, tmp_path) -> None:
    from supervisor_graph import Memory, current_tool_call

    seen = []

    def execute(args: Payment) -> str:
        seen.append(current_tool_call())
        return f"paid {args.amount}"

    pay = create_tool(id="pay", description="Pay.", input_schema=Payment, execute=execute, require_approval=True)

    def build(memory) -> Agent:
        model = ScriptedChatModel(policy=lambda m: "done" if isinstance(m[-1], ToolMessage) else tool_call("pay", {"amount": 3}))
        return Agent(id="boss", model=model, tools=[pay], memory=memory)

    call = store.call()
    paused = await build(store.memory).generate("go", **call)
    [item] = paused.suspended
    # a new process would open the database afresh: so does this (sqlite); in-memory keeps its saver
    memory = Memory(storage=store.memory.storage) if store.kind == "sqlite" else store.memory
    try:
        done = await build(memory).approve_tool_call(interrupt_id=item.interrupt_id, memory=call["memory"])
    finally:
        if memory is not store.memory:
            await memory.aclose()
    [info] = seen
    assert done.text == "done"
    assert (info.id, info.name, info.args) == (item.tool_call_id, "pay", {"amount": 3})
    stored = await store.memory.get_messages(call["memory"]["thread"])
    assert [c["id"] for m in stored if m.type == "ai" for c in m.tool_calls] == [info.id]
    with pytest.raises(RuntimeError, match="inside a tool"):
        current_tool_call()
