"""Guardrails under every driver (SPEC §23, §30): the compiled graph driven by
`graph.ainvoke` trips and forgets the blocked turn as the facade does, each verdict is a
custom event in `astream_events` and an OpenTelemetry span under the agent's span."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from supervisor_graph import Agent
from supervisor_graph.guardrails import GuardContext, allow, block, guardrail, redact
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

SECRET = "sk-GRAPH1122334455"


def stop_secret(ctx: GuardContext) -> Any:
    return block("a secret") if SECRET in ctx.text else allow()


def scrub(ctx: GuardContext) -> Any:
    return redact(ctx.text.replace(SECRET, "[REDACTED]")) if SECRET in ctx.text else allow()


async def test_compiled_graph_trip_forgets_the_turn_and_the_thread_goes_on() -> None:
    model = ScriptedChatModel(responses=["one", "two"])
    agent = Agent(id="boss", model=model, guardrails=[guardrail(stop_secret, at="input", name="secrets")])
    graph = agent.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "g-1"}}
    await graph.ainvoke({"messages": [HumanMessage("hello")]}, config)
    state = await graph.ainvoke({"messages": [HumanMessage(f"leak {SECRET}")]}, config)
    assert state["finish_reason"] == "tripwire"
    assert state["tripwire"]["guard"] == "secrets" and state["tripwire"]["boundary"] == "input"
    assert [m.content for m in state["messages"]] == ["hello", "one"]
    state = await graph.ainvoke({"messages": [HumanMessage("again")]}, config)
    assert state["finish_reason"] == "stop" and state.get("tripwire") is None
    assert [m.content for m in state["messages"]] == ["hello", "one", "again", "two"]
    assert all(SECRET not in str(m.content) for call in model.calls for m in call)


async def test_compiled_graph_redacts_a_result_at_depth_two() -> None:
    inner = Agent(id="inner-agent", description="Inner.", model=ScriptedChatModel(responses=[f"inner {SECRET}"]))
    middle_model = ScriptedChatModel(responses=[delegate("inner", "go"), "middle done"])
    middle = Agent(id="middle-agent", description="Middle.", model=middle_model, agents={"inner": inner})
    top_model = ScriptedChatModel(responses=[delegate("middle", "go"), "top done"])
    top = Agent(id="boss", model=top_model, agents={"middle": middle}, guardrails=[guardrail(scrub, at="result")])
    state = await top.compile().ainvoke({"messages": [HumanMessage("go")]})
    assert state["messages"][-1].content == "top done"
    seen_by_middle = "\n".join(str(m.content) for call in middle_model.calls for m in call)
    assert SECRET not in seen_by_middle and "inner [REDACTED]" in seen_by_middle  # inherited by the middle agent


async def test_verdicts_are_custom_events_in_astream_events() -> None:
    agent = Agent(id="boss", model=ScriptedChatModel(responses=[f"x {SECRET}"]), guardrails=[guardrail(scrub, at="output", name="scrub")])
    events = [e async for e in agent.compile().astream_events({"messages": [HumanMessage("hi")]}, version="v2")]
    guards = [e["data"] for e in events if e["event"] == "on_custom_event" and e["name"] == "guard"]
    assert guards == [{"guard": "scrub", "boundary": "output", "verdict": "redact", "agent_path": "boss"}]
    assert all(SECRET not in str(e["data"]) for e in events if e["event"] == "on_custom_event")


@pytest.fixture
def spans() -> Iterator[Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from supervisor_graph.nodes.observability import otel

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    before = otel._handler
    otel._handler = otel.AgentSpanHandler(provider.get_tracer("test"))
    try:
        yield exporter
    finally:
        otel._handler = before


async def test_each_verdict_is_a_span_under_the_agent_span(spans: Any) -> None:
    worker = Agent(id="worker-agent", name="Worker", description="Works.", model=ScriptedChatModel(responses=[f"w {SECRET}"]))
    guards = [guardrail(scrub, at=["result", "output"], name="scrub")]
    top = Agent(id="boss", name="Boss", model=ScriptedChatModel(responses=[delegate("worker", "go"), "done"]), agents={"worker": worker}, guardrails=guards)
    await top.generate("go")
    finished = {s.name: s for s in spans.get_finished_spans()}
    boss, sub = finished["invoke_agent Boss"], finished["invoke_agent Worker"]
    checks = [s for s in spans.get_finished_spans() if s.name == "guard scrub"]
    by_boundary = {(s.attributes["guard.boundary"], s.attributes["guard.verdict"]): s for s in checks}
    assert set(by_boundary) == {("output", "redact"), ("result", "allow"), ("output", "allow")}
    # the worker's own answer (inherited output guard) under its span; the boss's boundaries under the boss's
    assert by_boundary[("output", "redact")].parent.span_id == sub.context.span_id
    assert by_boundary[("result", "allow")].parent.span_id == boss.context.span_id
    assert by_boundary[("output", "allow")].parent.span_id == boss.context.span_id


async def test_a_judge_guards_tokens_count_in_usage_by_agent_and_against_budgets() -> None:
    from supervisor_graph.guardrails import prompt_injection

    def judgement(flagged: bool) -> dict[str, Any]:
        return tool_call("GuardJudgement", {"flagged": flagged, "reason": "gives orders" if flagged else "plain"})

    judge = ScriptedChatModel(policy=lambda m: judgement(False), input_tokens=100, output_tokens=20)
    worker = Agent(id="worker-agent", description="Works.", model=ScriptedChatModel(responses=["the facts"]))
    boss = Agent(
        id="boss",
        model=ScriptedChatModel(responses=[delegate("worker", "find"), "done"]),
        agents={"worker": worker},
        guardrails=[prompt_injection(model=judge, at="result")],
    )
    result = await boss.generate("go")
    assert result.usage_by_agent["boss/guard:prompt_injection"].total_tokens == 120
    assert result.usage.total_tokens == sum(u.total_tokens for u in result.usage_by_agent.values())

    # the judge's tokens use up a budget like any model call's: the supervisor stops before its next call
    boss_model = ScriptedChatModel(responses=[delegate("worker", "find"), "done"])
    tight = boss.model_copy(update={"model": boss_model})
    worker.model = ScriptedChatModel(responses=["the facts"])  # type: ignore[misc]
    stopped = await tight.generate("go", budget={"tokens": 100})
    assert stopped.finish_reason == "budget" and len(boss_model.calls) == 1
