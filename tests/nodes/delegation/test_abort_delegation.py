"""An aborted delegation is a failed one (SPEC §6.5, §10; issue 47 item 3).

The abort fires while a subagent's model call is in flight (a model that says it has
started and then never answers), so nothing here depends on timing: what
`on_delegation_complete` receives and what `result.delegations` reports must say the
delegation failed, with finish reason `"abort"` and the run's abort reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from pydantic import PrivateAttr

from supervisor_graph import AbortController, Agent, DelegationResult
from supervisor_graph.nodes.delegation.control import DelegationAbortedError
from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


class InFlight(ScriptedChatModel):
    """A model whose call stays in flight until it is cancelled; `started` is set once a
    call has begun."""

    _started: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)

    @property
    def started(self) -> asyncio.Event:
        return self._started

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self._started.set()
        await asyncio.Event().wait()
        raise AssertionError("never answers")

    async def _astream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        self._started.set()
        await asyncio.Event().wait()
        raise AssertionError("never answers")
        yield  # an async generator, as a provider's stream is


def _boss(agents: dict[str, Agent], hook: Any) -> tuple[Agent, ScriptedChatModel]:
    model = ScriptedChatModel(policy=lambda m: "never" if isinstance(m[-1], ToolMessage) else delegate(next(iter(agents)), "dig"))
    boss = Agent(id="boss", model=model, agents=agents, default_options={"delegation": {"on_delegation_complete": hook}})
    return boss, model


def _assert_aborted(result: DelegationResult, agent_id: str, reason: str = "user left") -> None:
    assert result.agent_id == agent_id
    assert result.success is False
    assert result.finish_reason == "abort"
    assert result.error == reason
    assert result.text == ""


async def _abort_when_started(model: InFlight, controller: AbortController, reason: str = "user left") -> None:
    await model.started.wait()
    controller.abort(reason)


@pytest.mark.parametrize("how", ["generate", "stream"])
async def test_a_leaf_subagent_cut_in_its_model_call_is_a_failed_delegation(how: str) -> None:
    seen: list[Any] = []
    worker_model = InFlight()
    worker = Agent(id="worker-agent", description="Works.", model=worker_model)
    boss, _ = _boss({"worker": worker}, lambda ctx: seen.append(ctx))
    controller = AbortController()
    aborter = asyncio.ensure_future(_abort_when_started(worker_model, controller))
    if how == "generate":
        result = await boss.generate("go", abort_signal=controller.signal)
    else:
        stream = await boss.stream("go", abort_signal=controller.signal)
        chunks = [c async for c in stream.full_stream]
        assert [c.type for c in chunks][-2:] == ["abort", "finish"]
        result = await stream.result()
    await aborter
    assert result.finish_reason == "abort"
    [delegation] = result.delegations
    _assert_aborted(delegation, "worker-agent")
    [ctx] = seen  # the hook heard of it, once, as a failure
    assert ctx.success is False and ctx.primitive_id == "worker-agent"
    _assert_aborted(ctx.result, "worker-agent")
    assert isinstance(ctx.error, DelegationAbortedError) and ctx.error.reason == "user left"


async def test_a_nested_supervisor_and_its_own_subagent_both_report_the_abort() -> None:
    seen: list[Any] = []
    leaf_model = InFlight()
    leaf = Agent(id="leaf-agent", description="Digs.", model=leaf_model)
    middle = Agent(
        id="middle-agent",
        description="Delegates.",
        model=ScriptedChatModel(policy=lambda m: "never" if isinstance(m[-1], ToolMessage) else delegate("leaf", "deeper")),
        agents={"leaf": leaf},
    )
    boss, _ = _boss({"middle": middle}, lambda ctx: seen.append(ctx))
    controller = AbortController()
    aborter = asyncio.ensure_future(_abort_when_started(leaf_model, controller, "closing the tab"))
    result = await boss.generate("go", abort_signal=controller.signal)
    await aborter
    assert result.finish_reason == "abort"
    [delegation] = result.delegations
    _assert_aborted(delegation, "middle-agent", "closing the tab")
    # the hooks apply at every depth: the innermost delegation ends first
    assert [ctx.primitive_id for ctx in seen] == ["leaf-agent", "middle-agent"]
    for ctx in seen:
        assert ctx.success is False
        _assert_aborted(ctx.result, ctx.primitive_id, "closing the tab")


async def test_an_abort_without_a_reason_and_with_a_plain_event() -> None:
    seen: list[Any] = []
    worker_model = InFlight()
    boss, _ = _boss({"worker": Agent(id="worker-agent", description="Works.", model=worker_model)}, seen.append)
    event = asyncio.Event()  # a plain asyncio.Event carries no reason

    async def abort() -> None:
        await worker_model.started.wait()
        event.set()

    aborter = asyncio.ensure_future(abort())
    result = await boss.generate("go", abort_signal=event)
    await aborter
    _assert_aborted(result.delegations[0], "worker-agent", "aborted")
    assert seen[0].error.reason is None


async def test_a_subagent_that_sees_the_signal_at_its_next_step_fails_its_delegation_too() -> None:
    """Driven without the facade (a LangGraph server, `graph.ainvoke`): nothing cancels the
    task, the subagent stops at its next step, and its delegation still reads aborted,
    the parent's model is never asked again and the hook hears it once."""
    controller = AbortController()
    seen: list[Any] = []

    @tool
    def pull_the_plug() -> str:
        """Stops everything."""
        controller.abort("from a tool")
        return "stopping"

    worker_model = ScriptedChatModel(responses=[tool_call("pull_the_plug"), "never"])
    worker = Agent(id="worker-agent", description="Works.", model=worker_model, tools=[pull_the_plug])
    boss, boss_model = _boss({"worker": worker}, seen.append)
    options = RunOptions(abort_signal=controller.signal, delegation={"on_delegation_complete": seen.append})
    handle = RunHandle(run_id="r1", agent_path=("boss",), abort_signal=controller.signal)
    out = await boss.graph.ainvoke({"messages": [("user", "go")]}, context=RunContext.for_run(options, handle))
    assert out["finish_reason"] == "abort" and len(worker_model.calls) == 1 and len(boss_model.calls) == 1
    _assert_aborted(handle.delegations[next(iter(handle.delegations))].to_result(), "worker-agent", "from a tool")
    [ctx] = seen
    _assert_aborted(ctx.result, "worker-agent", "from a tool")
    [result_message] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert result_message.status == "error" and result_message.content.startswith("[Aborted]")
    assert isinstance(out["messages"][1], AIMessage)


async def test_a_delegation_that_finished_before_the_abort_stays_a_success() -> None:
    seen: list[Any] = []
    slow_model = InFlight()
    quick = Agent(id="quick-agent", description="Quick.", model=ScriptedChatModel(policy=lambda m: "quick answer"))
    slow = Agent(id="slow-agent", description="Slow.", model=slow_model)
    model = ScriptedChatModel(policy=lambda m: [delegate("quick", "a"), delegate("slow", "b")])
    boss = Agent(
        id="boss", model=model, agents={"quick": quick, "slow": slow},
        default_options={"delegation": {"on_delegation_complete": seen.append}},
    )  # fmt: skip
    controller = AbortController()
    stream = await boss.stream("go", abort_signal=controller.signal)
    async for chunk in stream.full_stream:
        if chunk.type == "delegation-complete" and chunk.payload["agent_id"] == "quick-agent":
            await slow_model.started.wait()
            controller.abort("user left")  # the quick one has answered, the slow one has not
    result = await stream.result()
    by_agent = {d.agent_id: d for d in result.delegations}
    assert by_agent["quick-agent"].success and by_agent["quick-agent"].text == "quick answer"
    assert by_agent["quick-agent"].finish_reason == "stop" and by_agent["quick-agent"].error is None
    _assert_aborted(by_agent["slow-agent"], "slow-agent")
    # the quick one's hook runs in the step after both, which the abort never reaches
    assert [(ctx.primitive_id, ctx.success) for ctx in seen] == [("slow-agent", False)]


@pytest.mark.parametrize("retries", [0, 2])
async def test_a_background_task_aborted_from_inside_is_cancelled_not_completed(retries: int) -> None:
    """Its subagent's tool aborts the run, from inside the task: the task is `cancelled`
    (never `completed` with an empty answer, nor retried), and a hook that hears of it
    hears a failure."""
    from langchain_core.messages import HumanMessage

    from supervisor_graph import Memory

    controller = AbortController()
    seen: list[Any] = []

    @tool
    def pull_the_plug() -> str:
        """Stops everything."""
        controller.abort("from the task")
        return "stopping"

    sub_model = ScriptedChatModel(policy=lambda m: "never" if isinstance(m[-1], ToolMessage) else tool_call("pull_the_plug"))
    research = Agent(id="research-agent", description="Researches.", model=sub_model, tools=[pull_the_plug])

    def boss_policy(messages: list[Any]) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage) and str(last.content).startswith("[Background task"):
            return "reported"
        return "started" if isinstance(last, ToolMessage) else delegate("research", "dig")

    memory = Memory(":memory:")
    boss = Agent(
        id="boss", model=ScriptedChatModel(policy=boss_policy), agents={"research": research}, memory=memory,
        background_tasks={"tools": {"research": {"retries": retries}}},
        default_options={"delegation": {"on_delegation_complete": seen.append}},
    )  # fmt: skip
    stream = await boss.stream_until_idle("go", memory={"thread": f"bg-abort-{retries}"}, abort_signal=controller.signal)
    [c async for c in stream.full_stream]
    [task] = await memory.list_background_tasks(f"bg-abort-{retries}")
    assert task.status == "cancelled" and task.tries == 1
    assert all(not ctx.success for ctx in seen)  # a hook that hears of it hears a failure
