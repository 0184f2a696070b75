"""A run whose hold on its thread lapsed saves nothing more (issue 46, "no lost message").

Under load a worker can be held up past its lease's ttl: its renewals stop, another
worker takes the thread (the lease had expired) and runs the next message to
`RUN_FINISHED`. When the held-up run wakes it went on writing its own branch of the
thread, whose newest checkpoint then lacked the other run's messages: the soak of issue
46 found threads holding only the message of a client-cancelled run, and a tool call
answered twice. Here two memories on one sqlite file stand for the two workers, and the
first run's renewals are held up as a stalled process's would be."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from bench.serve_load import lost, problems
from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.checkpointers.fence import LeaseLapsedError
from supervisor_graph.testing import ScriptedChatModel, tool_call

TTL = 0.6


class _Text(BaseModel):
    text: str


def _policy(messages: list[BaseMessage]) -> Any:
    last = messages[-1]
    if isinstance(last, HumanMessage):
        return tool_call("wait", {"text": "x"}) if last.content == "slow" else "done fast"
    return "done slow" if isinstance(last, ToolMessage) else "?"


def _agent(memory: Memory, gate: asyncio.Event, waiting: asyncio.Event | None = None) -> Agent:
    async def wait(args: _Text) -> str:
        if waiting is not None:
            waiting.set()
        await gate.wait()
        return "waited"

    tool = create_tool(id="wait", description="Waits.", input_schema=_Text, execute=wait)
    return Agent(id="boss", model=ScriptedChatModel(policy=_policy), tools=[tool], memory=memory)


async def _stall_renewals(memory: Memory, until: asyncio.Event) -> None:
    """This memory's lease renewals wait for `until`, as those of a held-up process do."""
    leases = (await memory.opened()).leases
    renew = leases.renew

    async def held_up(thread_id: str, owner: str) -> bool:
        await until.wait()
        return await renew(thread_id, owner)

    leases.renew = held_up  # type: ignore[method-assign]


@pytest.mark.parametrize("taken", [True, False], ids=["taken-over", "lapsed-only"])
async def test_a_run_whose_lease_lapsed_writes_nothing_more(tmp_path, taken: bool) -> None:
    storage = f"file:{tmp_path / 'fence.db'}"
    first, second = Memory(storage, lease_ttl=TTL), Memory(storage, lease_ttl=TTL)
    gate, waiting = asyncio.Event(), asyncio.Event()
    slow = _agent(first, gate, waiting)
    await _stall_renewals(first, gate)
    held = asyncio.ensure_future(slow.generate("slow", memory={"thread": "t"}))
    # the first run holds the thread and waits in its tool (an event it sets, not a guess
    # that a busy machine got it there in 1.2 s) ...
    await asyncio.wait_for(waiting.wait(), 60)
    await asyncio.sleep(TTL * 2)  # ... and its lease lapses: no renewal for longer than the ttl
    if taken:  # another worker takes the thread and answers the next message
        other = await _agent(second, asyncio.Event()).generate("next", memory={"thread": "t"})
        assert other.text == "done fast"
    gate.set()  # the held-up process wakes up
    if taken:
        with pytest.raises(LeaseLapsedError):
            await held
        messages = await second.get_messages("t")
        assert lost(messages, ["next"]) == [], [m.content for m in messages]
        assert problems(messages) == [], [m.content for m in messages]
    else:  # nobody took the thread: the run checks with the database and goes on
        assert (await held).text == "done slow"
        assert [m.content for m in await second.get_messages("t")][-1] == "done slow"
    await first.aclose()
    await second.aclose()
