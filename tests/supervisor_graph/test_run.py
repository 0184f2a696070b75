"""Running agents: generate, stream, sync twins, finish reasons, usage, errors (SPEC §5, §6.1)."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from supervisor_graph import Agent, ModelCallError, StreamChunk
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


def worker(id: str, text: str = "result", **kw) -> Agent:
    return Agent(id=id, description=f"{id} worker.", model=ScriptedChatModel(policy=lambda m: text, **kw))


def tool_results(messages) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


async def test_one_delegation_end_to_end() -> None:
    parent_model = ScriptedChatModel(responses=[delegate("research_agent", "find facts"), "final answer"])
    sub_model = ScriptedChatModel(responses=["- fact one"])
    research = Agent(id="research-agent", description="Finds facts.", instructions="Research well.", model=sub_model)
    parent = Agent(id="parent", instructions="Coordinate.", model=parent_model, agents={"research_agent": research})

    result = await parent.generate("Tell me about X")

    assert result.text == "final answer"
    assert result.finish_reason == "stop"
    assert [type(m) for m in result.messages] == [AIMessage, ToolMessage, AIMessage]
    assert result.messages[1].content == "- fact one"
    assert result.usage.total_tokens == 3 * 15 and result.usage.input_tokens == 30
    assert result.thread_id is None and result.run_id
    # the subagent saw its instructions, the parent's context, and the prompt last
    seen = sub_model.calls[0]
    assert isinstance(seen[0], SystemMessage) and seen[0].content == "Research well."
    assert [m.content for m in seen[1:]] == ["Tell me about X", "find facts"]


async def test_context_grows_by_two_messages_per_delegation() -> None:
    def policy(messages):
        done = sum(isinstance(m, ToolMessage) for m in messages)
        return delegate("w", f"task {done}") if done < 3 else "done"

    parent_model = ScriptedChatModel(policy=policy)
    parent = Agent(id="p", model=parent_model, agents={"w": worker("w-agent")})
    await parent.generate("go")
    sizes = [len(call) for call in parent_model.calls]
    assert [b - a for a, b in zip(sizes, sizes[1:], strict=False)] == [2, 2, 2]


async def test_parallel_delegations_run_concurrently_and_return_in_call_order() -> None:
    barrier = asyncio.Barrier(2)

    @tool
    async def rendezvous() -> str:
        """Wait for the other subagent."""
        await asyncio.wait_for(barrier.wait(), timeout=5)
        return "met"

    def sub_policy(name: str):
        def policy(messages):
            if not any(isinstance(m, ToolMessage) for m in messages):
                return tool_call("rendezvous")
            return f"{name} done"

        return policy

    slow = Agent(
        id="slow-agent",
        description="Slow.",
        model=ScriptedChatModel(policy=sub_policy("slow"), latency=0.2),
        tools=[rendezvous],
    )
    fast = Agent(id="fast-agent", description="Fast.", model=ScriptedChatModel(policy=sub_policy("fast")), tools=[rendezvous])
    parent_model = ScriptedChatModel(
        responses=[[delegate("slow", "a", id="c1"), delegate("fast", "b", id="c2")], "both done"]
    )
    parent = Agent(id="p", model=parent_model, agents={"slow": slow, "fast": fast})
    result = await parent.generate("go")
    assert result.text == "both done"
    last_input = parent_model.calls[-1]
    assert [(m.tool_call_id, m.content) for m in tool_results(last_input)] == [("c1", "slow done"), ("c2", "fast done")]


async def test_unknown_delegation_and_bad_arguments_become_tool_errors() -> None:
    parent_model = ScriptedChatModel(
        responses=[
            [tool_call("agent-nobody", {"prompt": "x"}, id="u1"), tool_call("agent-w", {"max_steps": 2}, id="u2")],
            "recovered",
        ]
    )
    parent = Agent(id="p", model=parent_model, agents={"w": worker("w-agent")})
    result = await parent.generate("go")
    assert result.text == "recovered"
    errors = {m.tool_call_id: m for m in tool_results(parent_model.calls[-1])}
    assert errors["u1"].status == "error" and "no tool named 'agent-nobody'" in errors["u1"].content
    assert "agent-w" in errors["u1"].content  # lists what exists
    assert errors["u2"].status == "error" and "invalid arguments for agent-w" in errors["u2"].content
    assert "prompt" in errors["u2"].content


async def test_malformed_json_arguments_become_tool_errors() -> None:
    bad = AIMessage(
        content="",
        invalid_tool_calls=[{"name": "agent-w", "args": "{not json", "id": "bad1", "error": None, "type": "invalid_tool_call"}],
    )
    parent_model = ScriptedChatModel(responses=[bad, "fine"])
    parent = Agent(id="p", model=parent_model, agents={"w": worker("w-agent")})
    result = await parent.generate("go")
    assert result.text == "fine"
    [error] = tool_results(parent_model.calls[-1])
    assert error.tool_call_id == "bad1" and error.status == "error" and "malformed arguments" in error.content
    # the AI message carries the call, so the transcript stays well formed
    assert [c["id"] for c in result.messages[0].tool_calls] == ["bad1"]


async def test_duplicate_and_missing_tool_call_ids_are_made_unique_before_they_run() -> None:
    ran = []

    @tool
    def note(text: str) -> str:
        """Note."""
        ran.append(text)
        return f"noted {text}"

    twice = AIMessage(
        content="",
        tool_calls=[
            {"name": "note", "args": {"text": "a"}, "id": "same", "type": "tool_call"},
            {"name": "note", "args": {"text": "b"}, "id": "same", "type": "tool_call"},
            {"name": "note", "args": {"text": "c"}, "id": "", "type": "tool_call"},
        ],
        invalid_tool_calls=[{"name": "note", "args": "{bad", "id": "same", "error": None, "type": "invalid_tool_call"}],
    )
    model = ScriptedChatModel(responses=[twice, "ok"])
    result = await Agent(id="p", model=model, tools=[note]).generate("go")
    assert sorted(ran) == ["a", "b", "c"] and result.text == "ok"
    ids = [c["id"] for c in result.messages[0].tool_calls]
    assert len(set(ids)) == 4 and ids[:2] == ["same", "same-2"] and all(ids)
    answers = {m.tool_call_id: m.content for m in tool_results(model.calls[-1])}
    assert set(answers) == set(ids)  # each call answered exactly once
    assert answers["same"] == "noted a" and answers["same-2"] == "noted b" and "malformed" in answers[ids[3]]


async def test_max_steps_stops_the_loop() -> None:
    parent_model = ScriptedChatModel(policy=lambda m: delegate("w", "again"))
    parent = Agent(id="p", model=parent_model, agents={"w": worker("w-agent")})
    result = await parent.generate("go", max_steps=3)
    assert result.finish_reason == "max_steps"
    assert len(parent_model.calls) == 3
    # every call got its result: the thread can continue
    assert len(tool_results(result.messages)) == 3


async def test_default_options_apply_and_call_wins() -> None:
    parent_model = ScriptedChatModel(policy=lambda m: delegate("w", "again"))
    parent = Agent(id="p", model=parent_model, agents={"w": worker("w-agent")}, default_options={"max_steps": 2})
    assert (await parent.generate("go")).finish_reason == "max_steps"
    assert len(parent_model.calls) == 2
    await parent.generate("go", max_steps=1)
    assert len(parent_model.calls) == 3


async def test_subagent_max_steps_from_the_call() -> None:
    sub_model = ScriptedChatModel(policy=lambda m: delegate("leaf", "deeper"))
    leaf = worker("leaf-agent")
    mid = Agent(id="mid-agent", description="Mid.", model=sub_model, agents={"leaf": leaf})
    parent = Agent(id="p", model=ScriptedChatModel(responses=[delegate("mid", "go", max_steps=2), "ok"]), agents={"mid": mid})
    result = await parent.generate("go")
    assert len(sub_model.calls) == 2
    assert result.messages[1].artifact["finish_reason"] == "max_steps"


async def test_length_finish_reason() -> None:
    parent = Agent(id="p", model=ScriptedChatModel(responses=["cut off"], finish_reason="length"))
    assert (await parent.generate("go")).finish_reason == "length"


async def test_failed_subagent_gives_a_generic_failure_and_the_run_goes_on() -> None:
    secret = RuntimeError("provider said: key sk-SECRET is invalid")
    broken = Agent(id="broken-agent", description="Breaks.", model=ScriptedChatModel(responses=[secret]))
    parent_model = ScriptedChatModel(responses=[delegate("broken", "try"), "handled"])
    parent = Agent(id="p", model=parent_model, agents={"broken": broken})
    result = await parent.generate("go")
    assert result.text == "handled"
    [failure] = tool_results(parent_model.calls[-1])
    assert failure.status == "error"
    assert "broken-agent" in failure.content and "SECRET" not in failure.content


async def test_usage_sums_every_model_call_at_depth_three() -> None:
    leaf = Agent(id="leaf-agent", description="Leaf.", model=ScriptedChatModel(responses=["leaf"], input_tokens=1, output_tokens=1))
    mid = Agent(
        id="mid-agent",
        description="Mid.",
        model=ScriptedChatModel(responses=[delegate("leaf", "l"), "mid"], input_tokens=100, output_tokens=10),
        agents={"leaf": leaf},
    )
    top_sub = Agent(
        id="top-sub",
        description="Top sub.",
        model=ScriptedChatModel(responses=[delegate("mid", "m"), "topsub"], input_tokens=1000, output_tokens=0),
        agents={"mid": mid},
    )
    parent = Agent(
        id="p", model=ScriptedChatModel(responses=[delegate("top", "t"), "end"], input_tokens=5, output_tokens=5), agents={"top": top_sub}
    )
    result = await parent.generate("go")
    assert result.text == "end"
    assert result.usage.input_tokens == 2 * 5 + 2 * 1000 + 2 * 100 + 1
    assert result.usage.output_tokens == 2 * 5 + 0 + 2 * 10 + 1


async def test_stream_full_and_text() -> None:
    sub = worker("w-agent", "sub text here")
    parent = Agent(id="p", model=ScriptedChatModel(responses=[delegate("w", "do"), "The final words."]), agents={"w": sub})
    stream = await parent.stream("go")
    chunks: list[StreamChunk] = [c async for c in stream.full_stream]
    text = "".join([t async for t in stream.text_stream])  # read again, from the start
    result = await stream.result()

    assert text == "The final words." == result.text
    types = [c.type for c in chunks]
    assert types[0] == "start" and types[-1] == "finish"
    for expected in ("step-start", "tool-call", "delegation-start", "delegation-complete", "tool-result", "step-finish", "text-delta"):
        assert expected in types
    assert all(c.run_id == result.run_id for c in chunks)
    sub_text = "".join(c.text for c in chunks if c.type == "text-delta" and c.agent_path == ("p", "w-agent"))
    assert sub_text == "sub text here"
    finish = chunks[-1]
    assert finish.finish_reason == "stop" and finish.usage == result.usage
    complete = next(c for c in chunks if c.type == "delegation-complete")
    assert complete.agent_path == ("p",) and complete.payload["agent_id"] == "w-agent"


def test_sync_twins() -> None:
    parent = Agent(id="p", model=ScriptedChatModel(policy=lambda m: "hello sync"))
    assert parent.generate_sync("x").text == "hello sync"
    chunks = list(parent.stream_sync("y"))
    assert chunks[-1].type == "finish"
    assert "".join(c.text for c in chunks if c.type == "text-delta") == "hello sync"


async def test_parent_tools_run_and_errors_reach_the_model() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @tool
    def explode() -> str:
        """Fails."""
        raise ValueError("boom")

    model = ScriptedChatModel(
        responses=[[tool_call("add", {"a": 2, "b": 3}, id="t1"), tool_call("explode", id="t2"), tool_call("add", {"a": "x"}, id="t3")], "ok"]
    )
    parent = Agent(id="p", model=model, tools=[add, explode])
    result = await parent.generate("go")
    results = {m.tool_call_id: m for m in tool_results(model.calls[-1])}
    assert results["t1"].content == "5"
    assert results["t2"].status == "error" and "boom" in results["t2"].content
    assert results["t3"].status == "error" and "invalid arguments" in results["t3"].content
    assert result.text == "ok"


async def test_prompt_as_messages_and_bad_prompt() -> None:
    parent = Agent(id="p", model=ScriptedChatModel(policy=lambda m: f"saw {len(m)}"))
    result = await parent.generate([HumanMessage("a"), AIMessage("b"), HumanMessage("c")])
    assert result.text == "saw 3"
    with pytest.raises(TypeError, match="prompt must be"):
        await parent.generate(42)


async def test_unknown_option_is_a_clear_error() -> None:
    parent = Agent(id="p", model=ScriptedChatModel(responses=["x"]))
    with pytest.raises(ValueError, match="max_stepz"):
        await parent.generate("go", max_stepz=3)
    with pytest.raises(ValueError, match="needs storage"):
        await parent.generate("go", memory={"thread": "t"})


async def test_dynamic_instructions_and_model_read_the_request_context() -> None:
    chosen = ScriptedChatModel(policy=lambda m: f"system={m[0].content}")

    async def instructions(ctx):
        return f"Speak to {ctx.get('audience')}"

    parent = Agent(id="p", instructions=instructions, model=lambda ctx: chosen if ctx.get("tier") == "pro" else None)
    result = await parent.generate("hi", request_context={"audience": "experts", "tier": "pro"})
    assert result.text == "system=Speak to experts"
    with pytest.raises(TypeError, match="must return a LangChain BaseChatModel"):
        await parent.generate("hi", request_context={"tier": "free"})


async def test_transient_model_errors_are_retried() -> None:
    from langgraph.types import RetryPolicy

    flaky = ScriptedChatModel(responses=[ConnectionError("reset by peer"), "recovered"])
    agent = Agent(id="p", model=flaky, retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.01, jitter=False))
    assert (await agent.generate("go")).text == "recovered"
    assert len(flaky.calls) == 2

    bug = ScriptedChatModel(responses=[ValueError("bad request"), "never"])
    with pytest.raises(ModelCallError, match="ValueError") as caught:
        await Agent(id="p", model=bug).generate("go")  # programming errors are not retried
    assert len(bug.calls) == 1 and str(caught.value.original) == "bad request"

    once = ScriptedChatModel(responses=[ConnectionError("reset"), "never"])
    with pytest.raises(ModelCallError) as caught:
        await Agent(id="p", model=once, retry_policy=None).generate("go")
    assert isinstance(caught.value.original, ConnectionError)
    with pytest.raises(ValueError, match="retry_policy"):
        Agent(id="p", model=once, retry_policy=3)


async def test_only_transient_errors_are_retried_by_default() -> None:
    class Guardrail(Exception):
        pass

    class RateLimitError(Exception):
        pass

    blocked = ScriptedChatModel(responses=[Guardrail("blocked"), "never"])
    with pytest.raises(ModelCallError, match="Guardrail") as caught:
        await Agent(id="p", model=blocked).generate("go")
    assert len(blocked.calls) == 1 and isinstance(caught.value.original, Guardrail)

    from supervisor_graph.declaration.agent_rules import _retry_on

    assert _retry_on(RateLimitError("slow down")) and _retry_on(TimeoutError()) and not _retry_on(KeyError("x"))


async def test_booleans_are_refused_where_numbers_are_expected() -> None:
    parent = Agent(id="p", model=ScriptedChatModel(policy=lambda m: "x"))
    for bad in ({"max_steps": True}, {"max_steps": False}, {"is_task_complete": {"scorers": [], "threshold": True}}):
        with pytest.raises(ValueError, match="max_steps|threshold"):
            await parent.generate("go", **bad)
    with pytest.raises(ValueError, match="max_steps"):
        Agent(id="q", model=ScriptedChatModel(policy=lambda m: "x"), default_options={"max_steps": True})
    # a model's `max_steps: true` is an argument error it sees, not a limit of 1
    model = ScriptedChatModel(responses=[delegate("w", "go", max_steps=True), "ok"])  # type: ignore[arg-type]
    parent = Agent(id="p", model=model, agents={"w": worker("w-agent")})
    assert (await parent.generate("go")).text == "ok"
    [error] = tool_results(model.calls[-1])
    assert error.status == "error" and "max_steps" in error.content and "boolean" in error.content


async def test_a_per_parent_thread_subagents_chunks_name_the_namespace_its_start_announced() -> None:
    # LangGraph keeps such a subgraph's namespace without the task id; clients pair a
    # subagent's text with its invocation by the namespace its delegation-start names
    def lead(messages):
        return delegate("research", "look") if isinstance(messages[-1], HumanMessage) else f"done: {messages[-1].content}"

    research = Agent(id="research", description="r", model=ScriptedChatModel(policy=lambda m: "found"))
    team = Agent(id="lead", model=ScriptedChatModel(policy=lead), agents={"research": research}, subagent_threads="per_parent_thread")
    stream = await team.stream("go")
    chunks = [c async for c in stream.full_stream]
    [started] = [c for c in chunks if c.type == "delegation-start"]
    own = {c.namespace for c in chunks if c.agent_path == ("lead", "research")}
    assert own == {started.payload["namespace"]} and ":" in started.payload["namespace"]
