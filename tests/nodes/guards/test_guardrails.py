"""Guardrails at the six boundaries of the delegation tree (SPEC §30): what reached each
model's input, each stream and each stored thread, at depth one and two."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.guardrails import GuardContext, allow, block, escalate, guardrail, redact, retry
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

SECRET = "sk-SECRET1234567890"


def scrub(ctx: GuardContext) -> Any:
    return redact(ctx.text.replace(SECRET, "[REDACTED]")) if SECRET in ctx.text else allow()


def stop_secret(ctx: GuardContext) -> Any:
    return block("a secret") if SECRET in ctx.text else allow()


def seen(model: ScriptedChatModel) -> str:
    """Everything the model was given, as one text."""
    return "\n".join(str(m.content) for call in model.calls for m in call)


class Query(BaseModel):
    q: str


def lookup_tool(ledger: list[str], answer: str = f"key is {SECRET}") -> Any:
    def execute(args: Query) -> str:
        ledger.append(args.q)
        return answer

    return create_tool(id="lookup", description="Look up.", input_schema=Query, execute=execute)


def worker(reply: Any = "done", *, guards: list[Any] | None = None, tools: Any = None, id: str = "worker-agent") -> Agent:
    model = reply if isinstance(reply, ScriptedChatModel) else ScriptedChatModel(responses=[reply] if not isinstance(reply, list) else reply)
    return Agent(id=id, description="Works.", model=model, guardrails=guards, tools=tools or {})


def boss(responses: list[Any], agents: dict[str, Agent] | None = None, guards: list[Any] | None = None, **kw: Any) -> Agent:
    return Agent(id="boss", model=ScriptedChatModel(responses=responses), agents=agents or {}, guardrails=guards, **kw)


# -- input ----------------------------------------------------------------------------------


async def test_input_redacted_before_the_model_and_in_the_thread() -> None:
    memory = Memory(storage=":memory:")
    agent = boss(["ok"], guards=[guardrail(scrub, at="input")], memory=memory)
    result = await agent.generate(f"my key {SECRET}", memory={"thread": "in-1"})
    assert result.text == "ok" and result.finish_reason == "stop"
    assert SECRET not in seen(agent.model) and "[REDACTED]" in seen(agent.model)
    stored = await memory.get_messages("in-1")
    assert all(SECRET not in str(m.content) for m in stored)


async def test_input_block_ends_the_run_and_stores_nothing_so_the_thread_goes_on() -> None:
    memory = Memory(storage=":memory:")
    model = ScriptedChatModel(responses=["first", "second"])
    agent = Agent(id="boss", model=model, guardrails=[guardrail(stop_secret, at="input", name="secrets")], memory=memory)
    await agent.generate("hello", memory={"thread": "in-2"})
    result = await agent.generate(f"leak {SECRET}", memory={"thread": "in-2"})
    assert result.finish_reason == "tripwire" and result.text == "" and result.messages == []
    assert result.tripwire is not None
    assert (result.tripwire.guard, result.tripwire.boundary, result.tripwire.agent_path) == ("secrets", "input", ("boss",))
    assert len(model.calls) == 1  # the blocked message never reached the model
    stored = await memory.get_messages("in-2")
    assert [m.content for m in stored] == ["hello", "first"]
    again = await agent.generate("and now?", memory={"thread": "in-2"})
    assert again.text == "second"
    assert all(SECRET not in str(m.content) for m in model.calls[-1])


async def test_input_retry_is_a_trip_with_its_feedback() -> None:
    agent = boss(["never"], guards=[guardrail(lambda ctx: retry("rephrase"), at="input")])
    result = await agent.generate("hi")
    assert result.finish_reason == "tripwire" and result.tripwire is not None and result.tripwire.reason == "rephrase"
    assert agent.model.calls == []


async def test_parallel_input_cancels_the_model_call_and_runs_no_tool() -> None:
    ledger: list[str] = []
    started = asyncio.Event()

    async def slow_block(ctx: GuardContext) -> Any:
        await started.wait()  # the model call is under way
        return block("no")

    class Watching(ScriptedChatModel):
        async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            started.set()
            await asyncio.sleep(5)
            return await super()._agenerate(messages, stop, run_manager, **kwargs)

    model = Watching(responses=[tool_call("lookup", {"q": "x"})])
    agent = Agent(id="boss", model=model, tools=[lookup_tool(ledger)], guardrails=[guardrail(slow_block, at="input", mode="parallel")])
    loop = asyncio.get_running_loop()
    began = loop.time()
    result = await agent.generate("hi")
    assert loop.time() - began < 2  # cancelled, not waited for
    assert result.finish_reason == "tripwire" and ledger == []


async def test_parallel_input_that_passes_keeps_the_answer() -> None:
    agent = boss(["answer"], guards=[guardrail(lambda ctx: allow(), at="input", mode="parallel")])
    result = await agent.generate("hi")
    assert result.text == "answer" and len(agent.model.calls) == 1


# -- output ---------------------------------------------------------------------------------


async def test_output_redacted_in_result_stream_and_thread() -> None:
    memory = Memory(storage=":memory:")
    agent = boss([f"the key is {SECRET}"], guards=[guardrail(scrub, at="output")], memory=memory)
    stream = await agent.stream("key?", memory={"thread": "out-1"})
    chunks = [c async for c in stream.full_stream]
    result = await stream.result()
    assert result.text == "the key is [REDACTED]"
    streamed = "".join(c.text for c in chunks if c.type == "text-delta")
    assert streamed == "the key is [REDACTED]"
    assert all(SECRET not in str(c.payload) for c in chunks)
    assert all(SECRET not in str(m.content) for m in await memory.get_messages("out-1"))
    assert [c.payload["verdict"] for c in chunks if c.type == "guard"] == ["redact"]


async def test_output_retry_sends_feedback_and_the_rejected_answer_is_not_kept() -> None:
    def once(ctx: GuardContext) -> Any:
        return retry("be polite") if "rude" in ctx.text else allow()

    agent = boss(["rude answer", "polite answer"], guards=[guardrail(once, at="output")])
    result = await agent.generate("hi")
    assert result.text == "polite answer"
    second = agent.model.calls[1]
    assert any("be polite" in str(m.content) for m in second)
    assert all("rude answer" not in str(m.content) for m in second)


async def test_output_retry_past_max_retries_is_a_trip() -> None:
    agent = boss(["a", "b", "c"], guards=[guardrail(lambda ctx: retry("again"), at="output", max_retries=1)])
    result = await agent.generate("hi")
    assert result.finish_reason == "tripwire" and len(agent.model.calls) == 2


async def test_output_block_streams_a_tripwire_chunk_and_no_text() -> None:
    agent = boss([f"x {SECRET}"], guards=[guardrail(stop_secret, at="output", name="secrets")])
    stream = await agent.stream("hi")
    chunks = [c async for c in stream.full_stream]
    result = await stream.result()
    assert result.finish_reason == "tripwire"
    assert not [c for c in chunks if c.type == "text-delta"]
    trips = [c for c in chunks if c.type == "tripwire"]
    assert len(trips) == 1 and trips[0].payload["guard"] == "secrets" and SECRET not in str(trips[0].payload)


async def test_output_escalation_approved_and_declined() -> None:
    memory = Memory(storage=":memory:")
    agent = boss(["answer one", "answer two"], guards=[guardrail(lambda ctx: escalate("check it"), at="output", name="review")], memory=memory)
    paused = await agent.generate("hi", memory={"thread": "esc-1"})
    assert paused.finish_reason == "suspended"
    item = paused.suspended[0]
    assert (item.kind, item.tool_name) == ("guard", "review")
    assert await memory.get_messages("esc-1") == [m for m in await memory.get_messages("esc-1") if not isinstance(m, AIMessage)]
    done = await agent.approve_tool_call(interrupt_id=item.interrupt_id, memory={"thread": "esc-1"})
    assert done.text == "answer one" and len(agent.model.calls) == 1
    paused = await agent.generate("again", memory={"thread": "esc-1"})
    declined = await agent.decline_tool_call(interrupt_id=paused.suspended[0].interrupt_id, memory={"thread": "esc-1"})
    assert declined.finish_reason == "tripwire" and declined.tripwire is not None and declined.tripwire.guard == "review"
    assert [m.content for m in await memory.get_messages("esc-1")] == ["hi", "answer one"]


async def test_streaming_output_never_leaks_a_blocked_span() -> None:
    memory = Memory(storage=":memory:")
    text = "This is a long enough answer with plenty of harmless words before " + SECRET + " and words after it."
    agent = boss([text], guards=[guardrail(stop_secret, at="output", mode="streaming", window_tokens=8, overlap_tokens=5)], memory=memory)
    stream = await agent.stream("hi", memory={"thread": "st-1"})
    chunks = [c async for c in stream.full_stream]
    result = await stream.result()
    assert result.finish_reason == "tripwire"
    streamed = "".join(c.text for c in chunks if c.type == "text-delta")
    assert streamed and text.startswith(streamed)  # checked windows went out as they passed
    assert "sk-" not in streamed and all(SECRET not in str(c.payload) for c in chunks)
    assert await memory.get_messages("st-1") == []


async def test_streaming_output_redacts_windows() -> None:
    text = "Words words words words " + SECRET + " more words more words more words the end."
    agent = boss([text], guards=[guardrail(scrub, at="output", mode="streaming", window_tokens=12, overlap_tokens=6)])
    stream = await agent.stream("hi")
    chunks = [c async for c in stream.full_stream]
    result = await stream.result()
    streamed = "".join(c.text for c in chunks if c.type == "text-delta")
    assert SECRET not in streamed and "sk-" not in streamed
    assert streamed == result.text and result.text.endswith("the end.")


# -- tools ----------------------------------------------------------------------------------


async def test_tool_args_and_result_redacted_for_the_top_agent() -> None:
    ledger: list[str] = []

    def reply(messages: Any) -> Any:
        return f"saw: {messages[-1].content}" if isinstance(messages[-1], ToolMessage) else tool_call("lookup", {"q": f"find {SECRET}"})

    model = ScriptedChatModel(policy=reply)
    agent = Agent(id="boss", model=model, tools=[lookup_tool(ledger)], guardrails=[guardrail(scrub, at=["tool_args", "tool_result"])])
    result = await agent.generate("go")
    assert ledger == ["find [REDACTED]"]
    assert result.text == "saw: key is [REDACTED]"


async def test_tool_result_block_at_the_top_ends_the_run() -> None:
    ledger: list[str] = []
    memory = Memory(storage=":memory:")
    model = ScriptedChatModel(responses=[tool_call("lookup", {"q": "a"}), "unused"])
    agent = Agent(id="boss", model=model, tools=[lookup_tool(ledger)], guardrails=[guardrail(stop_secret, at="tool_result")], memory=memory)
    result = await agent.generate("go", memory={"thread": "tr-1"})
    assert result.finish_reason == "tripwire" and result.tripwire.boundary == "tool_result"  # type: ignore[union-attr]
    assert len(model.calls) == 1 and await memory.get_messages("tr-1") == []


async def test_tool_args_escalation_asks_before_the_tool_runs() -> None:
    ledger: list[str] = []
    memory = Memory(storage=":memory:")
    model = ScriptedChatModel(responses=[tool_call("lookup", {"q": "a"}), "finished"])
    guard = guardrail(lambda ctx: escalate("look"), at="tool_args", name="args-review")
    agent = Agent(id="boss", model=model, tools=[lookup_tool(ledger, "fine")], guardrails=[guard], memory=memory)
    paused = await agent.generate("go", memory={"thread": "ta-1"})
    assert paused.finish_reason == "suspended" and ledger == []
    done = await agent.approve_tool_call(tool_call_id=paused.suspended[0].tool_call_id, memory={"thread": "ta-1"})
    assert done.text == "finished" and ledger == ["a"]


async def test_leaf_subagent_tool_result_redacted_and_inherited() -> None:
    ledger: list[str] = []

    def sub_reply(messages: Any) -> Any:
        return f"sub saw {messages[-1].content}" if isinstance(messages[-1], ToolMessage) else tool_call("lookup", {"q": "x"})

    sub = worker(ScriptedChatModel(policy=sub_reply), tools=[lookup_tool(ledger)])
    top = boss([delegate("worker", "look"), "final"], {"worker": sub}, guards=[guardrail(scrub, at="tool_result")])
    result = await top.generate("go")
    assert result.text == "final"
    assert SECRET not in seen(sub.model) and SECRET not in seen(top.model)
    assert "sub saw key is [REDACTED]" in seen(top.model)


# -- delegation and result -----------------------------------------------------------------------


async def test_delegation_prompt_redacted_before_the_subagent() -> None:
    sub = worker("done")
    top = boss([delegate("worker", f"use {SECRET}"), "final"], {"worker": sub}, guards=[guardrail(scrub, at="delegation")])
    result = await top.generate("go")
    assert result.text == "final"
    assert SECRET not in seen(sub.model) and "use [REDACTED]" in seen(sub.model)


async def test_delegation_block_fails_it_and_the_supervisor_goes_on() -> None:
    sub = worker("never")
    guard = guardrail(stop_secret, at="delegation", name="secrets")
    top = boss([delegate("worker", f"use {SECRET}"), "carried on"], {"worker": sub}, guards=[guard])
    result = await top.generate("go")
    assert result.text == "carried on" and sub.model.calls == []
    tool_result = top.model.calls[1][-1]
    assert isinstance(tool_result, ToolMessage) and "secrets" in str(tool_result.content) and SECRET not in str(tool_result.content)


async def test_result_redacted_before_the_supervisor_model_and_references() -> None:
    sub = worker(f"found {SECRET}", guards=[])
    top = boss(
        [delegate("worker", "find"), "final"], {"worker": sub}, guards=[guardrail(scrub, at="result")],
        default_options={"delegation": {"enable_result_references": True}},
    )  # fmt: skip
    stream = await top.stream("go")
    chunks = [c async for c in stream.full_stream]
    result = await stream.result()
    assert SECRET not in seen(top.model) and "found [REDACTED]" in seen(top.model)
    # the subagent's own tokens are its own (it has no guard); what crosses to the boss is redacted
    crossing = [c for c in chunks if c.agent_path == ("boss",) and c.type != "tool-call"]
    assert {"delegation-complete", "tool-result"} <= {c.type for c in crossing}
    assert all(SECRET not in str(c.payload) for c in crossing)
    assert result.delegations[0].text == "found [REDACTED]"


async def test_result_retry_runs_the_delegation_again_with_feedback() -> None:
    sub_model = ScriptedChatModel(responses=["bad answer", "good answer"])
    sub = Agent(id="worker-agent", description="Works.", model=sub_model, guardrails=[])

    def picky(ctx: GuardContext) -> Any:
        return retry("be good") if "bad" in ctx.text else allow()

    top = boss([delegate("worker", "try"), "final"], {"worker": sub}, guards=[guardrail(picky, at="result")])
    result = await top.generate("go")
    assert result.text == "final"
    assert len(sub_model.calls) == 2 and "be good" in str(sub_model.calls[1][-1].content)
    assert "good answer" in seen(top.model) and "bad answer" not in seen(top.model)


async def test_result_block_fails_the_delegation_with_the_guard_named() -> None:
    sub = worker(f"leak {SECRET}", guards=[])
    top = boss([delegate("worker", "x"), "ok"], {"worker": sub}, guards=[guardrail(stop_secret, at="result", name="secrets")])
    result = await top.generate("go")
    assert result.text == "ok" and SECRET not in seen(top.model)
    assert result.delegations[0].success is False and result.delegations[0].error == "TripwireError"


# -- a subagent's own boundaries, depth one and two ----------------------------------------------------


@pytest.mark.parametrize("leaf", [True, False])
async def test_subagent_output_block_fails_its_delegation(leaf: bool) -> None:
    guard = guardrail(stop_secret, at="output", name="secrets")
    inner = worker(f"inner {SECRET}", id="inner-agent")
    middle_model = ScriptedChatModel(responses=[delegate("inner", "go"), "middle done"])
    middle = Agent(id="middle-agent", description="Middle.", model=middle_model, agents={"inner": inner})
    if leaf:  # depth one: the leaf runs in its parent's node
        top = boss([delegate("worker", "go"), "top done"], {"worker": worker(f"w {SECRET}")}, guards=[guard])
        result = await top.generate("go")
        assert result.text == "top done"
    else:  # depth two: inherited through the middle agent
        top = boss([delegate("middle", "go"), "top done"], {"middle": middle}, guards=[guard])
        result = await top.generate("go")
        assert result.text == "top done"
        assert SECRET not in seen(middle_model) and "secrets" in seen(middle_model)
    assert SECRET not in seen(top.model)


async def test_subagent_declaring_no_guards_opts_out() -> None:
    sub = worker(f"w {SECRET}", guards=[])
    top = boss([delegate("worker", "go"), "top done"], {"worker": sub}, guards=[guardrail(stop_secret, at="output")])
    result = await top.generate("go")
    assert SECRET in seen(top.model)  # the subagent has no guards of its own; the top's output is fine
    assert result.text == "top done"


# -- bad guards ----------------------------------------------------------------------------------


async def test_a_raising_guard_trips_unless_it_opts_out() -> None:
    def broken(ctx: GuardContext) -> Any:
        raise RuntimeError("boom")

    agent = boss(["x"], guards=[guardrail(broken, at="input")])
    assert (await agent.generate("hi")).finish_reason == "tripwire"
    agent = boss(["x"], guards=[guardrail(broken, at="input", on_error="allow")])
    assert (await agent.generate("hi")).text == "x"


async def test_a_guard_returning_no_verdict_is_an_error_naming_it() -> None:
    agent = boss(["x"], guards=[guardrail(lambda ctx: "yes", at="output", name="sloppy")])
    with pytest.raises(TypeError, match="sloppy"):
        await agent.generate("hi")


def test_no_guard_costs_no_node_routing() -> None:
    plain = boss(["x"], {"worker": worker()})
    spec_guarded = boss(["x"], {"worker": worker()}, guards=[guardrail(scrub, at="result")])
    assert plain.graph is not None and spec_guarded.graph is not None
    assert re.search("worker", str(plain.graph.get_graph().nodes))
    _ = HumanMessage  # imported for readers of the stored threads above


async def test_tool_result_escalation_asks_after_the_tool_ran_once() -> None:
    ledger: list[str] = []
    memory = Memory(storage=":memory:")

    def reply(messages: Any) -> Any:
        return f"saw {messages[-1].content}" if isinstance(messages[-1], ToolMessage) else tool_call("lookup", {"q": "a"})

    guard = guardrail(lambda ctx: escalate("look at it"), at="tool_result", name="result-review")
    model = ScriptedChatModel(policy=reply)
    agent = Agent(id="boss", model=model, tools=[lookup_tool(ledger, "the result")], guardrails=[guard], memory=memory)
    paused = await agent.generate("go", memory={"thread": "trs-1"})
    assert paused.finish_reason == "suspended" and ledger == ["a"] and len(model.calls) == 1
    assert paused.suspended[0].payload["reason"] == "look at it"
    done = await agent.approve_tool_call(interrupt_id=paused.suspended[0].interrupt_id, memory={"thread": "trs-1"})
    assert done.text == "saw the result" and ledger == ["a"]  # the tool ran once


# -- an answer through the output schema's final_answer tool is an answer too --------------


class Secretive(BaseModel):
    note: str


async def test_output_guards_check_a_final_answer_call_at_the_top_and_in_a_leaf() -> None:
    answer = tool_call("final_answer", {"note": f"use {SECRET}"})
    top = boss([answer], guards=[guardrail(scrub, at="output")], output_schema=Secretive)
    result = await top.generate("go")
    assert result.object == Secretive(note="use [REDACTED]") and SECRET not in result.text

    blocked = await boss([answer], guards=[guardrail(stop_secret, at="output")], output_schema=Secretive).generate("go")
    assert blocked.finish_reason == "tripwire" and blocked.object is None and SECRET not in str(blocked.messages)

    leaf = Agent(
        id="worker-agent",
        description="Works.",
        model=ScriptedChatModel(responses=[answer]),
        guardrails=[guardrail(scrub, at="output")],
        output_schema=Secretive,
    )
    parent = Agent(id="boss", model=ScriptedChatModel(responses=[delegate("worker", "go"), "ok"]), agents={"worker": leaf})
    done = await parent.generate("go")
    assert done.delegations[0].object == Secretive(note="use [REDACTED]")
    assert SECRET not in seen(parent.model)  # type: ignore[arg-type]


# -- a leaf subagent holds an escalation for a person (its journal keeps what waits) -------------


@pytest.mark.parametrize("approve", [True, False])
async def test_a_leaf_subagents_output_escalation_waits_for_a_person(approve: bool) -> None:
    memory = Memory(storage=":memory:")
    sub_model = ScriptedChatModel(responses=["the leaf's answer"])
    sub = Agent(
        id="worker-agent", description="Works.", model=sub_model,
        guardrails=[guardrail(lambda ctx: escalate("a person reads it first"), at="output", name="review")],
    )  # fmt: skip
    top = Agent(id="boss", model=ScriptedChatModel(responses=[delegate("worker", "go"), "top done"]), agents={"worker": sub}, memory=memory)
    paused = await top.generate("go", memory={"thread": "leaf-esc"})
    assert paused.finish_reason == "suspended"
    [item] = paused.suspended
    assert (item.kind, item.tool_name, item.agent_path) == ("guard", "review", ("boss", "worker-agent"))
    answer = top.approve_tool_call if approve else top.decline_tool_call
    done = await answer(interrupt_id=item.interrupt_id, memory={"thread": "leaf-esc"})
    assert done.text == "top done" and len(sub_model.calls) == 1  # the leaf's model was not asked again
    delegation = done.delegations[0]
    if approve:
        assert delegation.success and delegation.text == "the leaf's answer"
        assert "the leaf's answer" in seen(top.model)  # type: ignore[arg-type]
    else:
        assert not delegation.success and delegation.error == "TripwireError"
        assert "the leaf's answer" not in seen(top.model)  # type: ignore[arg-type]


@pytest.mark.parametrize("approve", [True, False])
async def test_a_leaf_subagents_tool_result_escalation_waits_and_the_tool_runs_once(approve: bool) -> None:
    memory = Memory(storage=":memory:")
    ledger: list[str] = []
    sub_model = ScriptedChatModel(responses=[tool_call("lookup", {"q": "k"}), "used it"])
    sub = Agent(
        id="worker-agent", description="Works.", model=sub_model, tools=[lookup_tool(ledger)],
        guardrails=[guardrail(lambda ctx: escalate("look at it"), at="tool_result", name="result-review")],
    )  # fmt: skip
    top = Agent(id="boss", model=ScriptedChatModel(responses=[delegate("worker", "go"), "top done"]), agents={"worker": sub}, memory=memory)
    paused = await top.generate("go", memory={"thread": "leaf-tool-esc"})
    [item] = paused.suspended
    assert (item.kind, item.tool_name) == ("guard", "result-review") and ledger == ["k"]
    answer = top.approve_tool_call if approve else top.decline_tool_call
    done = await answer(interrupt_id=item.interrupt_id, memory={"thread": "leaf-tool-esc"})
    assert ledger == ["k"]  # the tool ran once
    assert done.delegations[0].success is approve
    if approve:
        assert SECRET in seen(sub_model) and done.delegations[0].text == "used it"
    else:
        assert len(sub_model.calls) == 1 and SECRET not in seen(top.model)  # type: ignore[arg-type]


# -- the delegation edges: checked in the nodes on either side, a pause in the hook node ---------


@pytest.mark.parametrize("boundary", ["delegation", "result"])
@pytest.mark.parametrize("approve", [True, False])
@pytest.mark.parametrize("hooked", [False, True])
async def test_an_edge_escalation_waits_in_the_hook_node(boundary: str, approve: bool, hooked: bool) -> None:
    memory = Memory(storage=":memory:")
    sub_model = ScriptedChatModel(policy=lambda m: "the worker's answer")
    sub = Agent(id="worker-agent", description="Works.", model=sub_model, guardrails=[])
    hooks: dict[str, Any] = {}
    if hooked:  # the hook node runs anyway: the guard decides there, after the start hook / before the complete hook
        hooks = {"on_delegation_start": lambda ctx: None, "on_delegation_complete": lambda ctx: None}
    top = Agent(
        id="boss", model=ScriptedChatModel(responses=[delegate("worker", "go"), "top done"]), agents={"worker": sub},
        guardrails=[guardrail(lambda ctx: escalate("a person checks"), at=boundary, name="edge-review")],
        memory=memory, default_options={"delegation": hooks},
    )  # fmt: skip
    paused = await top.generate("go", memory={"thread": f"edge-{boundary}-{approve}-{hooked}"})
    [item] = paused.suspended
    assert (item.kind, item.tool_name) == ("guard", "edge-review")
    calls_before = len(sub_model.calls)
    assert calls_before == (0 if boundary == "delegation" else 1)
    answer = top.approve_tool_call if approve else top.decline_tool_call
    done = await answer(interrupt_id=item.interrupt_id, memory={"thread": f"edge-{boundary}-{approve}-{hooked}"})
    assert done.text == "top done"
    assert len(sub_model.calls) == (1 if approve or boundary == "result" else 0)  # never run twice
    shown = seen(top.model)  # type: ignore[arg-type]
    assert ("the worker's answer" in shown) is approve


async def test_guarded_edges_without_hooks_take_no_super_step_of_their_own() -> None:
    from supervisor_graph.guardrails import Guardrail

    steps: dict[bool, int] = {}
    for guarded in (False, True):
        guards = [Guardrail(check=lambda ctx: allow(), at=["delegation", "result"], name="g")] if guarded else []
        top = boss([delegate("worker", "go"), "done"], {"worker": worker("ok")}, guards=guards)
        graph = top.compile()
        seen_steps = [c async for c in graph.astream({"messages": [HumanMessage("go")]}, stream_mode="debug") if c["type"] == "task"]
        steps[guarded] = len(seen_steps)
    assert steps[True] == steps[False]
