"""Cancellation (SPEC §10)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import AIMessage, ToolMessage

from supervisor_graph import AbortController, Agent
from supervisor_graph.testing import ScriptedChatModel, delegate


class Started(AsyncCallbackHandler):
    """Counts the model calls that have begun, for a test to act once they are in flight
    instead of after a guessed delay a busy machine outruns."""

    def __init__(self) -> None:
        self.count = 0

    async def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        self.count += 1

    async def until(self, n: int) -> None:
        deadline = time.monotonic() + 60  # bounded but generous
        while self.count < n:
            assert time.monotonic() < deadline, f"only {self.count} of {n} model calls began"
            await asyncio.sleep(0.01)


async def test_abort_cancels_a_model_call_in_flight(store) -> None:
    begun = Started()
    model = ScriptedChatModel(policy=lambda m: "too late", latency=30, callbacks=[begun])
    parent = Agent(id="p", model=model, memory=store.memory)
    controller = AbortController()

    async def abort_in_flight() -> None:
        await begun.until(1)
        controller.abort("user left")

    aborting = asyncio.ensure_future(abort_in_flight())
    started = time.monotonic()
    result = await parent.generate("go", **store.call(abort_signal=controller.signal))
    await aborting
    assert time.monotonic() - started < 20  # not the model's 30 s
    assert result.finish_reason == "abort" and result.text == ""


async def test_abort_stops_parallel_subagents_and_the_thread_stays_consistent(store) -> None:
    begun = Started()
    slow_a = Agent(
        id="a-agent", description="A.", model=ScriptedChatModel(policy=lambda m: "a", latency=30, callbacks=[begun])
    )
    slow_b = Agent(
        id="b-agent", description="B.", model=ScriptedChatModel(policy=lambda m: "b", latency=30, callbacks=[begun])
    )
    parent_model = ScriptedChatModel(
        policy=lambda m: "resumed answer" if m[-1].content == "continue" else [delegate("a", "x"), delegate("b", "y")]
    )
    parent = Agent(id="p", model=parent_model, agents={"a": slow_a, "b": slow_b}, memory=store.memory)
    event = asyncio.Event()  # a plain asyncio.Event works as the signal too
    call = store.call(abort_signal=event)

    async def abort_when_both_run() -> None:
        await begun.until(2)
        event.set()

    aborting = asyncio.ensure_future(abort_when_both_run())
    started = time.monotonic()
    stream = await parent.stream("go", **call)
    chunks = [c async for c in stream.full_stream]
    result = await stream.result()
    await aborting
    assert time.monotonic() - started < 20  # not the subagents' 30 s
    assert [c.type for c in chunks][-2:] == ["abort", "finish"]
    assert result.finish_reason == "abort" and chunks[-1].finish_reason == "abort"
    assert any(c.type == "delegation-start" for c in chunks)

    # what completed is kept; unfinished calls got a result; the next call works and sees it
    stored = await store.memory.get_messages(call["memory"]["thread"])
    assert [type(m) for m in stored] == [type(stored[0]), AIMessage, ToolMessage, ToolMessage]
    assert all(m.status == "error" and "[Aborted]" in m.content for m in stored[2:])
    follow = await parent.generate("continue", memory=call["memory"])
    assert follow.text == "resumed answer"
    assert len(parent_model.calls[-1]) == 5


async def test_abort_before_the_run_starts() -> None:
    model = ScriptedChatModel(policy=lambda m: "x")
    controller = AbortController()
    controller.abort()
    result = await Agent(id="p", model=model).generate("go", abort_signal=controller.signal)
    assert result.finish_reason == "abort" and model.calls == []


async def test_nodes_stop_at_their_next_step_when_the_signal_is_set() -> None:
    # without task cancellation (a signal set by a tool mid-run), the next supervisor step
    # of every agent sees it and ends the loop
    controller = AbortController()
    from langchain_core.tools import tool

    @tool
    def stop_everything() -> str:
        """Abort."""
        controller.abort("from a tool")
        return "stopping"

    from supervisor_graph.testing import tool_call

    model = ScriptedChatModel(responses=[tool_call("stop_everything"), "never"])
    parent = Agent(id="p", model=model, tools=[stop_everything])
    graph = parent.graph
    from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions

    handle = RunHandle(run_id="r1", agent_path=("p",), abort_signal=controller.signal)
    out = await graph.ainvoke(
        {"messages": [("user", "go")]}, context=RunContext.for_run(RunOptions(abort_signal=controller.signal), handle)
    )
    assert out["finish_reason"] == "abort" and len(model.calls) == 1


async def test_a_run_cancelled_from_outside_is_closed_by_the_graph_on_the_next_run() -> None:
    """SPEC §23: no facade, a cancelled `ainvoke` task; the next run's model input is valid."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    begun = Started()
    slow = Agent(
        id="slow-agent",
        description="Slow.",
        model=ScriptedChatModel(policy=lambda m: "late", latency=30, callbacks=[begun]),
    )

    def boss_policy(messages: list) -> object:
        return "fresh answer" if messages[-1].content == "next" else [delegate("slow", "x"), delegate("slow", "y")]

    boss_model = ScriptedChatModel(policy=boss_policy)
    graph = Agent(id="boss", model=boss_model, agents={"slow": slow}).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "cancelled"}}
    task = asyncio.create_task(graph.ainvoke({"messages": [HumanMessage("go")]}, config))
    await begun.until(2)  # both delegations are in flight
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    out = await graph.ainvoke({"messages": [HumanMessage("next")]}, config)
    assert out["messages"][-1].content == "fresh answer"
    kinds = [(type(m).__name__, m.content) for m in out["messages"]]
    assert kinds[:2] == [("HumanMessage", "go"), ("AIMessage", "")]
    assert [c for _, c in kinds[2:4]] == ["[Aborted] The run was cancelled before this tool call finished."] * 2
    assert kinds[4] == ("HumanMessage", "next")
    seen = boss_model.calls[-1]
    assert [type(m).__name__ for m in seen[-4:]] == ["AIMessage", "ToolMessage", "ToolMessage", "HumanMessage"]
