"""Usage by agent (SPEC §24): `result.usage_by_agent` gives each agent's own model
usage under its path, the entries sum to `result.usage`, and the `finish` chunk carries
the same. Each agent's model reports distinct token counts, so every figure below says
exactly which calls it counted."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.nodes.state import usage_by_agent_of_run, usage_of_run
from supervisor_graph.run.chunks import Usage
from supervisor_graph.run.results import GenerateResult
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


def usage(calls: int, input_tokens: int, output_tokens: int) -> Usage:
    """What `calls` calls of a model reporting these counts add up to."""
    return Usage(
        input_tokens=calls * input_tokens,
        output_tokens=calls * output_tokens,
        total_tokens=calls * (input_tokens + output_tokens),
    )


def assert_sums_to_usage(result: GenerateResult) -> None:
    for field in ("input_tokens", "output_tokens", "total_tokens"):
        assert sum(getattr(u, field) for u in result.usage_by_agent.values()) == getattr(result.usage, field), field


def model(*, input_tokens: int, output_tokens: int, responses: list[Any] | None = None, policy: Any = None) -> ScriptedChatModel:
    return ScriptedChatModel(
        responses=responses or [], policy=policy, input_tokens=input_tokens, output_tokens=output_tokens
    )


def answers_after_results(calls: Any, final: str = "final") -> Any:
    """A supervisor policy: make `calls`, then answer once their results are in."""
    return lambda messages: final if isinstance(messages[-1], ToolMessage) else calls


def researcher() -> Agent:
    return Agent(id="research-agent", description="Finds facts.", model=model(input_tokens=100, output_tokens=20, policy=lambda m: "facts"))


def writer() -> Agent:
    return Agent(id="writing-agent", description="Writes.", model=model(input_tokens=300, output_tokens=40, policy=lambda m: "article"))


async def test_without_delegation_the_top_agent_has_it_all() -> None:
    agent = Agent(id="solo-agent", model=model(input_tokens=7, output_tokens=3, responses=["hi"]))
    result = await agent.generate("go")
    assert result.usage_by_agent == {"solo-agent": usage(1, 7, 3)}
    assert_sums_to_usage(result)


async def test_one_delegation_splits_the_supervisor_from_its_subagent() -> None:
    parent = Agent(
        id="parent-agent",
        model=model(input_tokens=10, output_tokens=5, responses=[delegate("research", "find"), "done"]),
        agents={"research": researcher()},
    )
    result = await parent.generate("go")
    assert result.usage_by_agent == {
        "parent-agent": usage(2, 10, 5),
        "parent-agent/research-agent": usage(1, 100, 20),
    }
    assert result.usage == Usage(input_tokens=20 + 100, output_tokens=10 + 20, total_tokens=30 + 120)
    assert_sums_to_usage(result)


async def test_several_delegations_sum_per_agent() -> None:
    script = [delegate("research", "a"), delegate("write", "b"), delegate("research", "c"), "done"]
    parent = Agent(
        id="parent-agent",
        model=model(input_tokens=10, output_tokens=5, responses=script),
        agents={"research": researcher(), "write": writer()},
    )
    result = await parent.generate("go")
    assert result.usage_by_agent == {
        "parent-agent": usage(4, 10, 5),
        "parent-agent/research-agent": usage(2, 100, 20),  # two delegations to it: one entry
        "parent-agent/writing-agent": usage(1, 300, 40),
    }
    assert result.usage.total_tokens == 4 * 15 + 2 * 120 + 340
    assert_sums_to_usage(result)


async def test_parallel_delegations() -> None:
    calls = [delegate("research", "a"), delegate("write", "b"), delegate("research", "c")]
    parent = Agent(
        id="parent-agent",
        model=model(input_tokens=10, output_tokens=5, policy=answers_after_results(calls)),
        agents={"research": researcher(), "write": writer()},
    )
    result = await parent.generate("go")
    assert len([m for m in result.messages if isinstance(m, ToolMessage)]) == 3
    assert result.usage_by_agent == {
        "parent-agent": usage(2, 10, 5),
        "parent-agent/research-agent": usage(2, 100, 20),
        "parent-agent/writing-agent": usage(1, 300, 40),
    }
    assert_sums_to_usage(result)


def depth_three() -> Agent:
    """parent-agent -> research-agent -> fact-checker: the middle agent runs as a graph of
    its own, the leaf inside its parent's node (nodes/turn/leaf.py), so both paths report."""
    fact_checker = Agent(id="fact-checker", description="Checks.", model=model(input_tokens=1, output_tokens=1, policy=lambda m: "ok"))
    research = Agent(
        id="research-agent",
        description="Researches.",
        model=model(input_tokens=100, output_tokens=10, policy=answers_after_results(delegate("check", "c"), "checked facts")),
        agents={"check": fact_checker},
    )
    return Agent(
        id="parent-agent",
        model=model(input_tokens=1000, output_tokens=0, policy=answers_after_results(delegate("research", "r"))),
        agents={"research": research},
    )


DEPTH_THREE = {
    "parent-agent": usage(2, 1000, 0),
    "parent-agent/research-agent": usage(2, 100, 10),
    "parent-agent/research-agent/fact-checker": usage(1, 1, 1),
}


async def test_depth_three_keeps_each_agent_under_its_own_path() -> None:
    result = await depth_three().generate("go")
    assert result.usage_by_agent == DEPTH_THREE
    assert result.usage == Usage(input_tokens=2000 + 200 + 1, output_tokens=0 + 20 + 1, total_tokens=2000 + 220 + 2)
    assert_sums_to_usage(result)


async def test_depth_three_with_a_completion_hook_on_a_thread() -> None:
    # the hook sends each delegation's artifact through `<key>.complete`, and with a thread
    # the figures are read back from checkpoints: the breakdown arrives the same way
    seen: list[str] = []
    agent = depth_three().model_copy(update={"memory": Memory(":memory:")})
    result = await agent.generate(
        "go", memory={"thread": "by-agent"}, delegation={"on_delegation_complete": lambda ctx: seen.append(ctx.result.agent_id)}
    )
    assert seen and result.usage_by_agent == DEPTH_THREE
    # a second run on the thread counts its own calls only
    again = await agent.generate("again", memory={"thread": "by-agent"})
    assert again.usage_by_agent == DEPTH_THREE
    assert_sums_to_usage(again)


class Query(BaseModel):
    query: str


async def test_a_subagents_tools_cost_nothing_its_model_calls_count() -> None:
    search = create_tool(id="search", description="Search.", input_schema=Query, execute=lambda a: f"found {a.query}")
    research = Agent(
        id="research-agent",
        description="Searches.",
        tools=[search],
        model=model(input_tokens=100, output_tokens=20, policy=answers_after_results(tool_call("search", {"query": "x"}), "facts")),
    )
    parent = Agent(
        id="parent-agent",
        tools=[search],
        model=model(
            input_tokens=10,
            output_tokens=5,
            responses=[tool_call("search", {"query": "y"}), delegate("research", "find"), "done"],
        ),
        agents={"research": research},
    )
    result = await parent.generate("go")
    assert result.usage_by_agent == {
        "parent-agent": usage(3, 10, 5),
        "parent-agent/research-agent": usage(2, 100, 20),
    }
    assert_sums_to_usage(result)


class Amount(BaseModel):
    amount: int


def paying_team() -> Agent:
    pay = create_tool(id="pay", description="Pay.", input_schema=Amount, execute=lambda a: f"paid {a.amount}", require_approval=True)
    payer = Agent(
        id="payer-agent",
        description="Pays.",
        tools=[pay],
        model=model(input_tokens=100, output_tokens=20, policy=answers_after_results(tool_call("pay", {"amount": 5}), "paid")),
    )
    return Agent(
        id="parent-agent",
        model=model(input_tokens=10, output_tokens=5, policy=answers_after_results(delegate("payer", "pay 5"))),
        agents={"payer": payer},
    )


async def test_a_run_paused_for_approval_and_resumed() -> None:
    agent = paying_team()
    paused = await agent.generate("go")
    assert paused.finish_reason == "suspended"
    # the subagent's call before the pause reaches the parent with its delegation's result
    assert paused.usage_by_agent == {"parent-agent": usage(1, 10, 5)}
    assert_sums_to_usage(paused)
    done = await agent.approve_tool_call(run_id=paused.run_id)
    assert done.text == "final"
    assert done.usage_by_agent == {
        "parent-agent": usage(2, 10, 5),
        "parent-agent/payer-agent": usage(2, 100, 20),  # its call before the pause and after
    }
    assert_sums_to_usage(done)


async def test_a_paused_run_resumed_from_its_thread_streams_the_same_breakdown() -> None:
    agent = paying_team().model_copy(update={"memory": Memory(":memory:")})
    paused = await agent.generate("go", memory={"thread": "pay"})
    stream = await agent.approve_tool_call_stream(run_id=paused.run_id, memory={"thread": "pay"})
    chunks = [c async for c in stream.full_stream]
    done = await stream.result()
    assert chunks[-1].payload["usage_by_agent"] == {
        "parent-agent": usage(2, 10, 5).model_dump(),
        "parent-agent/payer-agent": usage(2, 100, 20).model_dump(),
    }
    assert_sums_to_usage(done)


async def test_the_finish_chunk_carries_it_as_plain_json() -> None:
    stream = await depth_three().stream("go")
    chunks = [c async for c in stream.full_stream]
    result = await stream.result()
    finish = chunks[-1]
    assert finish.type == "finish"
    assert finish.payload["usage_by_agent"] == {path: u.model_dump() for path, u in DEPTH_THREE.items()}
    assert json.loads(json.dumps(finish.payload))["usage_by_agent"]["parent-agent/research-agent/fact-checker"] == {
        "input_tokens": 1,
        "output_tokens": 1,
        "total_tokens": 2,
    }
    assert result.usage_by_agent == DEPTH_THREE


async def test_generate_until_idle_sums_its_runs_per_agent() -> None:
    def boss_policy(messages: list[Any]) -> Any:
        last = messages[-1]
        if str(last.content).startswith("[Background task"):
            return "reported"
        if isinstance(last, ToolMessage):
            return delegate("write", "w") if len([m for m in messages if isinstance(m, ToolMessage)]) == 1 else "started"
        return delegate("research", "dig")

    boss = Agent(
        id="boss",
        model=model(input_tokens=10, output_tokens=5, policy=boss_policy),
        agents={"research": researcher(), "write": writer()},
        memory=Memory(":memory:"),
        background_tasks={"tools": {"research": {}}},
    )
    result = await boss.generate_until_idle("go", memory={"thread": "idle"})
    assert result.text == "reported"
    # two runs: the first delegates in the background and in the foreground, the second
    # answers the task's outcome (a background task's own calls are not the run's usage)
    assert result.usage_by_agent == {"boss": usage(4, 10, 5), "boss/writing-agent": usage(1, 300, 40)}
    assert_sums_to_usage(result)


def test_a_delegation_result_without_a_breakdown_counts_whole_under_its_subagent() -> None:
    # a remote subagent's result, or one checkpointed before the breakdown existed
    counts = {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}
    double = {"input_tokens": 14, "output_tokens": 6, "total_tokens": 20}
    messages = [
        HumanMessage(content="earlier run"),
        AIMessage(content="not counted", usage_metadata={"input_tokens": 50, "output_tokens": 50, "total_tokens": 100}),
        HumanMessage(content="go"),
        AIMessage(content="", tool_calls=[delegate("remote", "r", id="c1")], usage_metadata=counts),  # type: ignore[list-item]
        ToolMessage(content="r", tool_call_id="c1", artifact={"agent_id": "remote-agent", "usage": {**counts, "input_tokens": 1000, "total_tokens": 1003}}),
        ToolMessage(
            content="n",
            tool_call_id="c2",
            artifact={"agent_id": "mid", "usage": double, "usage_by_agent": {"mid": counts, "mid/leaf": counts}},
        ),
    ]
    by_agent = usage_by_agent_of_run(messages, 2, "top")
    assert by_agent == {
        "top": counts,
        "top/remote-agent": {"input_tokens": 1000, "output_tokens": 3, "total_tokens": 1003},
        "top/mid": counts,
        "top/mid/leaf": counts,
    }
    total = usage_of_run(messages, 2)
    assert total == {"input_tokens": 7 + 1000 + 14, "output_tokens": 3 + 3 + 6, "total_tokens": 10 + 1003 + 20}
    for field, value in total.items():
        assert sum(u[field] for u in by_agent.values()) == value
