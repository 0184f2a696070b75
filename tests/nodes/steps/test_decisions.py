"""Decisions on a pending approval (SPEC §29): approve, edit the arguments, reject with a
reason; allowed decisions per tool; one resume shape through the facade and `Command`."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.types import Command
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, NothingPendingError, create_tool
from supervisor_graph.nodes.steps.decisions import ApprovalPolicy, DecisionError, parse_decision
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


class Payment(BaseModel):
    amount: int
    to: str = "acme"


def pay_tool(ledger: list[tuple[int, str]], require_approval: Any = True):
    def execute(args: Payment) -> str:
        ledger.append((args.amount, args.to))  # the side effect, counted
        return f"paid {args.amount} to {args.to}"

    return create_tool(id="pay", description="Pay someone.", input_schema=Payment, execute=execute, require_approval=require_approval)


def payer(ledger: list[tuple[int, str]], id: str = "payer-agent", amount: int = 1200, **approval: Any) -> Agent:
    def policy(messages):
        if isinstance(messages[-1], ToolMessage):
            return f"{id} reports: {messages[-1].content}"
        return tool_call("pay", {"amount": amount})

    tool = pay_tool(ledger, approval or True)
    return Agent(id=id, description="Pays.", model=ScriptedChatModel(policy=policy), tools=[tool])


def boss(calls: Any, agents: dict[str, Agent], memory: Memory | None) -> Agent:
    def policy(messages):
        if not any(isinstance(m, ToolMessage) for m in messages):
            return calls
        return "final: " + " | ".join(str(m.content) for m in messages if isinstance(m, ToolMessage))

    return Agent(id="boss", model=ScriptedChatModel(policy=policy), agents=agents, memory=memory)


def tool_results(model: Any) -> list[str]:
    """What the model saw as tool results in its last call."""
    return [str(m.content) for m in model.calls[-1] if isinstance(m, ToolMessage)]


def test_one_parser_for_every_driver() -> None:
    assert parse_decision({"approved": True}).kind == "approve"
    assert parse_decision({"approved": True, "args": {"amount": 1}}).payload() == {"approved": True, "args": {"amount": 1}}
    assert parse_decision({"approved": False, "message": "no"}).payload() == {"approved": False, "message": "no"}
    assert parse_decision({"approved": False}).payload() == {"approved": False}
    for bad, words in (
        ({"approved": "yes"}, "approval answer must be"),
        ({"approved": True, "arg": {}}, "'arg'"),
        ({"approved": True, "args": [1]}, "edited args must be an object"),
        ({"approved": False, "args": {}}, "not a rejection"),
        ({"approved": True, "message": "x"}, "reason of a rejection"),
        ({"approved": False, "message": 3}, "must be a string"),
    ):
        with pytest.raises(DecisionError, match=words):
            parse_decision(bad)
    with pytest.raises(DecisionError, match=r"'edit' is not allowed for this tool call \(allowed: approve, reject\)"):
        parse_decision({"approved": True, "args": {}}, allowed=["approve", "reject"])
    tool = pay_tool([])
    with pytest.raises(DecisionError, match="edited args do not match pay's input schema: amount: Input should be a valid integer"):
        parse_decision({"approved": True, "args": {"amount": "lots"}}, tool=tool)
    assert ApprovalPolicy.of(True) == ApprovalPolicy() and ApprovalPolicy.of(False) is None


def test_create_tool_validates_the_policy() -> None:
    tool = pay_tool([], {"allowed_decisions": ["approve", "reject"], "description": "Check the amount."})
    assert tool.metadata["require_approval"] == {"allowed_decisions": ["approve", "reject"], "description": "Check the amount."}
    for bad, words in (
        ({"allowed_decisions": ["approve", "maybe"]}, "allowed_decisions.1"),
        ({"allowed_decisions": []}, "at least one decision"),
        ({"allowed": ["approve"]}, "allowed: Extra inputs"),
        ("yes", "must be True, False or"),
    ):
        with pytest.raises(ValueError, match=words):
            pay_tool([], bad)


async def test_edit_at_depth_one_runs_the_edited_args_once(store) -> None:
    ledger: list[tuple[int, str]] = []
    sub = payer(ledger)
    top = boss(delegate("payer", "pay the invoice"), {"payer": sub}, store.memory)
    call = store.call()
    paused = await top.generate("go", **call)
    [item] = paused.suspended
    assert item.allowed_decisions == ["approve", "edit", "reject"]
    assert item.input_schema is not None and item.input_schema["properties"]["amount"]["type"] == "integer"
    # wrong types are refused with the field's error, before anything resumes
    with pytest.raises(ValueError, match=r"amount: Input should be a valid integer.*still pending"):
        await top.approve_tool_call(memory=call["memory"], args={"amount": "twelve"})
    with pytest.raises(ValueError, match="amount: Field required"):
        await top.approve_tool_call(memory=call["memory"], args={"to": "bob"})
    assert ledger == [] and len(sub.model.calls) == 1  # type: ignore[union-attr]
    done = await top.approve_tool_call(memory=call["memory"], args={"amount": 120, "to": "bob"})
    assert ledger == [(120, "bob")]
    assert done.finish_reason == "stop" and "paid 120 to bob" in done.text
    [seen] = tool_results(sub.model)
    assert seen.startswith('[The user edited the arguments before this call ran: {"amount": 120, "to": "bob"}]')
    with pytest.raises(NothingPendingError):  # already decided
        await top.decline_tool_call(memory=call["memory"], message="too late")
    assert ledger == [(120, "bob")]


async def test_reject_with_a_reason_at_depth_two_the_model_sees_it(store) -> None:
    ledger: list[tuple[int, str]] = []
    sub = payer(ledger)
    middle_model = ScriptedChatModel(
        policy=lambda m: f"middle: {m[-1].content}" if isinstance(m[-1], ToolMessage) else delegate("payer", "pay")
    )
    middle = Agent(id="middle-agent", description="Delegates payments.", model=middle_model, agents={"payer": sub})
    top = boss(delegate("middle", "handle payment"), {"middle": middle}, store.memory)
    call = store.call()
    paused = await top.generate("go", **call)
    [item] = paused.suspended
    assert item.agent_path == ("boss", "middle-agent", "payer-agent")
    stream = await top.decline_tool_call_stream(
        interrupt_id=item.interrupt_id, memory=call["memory"], message="Pay 120, not 1200."
    )
    chunks = [c async for c in stream.full_stream]
    done = await stream.result()
    assert ledger == [] and done.finish_reason == "stop"
    [seen] = tool_results(sub.model)
    assert seen == "The user declined this tool call; it did not run. Their reason: Pay 120, not 1200."
    errors = [c for c in chunks if c.type == "tool-error" and c.payload["tool_name"] == "pay"]
    assert len(errors) == 1 and "Pay 120, not 1200." in errors[0].payload["result"]


async def test_a_decision_the_tool_does_not_allow_is_refused_and_stays_pending(store) -> None:
    ledger: list[tuple[int, str]] = []
    sub = payer(ledger, allowed_decisions=["approve", "reject"], description="Check the amount first.")
    top = boss(delegate("payer", "pay"), {"payer": sub}, store.memory)
    call = store.call()
    [item] = (await top.generate("go", **call)).suspended
    assert item.allowed_decisions == ["approve", "reject"] and item.description == "Check the amount first."
    with pytest.raises(ValueError, match=r"'edit' is not allowed for this tool call \(allowed: approve, reject\)"):
        await top.approve_tool_call(memory=call["memory"], args={"amount": 1})
    # the raw LangGraph way: asked again with the error, never consumed
    graph = top.compile(checkpointer=await store.memory.checkpointer())
    config = {"configurable": {"thread_id": call["memory"]["thread"]}}
    out = await graph.ainvoke(Command(resume={item.interrupt_id: {"approved": True, "args": {"amount": 1}}}), config)
    [again] = out["__interrupt__"]
    assert "'edit' is not allowed" in again.value["error"] and again.value["allowed_decisions"] == ["approve", "reject"]
    assert ledger == []
    done = await top.approve_tool_call(memory=call["memory"])
    assert ledger == [(1200, "acme")] and done.finish_reason == "stop"


async def test_command_resume_on_the_compiled_graph_edits_and_rejects(store) -> None:
    ledger: list[tuple[int, str]] = []
    sub_a, sub_b = payer(ledger, amount=1), payer(ledger, id="other-agent", amount=2)
    top = boss([delegate("a", "x"), delegate("b", "y")], {"a": sub_a, "b": sub_b}, None)
    graph = top.compile(checkpointer=await store.memory.checkpointer())
    config = {"configurable": {"thread_id": store.call()["memory"]["thread"]}}
    out = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    first, second = out["__interrupt__"]
    assert first.value["input_schema"]["required"] == ["amount"]
    # an edit with the wrong type: asked again, nothing ran
    out = await graph.ainvoke(Command(resume={first.id: {"approved": True, "args": {"amount": "x"}}}), config)
    assert ledger == [] and any("amount: Input should be a valid integer" in (i.value.get("error") or "") for i in out["__interrupt__"])
    pending = {i.value["agent_path"][-1]: i for i in out["__interrupt__"]}
    out = await graph.ainvoke(
        Command(resume={
            pending["payer-agent"].id: {"approved": True, "args": {"amount": 10, "to": "bob"}},
            pending["other-agent"].id: {"approved": False, "message": "Not this month."},
        }),
        config,
    )
    assert ledger == [(10, "bob")]  # the edit ran once; the rejected call never ran
    assert "__interrupt__" not in out or not out["__interrupt__"]
    assert "Their reason: Not this month." in tool_results(sub_b.model)[0]
    assert "paid 10 to bob" in tool_results(sub_a.model)[0]


async def test_several_pending_each_with_its_own_decision_through_the_facade(store) -> None:
    ledger: list[tuple[int, str]] = []
    top = boss(
        [delegate("a", "x"), delegate("b", "y"), delegate("c", "z")],
        {"a": payer(ledger, amount=1), "b": payer(ledger, id="b-agent", amount=2), "c": payer(ledger, id="c-agent", amount=3)},
        store.memory,
    )
    call = store.call()
    items = {i.agent_path[-1]: i for i in (await top.generate("go", **call)).suspended}
    answers = {
        items["payer-agent"].interrupt_id: {"approved": True},
        items["b-agent"].interrupt_id: {"approved": True, "args": {"amount": 20}},
        items["c-agent"].interrupt_id: {"approved": False, "message": "no"},
    }
    with pytest.raises(ValueError, match="amount: Input should be a valid integer"):  # one bad answer: none resumed
        await top.resume({**answers, items["b-agent"].interrupt_id: {"approved": True, "args": {"amount": []}}}, memory=call["memory"])
    assert ledger == []
    done = await top.resume(answers, memory=call["memory"])
    assert done.finish_reason == "stop" and sorted(ledger) == [(1, "acme"), (20, "acme")]
    assert "Their reason: no" in done.text


def test_sync_variants_edit_and_reject_without_memory() -> None:
    ledger: list[tuple[int, str]] = []
    model = ScriptedChatModel(policy=lambda m: f"saw: {m[-1].content}" if isinstance(m[-1], ToolMessage) else tool_call("pay", {"amount": 9}))
    solo = Agent(id="solo", model=model, tools=[pay_tool(ledger)])
    paused = solo.generate_sync("go")
    done = solo.approve_tool_call_sync(run_id=paused.run_id, args={"amount": 8})
    assert ledger == [(8, "acme")] and "paid 8 to acme" in done.text
    paused = solo.generate_sync("again")
    done = solo.decline_tool_call_sync(run_id=paused.run_id, message="enough")
    assert ledger == [(8, "acme")] and done.text.endswith("Their reason: enough")


async def test_decisions_inside_a_background_task() -> None:
    ledger: list[tuple[int, str]] = []
    sub = payer(ledger, amount=5)
    top = Agent(
        id="boss",
        model=ScriptedChatModel(
            policy=lambda m: delegate("payer", "pay 5") if isinstance(m[-1], HumanMessage) and m[-1].content == "go" else "noted"
        ),
        agents={"payer": sub},
        memory=Memory(":memory:"),
        background_tasks={"tools": {"payer": {}}},
    )
    stream = await top.stream_until_idle("go", memory={"thread": "bg-decide"})
    [c async for c in stream.full_stream]
    [item] = (await stream.result()).suspended
    assert item.allowed_decisions == ["approve", "edit", "reject"] and item.input_schema is not None
    with pytest.raises(ValueError, match="amount: Input should be a valid integer"):
        await top.approve_tool_call(interrupt_id=item.interrupt_id, memory={"thread": "bg-decide"}, args={"amount": "x"})
    assert ledger == []
    await top.approve_tool_call(interrupt_id=item.interrupt_id, memory={"thread": "bg-decide"}, args={"amount": 4})
    assert ledger == [(4, "acme")]
    [task] = await top.memory.list_background_tasks("bg-decide")  # type: ignore[union-attr]
    assert task.status == "completed"


async def test_approvals_is_a_step_and_a_rejection_never_runs_the_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every agent with tools has the `Approvals` step, outermost of its tool calls' steps
    (a run may ask before each call); an agent without tools has none. A rejection answers
    without calling the handler; an edit runs the person's arguments and its result says
    so first; a call that needs no decision goes straight on."""
    from supervisor_graph.compiler.build import build_spec
    from supervisor_graph.nodes.options import RunHandle
    from supervisor_graph.nodes.steps import decisions
    from supervisor_graph.nodes.steps.decisions import APPROVALS, EDIT_NOTE, Approvals
    from supervisor_graph.nodes.steps.protocol import NO_STEPS, ToolRequest

    ledger: list[tuple[int, str]] = []
    free = create_tool(id="note", description="Notes.", input_schema=Payment, execute=lambda args: "noted")
    spec = build_spec(Agent(id="a", model=ScriptedChatModel(), tools=[pay_tool(ledger), free]))
    assert spec.steps.find(Approvals) is APPROVALS and spec.steps.wrap_tool_call == (APPROVALS, EDIT_NOTE)
    assert build_spec(Agent(id="b", model=ScriptedChatModel())).steps is NO_STEPS

    answers: list[Any] = []
    asked: list[dict[str, Any]] = []

    def interrupt(value: dict[str, Any]) -> Any:
        asked.append(value)
        return answers.pop(0)

    monkeypatch.setattr(decisions, "interrupt", interrupt)
    ran: list[dict[str, Any]] = []

    async def handler(request: ToolRequest) -> str:
        ran.append(request.tool_call)
        return "paid"

    def request(name: str = "pay", approve_all: bool = False) -> ToolRequest:
        call = {"name": name, "args": {"amount": 5}, "id": "c1"}
        return ToolRequest(call, spec.tools[name], None, {}, RunHandle("r1", ("a",)), spec=spec, approve_all=approve_all)

    answers[:] = [{"approved": "maybe"}, {"approved": False, "message": "not today"}]
    rejected = request()
    declined = await spec.steps.call_tool(rejected, handler)
    assert ran == [] and declined.status == "error" and declined.content.endswith("Their reason: not today")
    assert [a["kind"] for a in asked] == ["approval", "approval"] and "error" in asked[1]
    assert rejected.notes["answers"] == 2  # the invalid answer was asked again

    answers[:] = [{"approved": True, "args": {"amount": 3}}]
    edited = request()
    result = await spec.steps.call_tool(edited, handler)
    assert ran == [{"name": "pay", "args": {"amount": 3}, "id": "c1"}] and edited.ran() == ran[0]
    assert result.content == '[The user edited the arguments before this call ran: {"amount": 3}]\npaid'

    asked.clear()
    assert await spec.steps.call_tool(request("note"), handler) == "paid" and asked == []  # nothing to decide
    answers[:] = [{"approved": False}]
    assert (await spec.steps.call_tool(request("note", approve_all=True), handler)).status == "error"  # the run asks
    assert len(asked) == 1 and len(ran) == 2
