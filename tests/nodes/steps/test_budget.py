"""Budgets (SPEC §25, nodes/steps/budget.py): tokens, seconds and tool calls, per call (the
whole tree) and per agent (each delegation), the 80% notice, the stop before the next
model call, `modified_budget`, parallel delegations, the compiled graph's context,
background tasks. `ScriptedChatModel` reports 15 tokens a call (10 in, 5 out)."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import ValidationError

from supervisor_graph import Agent, Budget, Memory, RunOptions
from supervisor_graph.nodes.steps import budget as budget_module
from supervisor_graph.nodes.steps.budget import BudgetScope, child_budget, open_budget
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

_threads = itertools.count()


def looping() -> ScriptedChatModel:
    """A model that calls `lookup` on every turn and never answers by itself."""
    return ScriptedChatModel(policy=lambda m: tool_call("lookup", {"q": "x"}))


def counted(runs: list[str], delay: float = 0.0) -> Any:
    async def lookup(q: str) -> str:
        """Looks something up."""
        if delay:
            await asyncio.sleep(delay)
        runs.append(q)
        return "found"

    return lookup


def worker(model: ScriptedChatModel, runs: list[str], key: str = "worker", **fields: Any) -> Agent:
    return Agent(id=f"{key}-agent", description="Works.", model=model, tools=[counted(runs)], **fields)


def boss_policy(*keys: str) -> Any:
    """Delegate to each of `keys` in one turn, then answer with what came back."""

    def policy(messages: list[BaseMessage]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return "done: " + " | ".join(str(m.content) for m in messages if isinstance(m, ToolMessage))
        return [delegate(key, "work", id=f"call-{key}") for key in keys]

    return policy


def notices(model: ScriptedChatModel) -> list[tuple[int, str]]:
    """(call index, notice line) for every budget notice the model was given."""
    found = []
    for index, messages in enumerate(model.calls):
        for message in messages[-1:]:  # after the conversation: the prefix stays the same (issue 51)
            if isinstance(message, HumanMessage):
                found.extend((index, line) for line in str(message.content).splitlines() if line.startswith("Budget notice"))
    return found


def all_answered(messages: Sequence[BaseMessage]) -> bool:
    calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    return calls <= {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}


# -- the model ------------------------------------------------------------------------------


def test_a_budget_is_validated() -> None:
    assert Budget.model_validate({"tokens": 10, "seconds": 1, "tool_calls": 0}) == Budget(tokens=10, seconds=1.0, tool_calls=0)
    for bad in ({"tokens": True}, {"tokens": -1}, {"seconds": -0.5}, {"calls": 3}):
        with pytest.raises(ValidationError):
            Budget.model_validate(bad)
    assert RunOptions.model_validate({"budget": {"tokens": 5}}).budget == Budget(tokens=5)
    with pytest.raises(ValidationError):
        Agent(id="a", model=looping(), budget={"token": 5})


def test_no_budget_means_no_scope() -> None:
    # a run without budgets carries None: each check is one test of None
    assert open_budget(None, None) is None and open_budget(Budget(), None) is None
    assert child_budget(None, None, None) is None
    scope = open_budget(Budget(tokens=10), None)
    assert isinstance(scope, BudgetScope) and len(scope.meters) == 1
    child = child_budget(scope, None, Budget(tool_calls=2))
    assert child is not None and child.meters[0] is scope.meters[0] and len(child.meters) == 2
    assert child_budget(scope, {"tokens": 3}, Budget(tokens=100)).own == Budget(tokens=3)  # type: ignore[union-attr]


# -- the stop, per limit ------------------------------------------------------------------------


@pytest.mark.parametrize(("tokens", "calls"), [(45, 3), (40, 3), (46, 4), (15, 1)])
async def test_a_token_budget_stops_the_run_before_the_call_past_it(tokens: int, calls: int) -> None:
    runs: list[str] = []
    model = looping()
    agent = Agent(id="solo", model=model, tools=[counted(runs)])
    result = await agent.generate("go", max_steps=50, budget={"tokens": tokens})
    assert result.finish_reason == "budget"
    assert len(model.calls) == calls and result.usage.total_tokens == 15 * calls
    assert len(runs) == calls and all_answered(result.messages)  # every tool call has its result
    assert result.text == ""


async def test_a_tool_call_budget_runs_exactly_that_many_tools() -> None:
    runs: list[str] = []
    model = looping()
    agent = Agent(id="solo", model=model, tools=[counted(runs)])
    result = await agent.generate("go", max_steps=50, budget={"tool_calls": 3})
    assert (result.finish_reason, len(runs), len(model.calls)) == ("budget", 3, 3)


async def test_parallel_tool_calls_past_the_budget_do_not_run() -> None:
    runs: list[str] = []
    model = ScriptedChatModel(responses=[[tool_call("lookup", {"q": str(i)}) for i in range(5)]], policy=lambda m: "never")
    agent = Agent(id="solo", model=model, tools=[counted(runs)])
    result = await agent.generate("go", budget={"tool_calls": 3})
    assert result.finish_reason == "budget" and len(runs) == 3 and len(model.calls) == 1
    texts = sorted(str(m.content) for m in result.messages if isinstance(m, ToolMessage))
    assert texts == ["[Budget exceeded] tool_calls"] * 2 + ["found"] * 3
    assert all_answered(result.messages)


class Clock:
    """The budget's clock, moved on by the test's tools and model instead of by sleeping:
    a time budget then stops where the test says, however loaded the machine is."""

    def __init__(self) -> None:
        self.skipped = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.skipped


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(budget_module, "time", fake)
    return fake


async def test_a_time_budget_stops_after_a_slow_tool(clock: Clock) -> None:
    runs: list[str] = []
    model = looping()

    async def lookup(q: str) -> str:
        """Looks something up."""
        clock.skipped += 100  # a tool that takes 100 s
        runs.append(q)
        return "found"

    agent = Agent(id="solo", model=model, tools=[lookup])
    result = await agent.generate("go", max_steps=50, budget={"seconds": 60})
    # the slow tool finishes; the model is not called again
    assert (result.finish_reason, len(model.calls), len(runs)) == ("budget", 1, 1)


async def test_a_time_budget_stops_after_a_slow_model(clock: Clock) -> None:
    def slow(messages: Sequence[BaseMessage]) -> Any:
        clock.skipped += 40  # a model call that takes 40 s
        return tool_call("lookup", {"q": "x"})

    model = ScriptedChatModel(policy=slow)
    agent = Agent(id="solo", model=model, tools=[counted([])])
    result = await agent.generate("go", max_steps=50, budget={"seconds": 60})
    assert (result.finish_reason, len(model.calls)) == ("budget", 2)


async def test_the_notice_at_80_percent_is_given_once() -> None:
    model = looping()
    agent = Agent(id="solo", instructions="Be brief.", model=model, tools=[counted([])])
    result = await agent.generate("go", max_steps=50, budget={"tokens": 200})
    # 165 of 200 used before the 12th call: that call, and no other, carries the notice
    assert result.finish_reason == "budget" and len(model.calls) == 14
    assert notices(model) == [(11, "Budget notice: 82% of the token budget (165 of 200) is used; finish soon.")]
    assert all(str(call[0].content) == "Be brief." for call in model.calls)  # the system prompt never changes
    assert model.calls[12][-1].content != model.calls[11][-1].content  # the next call is back to normal
    # nothing of the notice is stored
    assert not any("Budget notice" in str(m.content) for m in result.messages)


async def test_each_limit_is_told_once() -> None:
    model = looping()
    agent = Agent(id="solo", model=model, tools=[counted([])])
    result = await agent.generate("go", max_steps=50, budget={"tokens": 165, "tool_calls": 10})
    # the tool-call limit reaches 80% first, the token limit a call later; the tool calls run out first
    assert notices(model) == [
        (8, "Budget notice: 80% of the tool-call budget (8 of 10) is used; finish soon."),
        (9, "Budget notice: 81% of the token budget (135 of 165) is used; finish soon."),
    ]
    assert result.finish_reason == "budget" and len(model.calls) == 10


# -- per call and per agent ----------------------------------------------------------------------


async def test_an_agents_budget_covers_each_delegation_to_it() -> None:
    runs: list[str] = []
    sub_model = looping()
    boss_model = ScriptedChatModel(
        responses=[delegate("worker", "one"), delegate("worker", "two")], policy=lambda m: "both stopped"
    )
    boss = Agent(id="boss", model=boss_model, agents={"worker": worker(sub_model, runs, budget={"tokens": 30})})
    result = await boss.generate("go", max_steps=10)
    # each delegation got its own 30 tokens: two calls each; the supervisor went on
    assert result.finish_reason == "stop" and result.text == "both stopped"
    assert len(sub_model.calls) == 4 and len(runs) == 4
    assert [d.text for d in result.delegations] == ["[Budget exceeded] tokens"] * 2
    assert [d.finish_reason for d in result.delegations] == ["budget", "budget"]
    seen = [m for m in boss_model.calls[2] if isinstance(m, ToolMessage)]
    assert [m.content for m in seen] == ["[Budget exceeded] tokens"] * 2 and all(m.status != "error" for m in seen)


async def test_the_calls_budget_covers_the_whole_tree() -> None:
    sub_model = looping()
    boss_model = ScriptedChatModel(policy=boss_policy("worker"))
    boss = Agent(id="boss", model=boss_model, agents={"worker": worker(sub_model, [])})
    result = await boss.generate("go", max_steps=10, budget={"tokens": 60})
    # the supervisor's 15, then the worker's 15, 30, 45: at 60 the worker stops, then the supervisor
    assert result.finish_reason == "budget" and result.usage.total_tokens == 60
    assert (len(boss_model.calls), len(sub_model.calls)) == (1, 3)
    assert result.delegations[0].text == "[Budget exceeded] tokens"
    assert all_answered(result.messages)


async def test_the_top_agents_own_budget_covers_each_call() -> None:
    model = looping()
    agent = Agent(id="solo", model=model, tools=[counted([])], budget={"tool_calls": 2})
    first = await agent.generate("go", max_steps=50)
    second = await agent.generate("again", max_steps=50)
    assert first.finish_reason == second.finish_reason == "budget" and len(model.calls) == 4


async def test_a_nested_agents_budget_stops_its_own_subagent_too() -> None:
    leaf_model = looping()
    leaf = worker(leaf_model, [], key="leaf")
    mid_model = ScriptedChatModel(policy=boss_policy("leaf"))
    mid = Agent(id="mid-agent", description="Middle.", model=mid_model, agents={"leaf": leaf}, budget={"tokens": 45})
    top = Agent(id="top", model=ScriptedChatModel(policy=boss_policy("mid")), agents={"mid": mid})
    result = await top.generate("go", max_steps=10)
    # the middle agent's 45 tokens: its own call, then two of the leaf's; the leaf stops, then the middle agent
    assert (len(mid_model.calls), len(leaf_model.calls)) == (1, 2)
    assert result.finish_reason == "stop" and result.text == "done: [Budget exceeded] tokens"
    assert result.delegations[0].finish_reason == "budget"


async def test_modified_budget_replaces_the_subagents_own() -> None:
    sub_model = looping()
    boss = Agent(
        id="boss",
        model=ScriptedChatModel(policy=boss_policy("worker")),
        agents={"worker": worker(sub_model, [], budget={"tokens": 1000})},
    )
    seen: list[Any] = []

    def on_start(ctx: Any) -> dict[str, Any]:
        seen.append(ctx.primitive_id)
        return {"modified_budget": {"tokens": 15}}

    result = await boss.generate("go", max_steps=10, delegation={"on_delegation_start": on_start})
    assert seen == ["worker-agent"] and len(sub_model.calls) == 1
    assert result.text == "done: [Budget exceeded] tokens" and result.finish_reason == "stop"


async def test_parallel_delegations_share_the_calls_budget() -> None:
    models = {"a": looping(), "b": looping()}
    boss = Agent(
        id="boss",
        model=ScriptedChatModel(policy=boss_policy("a", "b")),
        agents={key: worker(model, [], key=key) for key, model in models.items()},
    )
    result = await boss.generate("go", max_steps=10, budget={"tokens": 90})
    sub_calls = len(models["a"].calls) + len(models["b"].calls)
    # one budget for both: 5 calls after the supervisor's (the last check may race one call past)
    assert sub_calls in (5, 6) and result.usage.total_tokens == 15 * (1 + sub_calls)
    assert result.finish_reason == "budget"
    assert sorted(d.text for d in result.delegations) == ["[Budget exceeded] tokens"] * 2
    assert all_answered(result.messages)


async def test_the_finish_chunk_says_budget() -> None:
    agent = Agent(id="solo", model=looping(), tools=[counted([])])
    stream = await agent.stream("go", max_steps=50, budget={"tokens": 30})
    chunks = [c async for c in stream.full_stream]
    finish = chunks[-1]
    assert finish.type == "finish" and finish.payload["finish_reason"] == "budget"
    assert (await stream.result()).finish_reason == "budget"


async def test_a_budget_adds_no_step_and_no_checkpoint() -> None:
    async def checkpoints(context: dict[str, Any] | None) -> int:
        sub = Agent(id="worker-agent", description="Works.", model=ScriptedChatModel(policy=lambda m: "ok"))
        boss = Agent(id="boss", model=ScriptedChatModel(policy=boss_policy("worker")), agents={"worker": sub})
        saver = InMemorySaver()
        config = {"configurable": {"thread_id": "steps"}}
        out = await boss.compile(checkpointer=saver).ainvoke({"messages": [HumanMessage("go")]}, config, context=context)
        assert out["finish_reason"] == "stop"
        return len([c async for c in saver.alist(None)])

    assert await checkpoints({"budget": {"tokens": 10_000, "seconds": 60, "tool_calls": 10}}) == await checkpoints(None)


# -- threads: memory, sqlite, Postgres --------------------------------------------------------------


async def test_the_thread_stays_valid_and_the_next_call_works(memory: Memory) -> None:
    sub_model = looping()
    boss_model = ScriptedChatModel(policy=boss_policy("worker"))
    boss = Agent(id="boss", model=boss_model, agents={"worker": worker(sub_model, [])}, memory=memory)
    thread = f"budget-{next(_threads)}"
    first = await boss.generate("go", memory={"thread": thread}, max_steps=10, budget={"tokens": 45})
    assert first.finish_reason == "budget" and first.delegations[0].text == "[Budget exceeded] tokens"
    stored = await memory.get_messages(thread)
    assert all_answered(stored)
    sub_thread = first.delegations[0].sub_agent_thread_id
    assert sub_thread is not None and all_answered(await memory.get_messages(sub_thread))
    second = await boss.generate("and now?", memory={"thread": thread}, max_steps=10)
    assert second.finish_reason == "stop" and second.text.startswith("done: ")
    assert all_answered(await memory.get_messages(thread))


async def test_the_compiled_graph_takes_the_budget_from_its_context(memory: Memory) -> None:
    sub_model = looping()
    boss_model = ScriptedChatModel(policy=boss_policy("worker"))
    boss = Agent(id="boss", model=boss_model, agents={"worker": worker(sub_model, [])})
    opened = await memory.opened()
    graph = boss.compile(checkpointer=opened.saver, store=opened.store)
    config = {"configurable": {"thread_id": f"graph-{next(_threads)}"}, "recursion_limit": 100}
    out = await graph.ainvoke({"messages": [HumanMessage("go")]}, config, context={"budget": {"tokens": 60}})
    assert out["finish_reason"] == "budget" and (len(boss_model.calls), len(sub_model.calls)) == (1, 3)
    [result] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert result.content == "[Budget exceeded] tokens" and all_answered(out["messages"])
    # the next run on the thread, without a budget, goes on
    again = await graph.ainvoke({"messages": [HumanMessage("more")]}, config, context={"max_steps": 1})
    assert again["finish_reason"] == "max_steps" and all_answered(again["messages"])


async def test_the_compiled_graph_applies_an_agents_budget_without_context() -> None:
    model = looping()
    agent = Agent(id="solo", model=model, tools=[counted([])], budget={"tokens": 30})
    out = await agent.compile(checkpointer=InMemorySaver()).ainvoke(
        {"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "g"}, "recursion_limit": 100}
    )
    assert out["finish_reason"] == "budget" and len(model.calls) == 2


async def test_a_background_task_has_its_subagents_budget(memory: Memory) -> None:
    sub_model = looping()
    research = worker(sub_model, [], key="research", budget={"tokens": 30})

    def policy(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage) and str(last.content).startswith("[Background task"):
            return "reported: " + str(last.content)
        return "started" if isinstance(last, ToolMessage) else delegate("research", "dig")

    boss = Agent(
        id="boss",
        model=ScriptedChatModel(policy=policy),
        agents={"research": research},
        memory=memory,
        background_tasks={"tools": {"research": {"enabled": True}}},
    )
    thread = f"bg-budget-{next(_threads)}"
    # the call's budget does not cover the task, which outlives the call: its own does
    result = await boss.generate_until_idle("go", memory={"thread": thread}, max_steps=10, budget={"tokens": 10_000})
    assert result.text.endswith("completed]\n[Budget exceeded] tokens")
    assert len(sub_model.calls) == 2
    [task] = await memory.list_background_tasks(thread)
    assert (task.status, task.result_text) == ("completed", "[Budget exceeded] tokens")
