"""Model calls whose answers a guard kept out of the thread are still counted (SPEC §25,
§30; issue 47 item 4): in `usage`, `usage_by_agent`, the budgets and AG-UI's usage.

The parallel input guard here trips only once the model call has returned (the model
sets an event as its `ainvoke` returns, the guard waits on it), so nothing depends on
timing: before the fix such a run reported usage 0/0/0.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import ToolMessage
from pydantic import PrivateAttr

from supervisor_graph import Agent, Budget, Usage
from supervisor_graph.agui import AGUIAgent
from supervisor_graph.guardrails import GuardContext, allow, block, guardrail, retry
from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions
from supervisor_graph.nodes.steps.budget import open_budget
from supervisor_graph.testing import ScriptedChatModel, delegate
from tests.agui.conftest import collect, make_input, wire

ONE_CALL = Usage(input_tokens=100, output_tokens=7, total_tokens=107)


class Answered(ScriptedChatModel):
    """Sets `answered` as a call returns its answer to the agent."""

    _answered: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)

    @property
    def answered(self) -> asyncio.Event:
        return self._answered

    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        out = await super().ainvoke(*args, **kwargs)
        self._answered.set()
        return out


def tripped_after_the_answer() -> tuple[Agent, Answered]:
    model = Answered(policy=lambda m: "an answer nobody will see", input_tokens=100, output_tokens=7)

    async def judge(ctx: GuardContext) -> Any:
        await model.answered.wait()  # a judge slower than the model
        return block("off topic")

    guard = guardrail(judge, at="input", mode="parallel", name="judge")
    return Agent(id="support", model=model, guardrails=[guard]), model


async def test_a_parallel_input_guard_that_trips_after_the_answer_reports_what_was_spent() -> None:
    agent, model = tripped_after_the_answer()
    result = await agent.generate("what about the weather?")
    assert result.finish_reason == "tripwire" and result.tripwire is not None and result.text == ""
    assert len(model.calls) == 1
    assert result.usage == ONE_CALL
    assert result.usage_by_agent == {"support": ONE_CALL}


async def test_the_stream_reports_it_too_in_a_step_finish_and_its_result() -> None:
    agent, _ = tripped_after_the_answer()
    stream = await agent.stream("what about the weather?")
    chunks = [c async for c in stream.full_stream]
    result = await stream.result()
    assert result.usage == ONE_CALL
    [finished] = [c for c in chunks if c.type == "step-finish"]
    assert finished.payload["usage"]["total_tokens"] == 107 and finished.payload["reasoning_artifacts"] == []
    assert not [c for c in chunks if c.type == "text-delta"]  # the answer itself never streams
    assert chunks[-1].type == "finish" and chunks[-1].usage == ONE_CALL  # type: ignore[attr-defined]


async def test_the_budget_meter_counts_it() -> None:
    agent, _ = tripped_after_the_answer()
    scope = open_budget(Budget(tokens=1000), None)
    assert scope is not None
    handle = RunHandle(run_id="r1", agent_path=("support",), budget=scope)
    out = await agent.graph.ainvoke({"messages": [("user", "hi")]}, context=RunContext.for_run(RunOptions(), handle))
    assert out["finish_reason"] == "tripwire"
    assert scope.meters[0].usage["total_tokens"] == 107


async def test_ag_ui_reports_the_usage_of_a_tripped_run() -> None:
    agent, _ = tripped_after_the_answer()
    events = wire(await collect(AGUIAgent(agent, resource_id="u1"), make_input("t-tripped-usage")))
    assert events[-1]["usage"] == [{"model": "scripted", "inputTokens": 100, "outputTokens": 7, "totalTokens": 107}]


def _critic(sent_back: list[str]) -> Any:
    def critic(ctx: GuardContext) -> Any:
        if not sent_back:
            sent_back.append(ctx.text)
            return retry("Say it in fewer words.")
        return allow()

    return guardrail(critic, at="output", name="critic")


async def test_an_answer_sent_back_by_an_output_guard_counts_and_can_use_up_a_budget() -> None:
    sent_back: list[str] = []
    model = ScriptedChatModel(policy=lambda m: "answer", input_tokens=100, output_tokens=7)
    agent = Agent(id="support", model=model, guardrails=[_critic(sent_back)])
    result = await agent.generate("hi")
    assert len(model.calls) == 2 and result.text == "answer"
    assert result.usage == Usage(input_tokens=200, output_tokens=14, total_tokens=214)

    # the sent-back answer alone is over a budget of 100 tokens: no second call
    sent_back.clear()
    capped = ScriptedChatModel(policy=lambda m: "answer", input_tokens=100, output_tokens=7)
    agent = Agent(id="support", model=capped, guardrails=[_critic(sent_back)], budget={"tokens": 100})
    result = await agent.generate("hi")
    assert result.finish_reason == "budget" and len(capped.calls) == 1 and result.usage == ONE_CALL


async def test_a_leaf_subagents_sent_back_answer_counts_under_its_path() -> None:
    sent_back: list[str] = []
    sub_model = ScriptedChatModel(policy=lambda m: "sub answer", input_tokens=100, output_tokens=7)
    sub = Agent(id="sub-agent", description="Answers.", model=sub_model, guardrails=[_critic(sent_back)])
    boss_model = ScriptedChatModel(
        policy=lambda m: "done" if isinstance(m[-1], ToolMessage) else delegate("sub", "x"), input_tokens=1, output_tokens=1
    )
    result = await Agent(id="boss", model=boss_model, agents={"sub": sub}).generate("hi")
    assert len(sub_model.calls) == 2 and result.delegations[0].text == "sub answer"
    assert result.usage_by_agent["boss/sub-agent"] == Usage(input_tokens=200, output_tokens=14, total_tokens=214)
    assert result.usage_by_agent["boss"] == Usage(input_tokens=2, output_tokens=2, total_tokens=4)
    assert result.usage.total_tokens == 218


async def test_an_escalated_answer_counts_once_whether_a_person_declines_or_approves_it() -> None:
    from supervisor_graph import Memory
    from supervisor_graph.guardrails import escalate

    memory = Memory(storage=":memory:")
    model = ScriptedChatModel(policy=lambda m: "an answer", input_tokens=100, output_tokens=7)
    review = guardrail(lambda ctx: escalate("a person reads it first"), at="output", name="review")
    agent = Agent(id="support", model=model, guardrails=[review], memory=memory)
    for decide, reason in ((agent.decline_tool_call_stream, "tripwire"), (agent.approve_tool_call_stream, "stop")):
        paused = await agent.generate("hi", memory={"thread": f"esc-{reason}"})
        assert paused.finish_reason == "suspended"
        stream = await decide(interrupt_id=paused.suspended[0].interrupt_id, memory={"thread": f"esc-{reason}"})
        chunks = [c async for c in stream.full_stream]
        result = await stream.result()
        assert result.finish_reason == reason
        assert result.usage == ONE_CALL and result.usage_by_agent == {"support": ONE_CALL}
        # the held call ends in the run that settles it: AG-UI meters it there, once
        assert [c.payload["usage"]["total_tokens"] for c in chunks if c.type == "step-finish"] == [107]
    assert len(model.calls) == 2
