"""Double texting through the facade, in one process (SPEC §29): `on_busy=` on
generate / stream / the sync and until-idle calls, on every storage."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import Memory
from supervisor_graph.declaration.errors import PendingApprovalError, ThreadBusyError
from tests.double_texting.agent import assert_every_call_answered, build, ledger_lines

THREAD = {"thread": "chat", "resource": "user"}


async def until_waiting(ledger: Path, text: str) -> None:
    """Until the first run is inside its `wait` tool (its `note` call finished)."""
    for _ in range(400):
        if f"wait:{text.replace(' ', '-')}" in ledger_lines(ledger):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the run never reached its wait tool: {ledger_lines(ledger)}")


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
    first = asyncio.ensure_future(agent.generate("work one", memory=THREAD))
    await until_waiting(ledger, "work one")
    queued = []
    for text in ("second", "third", "fourth"):
        queued.append(asyncio.ensure_future(agent.generate(text, memory=THREAD, on_busy="enqueue")))
        await asyncio.sleep(0.05)  # arrival order
    results = [await first, *await asyncio.gather(*queued)]
    assert [r.text for r in results] == ["done work one", "echo second", "echo third", "echo fourth"]
    messages = await memory.get_messages("chat")
    assert [m.content for m in messages if isinstance(m, HumanMessage)] == ["work one", "second", "third", "fourth"]
    assert_every_call_answered(messages)


async def test_an_interrupt_goes_before_queued_messages_and_none_is_lost(memory: Memory, ledger: Path) -> None:
    agent = build(memory, ledger)
    first = asyncio.ensure_future(agent.generate("work one", memory=THREAD))
    await until_waiting(ledger, "work one")
    queued = asyncio.ensure_future(agent.generate("queued", memory=THREAD, on_busy="enqueue"))
    await asyncio.sleep(0.1)
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

    agent = build(memory, ledger, wait=0.5)
    first = asyncio.ensure_future(agent.generate("work one", memory=THREAD))
    await until_waiting(ledger, "work one")
    controller = AbortController()
    waiting = asyncio.ensure_future(agent.generate("never", memory=THREAD, on_busy="enqueue", abort_signal=controller.signal))
    await asyncio.sleep(0.1)
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
