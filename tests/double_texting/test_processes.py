"""Double texting across processes on one sqlite file or Postgres database (SPEC §29):
a worker process holds a run on the thread; this process sends a second message. The
thread lease decides, never an in-process lock."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import Memory
from tests.double_texting.agent import assert_every_call_answered, build, ledger_lines

WORKER = Path(__file__).with_name("worker.py")
THREAD = {"thread": "chat", "resource": "user"}


def start(storage: str, ledger: Path, prompt: str, on_busy: str = "reject", wait: float = 30.0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), storage, str(ledger), prompt, on_busy],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SG_WAIT": str(wait)},
    )


def finish(proc: subprocess.Popen[str]) -> dict:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def waiters(storage: str) -> int:
    """How many callers wait in the thread queue of the shared database."""
    query = "SELECT count(*) FROM supervisor_graph_lease_waiters"
    if storage.startswith("file:"):
        import sqlite3

        with sqlite3.connect(storage.removeprefix("file:")) as conn:
            return int(conn.execute(query).fetchone()[0])
    import psycopg

    with psycopg.connect(storage) as conn:
        return int(conn.execute(query).fetchone()[0])  # type: ignore[index]


async def until(ledger: Path, line: str) -> None:
    for _ in range(1500):
        if line in ledger_lines(ledger):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{line!r} never happened: {ledger_lines(ledger)}")


async def test_interrupt_stops_a_run_of_another_process(shared_storage: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    holder = start(shared_storage, ledger, "work one")
    await until(ledger, "wait:work-one")
    memory = Memory(shared_storage)
    try:
        agent = build(memory, ledger)
        second = await agent.generate("hello", memory=THREAD, on_busy="interrupt")
        assert second.text == "echo hello"
        assert finish(holder)["finish_reason"] == "abort"
        messages = await memory.get_messages("chat")
        assert_every_call_answered(messages)
        results = {m.tool_call_id: str(m.content) for m in messages if isinstance(m, ToolMessage)}
        assert results["note-work-one"] == "noted work one" and results["wait-work-one"].startswith("[Aborted]")
        assert [m.content for m in messages if isinstance(m, HumanMessage)] == ["work one", "hello"]
    finally:
        await memory.aclose()


async def test_enqueue_waits_for_a_run_of_another_process(shared_storage: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    holder = start(shared_storage, ledger, "work one", wait=1.0)
    await until(ledger, "wait:work-one")
    memory = Memory(shared_storage)
    try:
        agent = build(memory, ledger)
        second = await agent.generate("hello", memory=THREAD, on_busy="enqueue")
        assert finish(holder) == {"text": "done work one", "finish_reason": "stop"}
        assert second.text == "echo hello"
        messages = await memory.get_messages("chat")
        assert [m.content for m in messages if isinstance(m, HumanMessage)] == ["work one", "hello"]
        assert_every_call_answered(messages)
    finally:
        await memory.aclose()


async def test_rollback_discards_a_run_of_another_process(shared_storage: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    memory = Memory(shared_storage)
    try:
        agent = build(memory, ledger)
        await agent.generate("before", memory=THREAD)
        holder = start(shared_storage, ledger, "work one")
        await until(ledger, "wait:work-one")
        second = await agent.generate("hello", memory=THREAD, on_busy="rollback")
        assert second.text == "echo hello"
        assert finish(holder)["finish_reason"] == "abort"
        assert [m.content for m in await memory.get_messages("chat")] == ["before", "echo before", "hello", "echo hello"]
    finally:
        await memory.aclose()


async def test_queued_messages_of_two_processes_run_in_arrival_order(shared_storage: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    holder = start(shared_storage, ledger, "work one", wait=2.0)
    await until(ledger, "wait:work-one")
    queued = start(shared_storage, ledger, "second", "enqueue")
    for _ in range(1000):  # until the worker has joined the queue
        if waiters(shared_storage):
            break
        await asyncio.sleep(0.01)
    memory = Memory(shared_storage)
    try:
        agent = build(memory, ledger)
        third = await agent.generate("third", memory=THREAD, on_busy="enqueue")
        assert third.text == "echo third"
        assert finish(holder)["text"] == "done work one" and finish(queued)["text"] == "echo second"
        human = [m.content for m in await memory.get_messages("chat") if isinstance(m, HumanMessage)]
        assert human == ["work one", "second", "third"]
    finally:
        await memory.aclose()
