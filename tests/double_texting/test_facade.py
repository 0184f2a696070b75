"""Double texting through the facade, in one process (SPEC §29): `on_busy=` on
generate / stream / the sync and until-idle calls, on every storage."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import Memory
from supervisor_graph.declaration.errors import PendingApprovalError, ThreadBusyError
from tests.double_texting.agent import assert_every_call_answered, build, ledger_lines

THREAD = {"thread": "chat", "resource": "user"}


async def until_waiting(ledger: Path, text: str) -> None:
    """Until the first run is inside its `wait` tool (its `note` call finished): bounded
    but generous, so a busy machine is slow here instead of failing."""
    deadline = time.monotonic() + 60
    while f"wait:{text.replace(' ', '-')}" not in ledger_lines(ledger):
        assert time.monotonic() < deadline, f"the run never reached its wait tool: {ledger_lines(ledger)}"
        await asyncio.sleep(0.01)


async def arrivals(memory: Memory) -> Callable[[int], Awaitable[None]]:
    """Count the calls that have taken the thread or joined its queue, and return a wait
    until `n` have: a queued call is known to be in the queue (and its place in it fixed)
    before the test goes on, not assumed after a guessed sleep a busy machine outruns."""
    leases = (await memory.opened()).leases
    acquire, join = leases.acquire, leases.join
    count = 0

    async def counted_acquire(*args: Any) -> Any:
        nonlocal count
        got = await acquire(*args)
        count += got is not None
        return got

    async def counted_join(*args: Any) -> int:
        nonlocal count
        place = await join(*args)
        count += 1
        return place

    leases.acquire, leases.join = counted_acquire, counted_join

    async def until(n: int) -> None:
        deadline = time.monotonic() + 60
        while count < n:
            assert time.monotonic() < deadline, f"only {count} of {n} calls reached the thread"
            await asyncio.sleep(0.01)

    return until


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return tmp_path / "ledger"


async def test_reject_is_the_default_and_an_unknown_strategy_names_the_four(memory: Memory, ledger: Path) -> None:
    agent = build(memory, ledger)
    first = asyncio.ensure_future(agent.generate("work one", memory=THREAD))
    await until_waiting(ledger, "work one")
    with pytest.raises(ThreadBusyError):
        await agent.generate("hello", memory=THREAD)
    with pytest.raises(ValueError) as refused:
        await agent.generate("hello", memory=THREAD, on_busy="later")
    assert all(name in str(refused.value) for name in ("reject", "enqueue", "interrupt", "rollback"))
    # neither refusal touched the running run or the thread
    second = await agent.generate("two", memory=THREAD, on_busy="interrupt")
    assert (await first).finish_reason == "abort" and second.text == "echo two"
    human = [m.content for m in await memory.get_messages("chat") if isinstance(m, HumanMessage)]
    assert human == ["work one", "two"]


async def test_interrupt_keeps_the_finished_steps_and_answers_every_call(memory: Memory, ledger: Path) -> None:
    agent = build(memory, ledger)
    first = asyncio.ensure_future(agent.generate("work one", memory=THREAD))
    await until_waiting(ledger, "work one")
    second = await agent.generate("hello", memory=THREAD, on_busy="interrupt")
    stopped = await first
    assert stopped.finish_reason == "abort"
    assert second.text == "echo hello" and second.finish_reason == "stop"
    messages = await memory.get_messages("chat")
    assert_every_call_answered(messages)
    results = {m.tool_call_id: str(m.content) for m in messages if isinstance(m, ToolMessage)}
    assert results["note-work-one"] == "noted work one"  # the finished call is kept
    assert results["wait-work-one"].startswith("[Aborted]")  # the stopped one is answered
    assert [m.content for m in messages if isinstance(m, HumanMessage)] == ["work one", "hello"]
    assert ledger_lines(ledger).count("note:work-one") == 1  # nothing ran twice


async def test_rollback_discards_the_stopped_run(memory: Memory, ledger: Path) -> None:
    agent = build(memory, ledger)
    await agent.generate("before", memory=THREAD)
    stream = await agent.stream("work one", memory=THREAD)
    await until_waiting(ledger, "work one")
    second = await agent.generate("hello", memory=THREAD, on_busy="rollback")
    chunks = [chunk async for chunk in stream.full_stream]
    assert (await stream.result()).finish_reason == "abort"
    [abort] = [c for c in chunks if c.type == "abort"]
    assert "rollback" in abort.payload["reason"]
    assert second.text == "echo hello"
    messages = await memory.get_messages("chat")
    assert [m.content for m in messages] == ["before", "echo before", "hello", "echo hello"]
    assert_every_call_answered(messages)


async def test_rollback_of_a_first_run_leaves_an_owned_thread(memory: Memory, ledger: Path) -> None:
    agent = build(memory, ledger)
    first = asyncio.ensure_future(agent.generate("work one", memory=THREAD))
    await until_waiting(ledger, "work one")
    second = await agent.generate("hello", memory=THREAD, on_busy="rollback")
    assert (await first).finish_reason == "abort" and second.text == "echo hello"
    assert [m.content for m in await memory.get_messages("chat")] == ["hello", "echo hello"]
    [thread] = await memory.list_threads(filter={"resource_id": "user"})
    assert thread.thread_id == "chat"


async def test_enqueue_runs_every_message_in_arrival_order(memory: Memory, ledger: Path) -> None:
    agent = build(memory, ledger, wait=0.3)
    arrived = await arrivals(memory)
    first = asyncio.ensure_future(agent.generate("work one", memory=THREAD))
    await until_waiting(ledger, "work one")
    queued = []
    for n, text in enumerate(("second", "third", "fourth"), start=2):
        queued.append(asyncio.ensure_future(agent.generate(text, memory=THREAD, on_busy="enqueue")))
        await arrived(n)  # arrival order: each is in the queue before the next is sent
    results = [await first, *await asyncio.gather(*queued)]
    assert [r.text for r in results] == ["done work one", "echo second", "echo third", "echo fourth"]
    messages = await memory.get_messages("chat")
    assert [m.content for m in messages if isinstance(m, HumanMessage)] == ["work one", "second", "third", "fourth"]
    assert_every_call_answered(messages)


async def test_an_interrupt_goes_before_queued_messages_and_none_is_lost(memory: Memory, ledger: Path) -> None:
    agent = build(memory, ledger)
    arrived = await arrivals(memory)
    first = asyncio.ensure_future(agent.generate("work one", memory=THREAD))
    await until_waiting(ledger, "work one")
    queued = asyncio.ensure_future(agent.generate("queued", memory=THREAD, on_busy="enqueue"))
    await arrived(2)  # queued before the interrupt comes
    urgent = await agent.generate("urgent", memory=THREAD, on_busy="interrupt")
    assert urgent.text == "echo urgent" and (await queued).text == "echo queued"
    assert (await first).finish_reason == "abort"
    human = [m.content for m in await memory.get_messages("chat") if isinstance(m, HumanMessage)]
    assert human == ["work one", "urgent", "queued"]


async def test_a_pending_approval_is_not_busy_unless_rollback(memory: Memory, ledger: Path) -> None:
    agent = build(memory, ledger)
    await agent.generate("before", memory=THREAD)
    paused = await agent.generate("pay please", memory=THREAD)
    assert paused.finish_reason == "suspended"
    for strategy in ("reject", "enqueue", "interrupt"):
        with pytest.raises(PendingApprovalError):
            await agent.generate("hello", memory=THREAD, on_busy=strategy)
    after = await agent.generate("hello", memory=THREAD, on_busy="rollback")
    assert after.text == "echo hello"
    assert [m.content for m in await memory.get_messages("chat")] == ["before", "echo before", "hello", "echo hello"]
    assert "pay" not in ledger_lines(ledger)


async def test_a_waiting_call_that_is_aborted_leaves_the_queue(memory: Memory, ledger: Path) -> None:
    from supervisor_graph import AbortController

    # the first run holds the thread 2 s: ample for the call to join the queue and leave
    agent = build(memory, ledger, wait=2.0)
    arrived = await arrivals(memory)
    first = asyncio.ensure_future(agent.generate("work one", memory=THREAD))
    await until_waiting(ledger, "work one")
    controller = AbortController()
    waiting = asyncio.ensure_future(agent.generate("never", memory=THREAD, on_busy="enqueue", abort_signal=controller.signal))
    await arrived(2)  # it waits in the queue when it is aborted
    controller.abort()
    with pytest.raises(ThreadBusyError):
        await waiting
    queued = await agent.generate("after", memory=THREAD, on_busy="enqueue")
    assert (await first).text == "done work one" and queued.text == "echo after"
    human = [m.content for m in await memory.get_messages("chat") if isinstance(m, HumanMessage)]
    assert human == ["work one", "after"]


async def test_the_until_idle_and_default_options_take_it_too(memory: Memory, ledger: Path) -> None:
    agent = build(memory, ledger).model_copy(update={"default_options": {"on_busy": "interrupt"}})
    first = asyncio.ensure_future(agent.generate("work one", memory=THREAD))
    await until_waiting(ledger, "work one")
    second = await agent.generate_until_idle("hello", memory=THREAD)
    assert (await first).finish_reason == "abort" and second.text == "echo hello"


def test_the_sync_call_takes_on_busy(tmp_path: Path) -> None:
    memory = Memory(f"file:{tmp_path / 'sync.db'}")
    agent = build(memory, tmp_path / "ledger")
    assert agent.generate_sync("hi", memory=THREAD, on_busy="enqueue").text == "echo hi"
    with pytest.raises(ValueError, match="on_busy"):
        agent.generate_sync("hi", memory=THREAD, on_busy="queue")
