"""Paused runs kept for resuming by run id are bounded (issue 10, item 17)."""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, NothingPendingError, create_tool
from supervisor_graph.run.ephemeral import ephemeral_saver
from supervisor_graph.run.paused import paused_runs
from supervisor_graph.testing import ScriptedChatModel, tool_call


class Amount(BaseModel):
    amount: int


def payer() -> Agent:
    pay = create_tool(id="pay", description="Pay.", input_schema=Amount, execute=lambda a: "paid", require_approval=True)
    model = ScriptedChatModel(policy=lambda m: "done" if isinstance(m[-1], ToolMessage) else tool_call("pay", {"amount": 1}))
    return Agent(id="payer", model=model, tools=[pay])


@pytest.fixture
def small_registry():
    saved = paused_runs.max_runs, paused_runs.max_age
    paused_runs.max_runs = 3
    yield paused_runs
    paused_runs.max_runs, paused_runs.max_age = saved


async def test_paused_runs_without_memory_are_bounded_by_count(small_registry) -> None:
    agent = payer()
    results = [await agent.generate("go") for _ in range(5)]
    assert all(r.finish_reason == "suspended" for r in results)
    assert len(small_registry) <= 3
    # the two oldest are forgotten, with their checkpoints; the newest still resume
    saver = ephemeral_saver()
    for old in results[:2]:
        assert small_registry.get(old.run_id) is None
        assert not [c async for c in saver.alist({"configurable": {"thread_id": f"ephemeral-{old.run_id}"}})]
        with pytest.raises(NothingPendingError, match="24 h"):
            await agent.approve_tool_call(run_id=old.run_id)
    done = await agent.approve_tool_call(run_id=results[-1].run_id)
    assert done.text == "done"


async def test_paused_runs_expire_by_age(small_registry) -> None:
    agent = payer()
    paused = await agent.generate("go")
    small_registry.max_age = 0.0
    with pytest.raises(NothingPendingError):
        await agent.approve_tool_call(run_id=paused.run_id)
    await agent.generate("go")  # the next pause sweeps the expired entry away
    assert small_registry.get(paused.run_id) is None and paused.run_id not in small_registry._runs
