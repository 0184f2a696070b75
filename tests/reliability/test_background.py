"""Background tasks survive a killed process (SPEC §12): a task whose process got
SIGKILL is found by the next call on its thread, re-run when it has tries left or failed
when not, and reported exactly once; while its process lives, nobody else runs it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from supervisor_graph import Memory, ThreadBusyError
from tests.reliability.bg_worker import THREAD, build

WORKER = Path(__file__).with_name("bg_worker.py")
ROOT = Path(__file__).resolve().parents[2]


def start_worker(storage: str, ledger: Path, retries: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), storage, str(ledger), str(retries)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    line = proc.stdout.readline() if proc.stdout else ""
    assert json.loads(line or "{}").get("text") == "started", proc.stderr.read() if proc.stderr else ""
    deadline = time.monotonic() + 30
    while "sub" not in ledger.read_text() if ledger.exists() else True:  # the task is in its model call
        assert time.monotonic() < deadline and proc.poll() is None, "the background task never started"
        time.sleep(0.05)
    return proc


def runs_by(ledger: Path) -> list[str]:
    return [line.split()[1] for line in ledger.read_text().splitlines() if line.startswith("sub ")]


async def settle(memory: Memory, agent, expect: str) -> str:
    """Call recover until the thread has been told of the task and the supervisor answered
    it (recover's own run, or the host answering the outcome by itself once a re-run
    ends: SPEC §12); return that answer."""
    for _ in range(200):
        try:
            await agent.recover_background_tasks(memory=THREAD)
        except ThreadBusyError:
            pass  # the host is answering the outcome right now
        tasks = await memory.list_background_tasks(THREAD["thread"])
        messages = await memory.get_messages(THREAD["thread"])
        told = any("background_task" in m.additional_kwargs for m in messages)
        if tasks and tasks[0].status == expect and told and messages[-1].type == "ai":
            return str(messages[-1].content)
        await asyncio.sleep(0.05)
    raise AssertionError(f"the task never became {expect}: {await memory.list_background_tasks(THREAD['thread'])}")


@pytest.mark.parametrize("retries", [1, 0])
async def test_a_task_whose_process_was_killed_is_rerun_or_failed_and_reported_once(
    shared_storage: str, tmp_path: Path, retries: int
) -> None:
    ledger = tmp_path / "ledger"
    proc = start_worker(shared_storage, ledger, retries)
    async with Memory(shared_storage) as memory:
        agent = build(memory, str(ledger), retries, seconds=0.0)
        try:
            # while the worker lives, its lease keeps the task there: nothing runs it here
            assert await agent.recover_background_tasks(memory=THREAD) is None
            assert runs_by(ledger) == [str(proc.pid)]
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        expected = "completed" if retries else "failed"
        answer = await settle(memory, agent, expected)
        [task] = await memory.list_background_tasks(THREAD["thread"])
        assert task.status == expected
        if retries:
            assert runs_by(ledger) == [str(proc.pid), str(os.getpid())] and task.tries == 2
            assert answer.startswith(f"reported: [Background task {task.task_id} completed]\nfacts")
        else:
            assert runs_by(ledger) == [str(proc.pid)] and task.tries == 1
            assert answer.startswith(f"reported: [Background task {task.task_id} failed]")
        # reported exactly once: nothing more to tell, and one notice in the thread
        assert await agent.recover_background_tasks(memory=THREAD) is None
        notices = [m for m in await memory.get_messages(THREAD["thread"]) if "background_task" in m.additional_kwargs]
        assert len(notices) == 1 and notices[0].additional_kwargs["background_task"]["status"] == expected


@pytest.mark.parametrize("n", [2, 5])
async def test_parallel_background_tasks_of_one_turn_never_fail_on_a_shared_database(shared_storage: str, n: int) -> None:
    """Issue 24: several background delegations of one turn save their records while the
    parent's run checkpoints; on sqlite that failed with "database is locked" before the
    store retried its contended batches (checkpointers/sqlite_store.py)."""
    from langchain_core.messages import HumanMessage, ToolMessage

    from supervisor_graph import Agent
    from supervisor_graph.testing import ScriptedChatModel, delegate

    def boss_policy(messages: list) -> object:
        last = messages[-1]
        if isinstance(last, HumanMessage) and str(last.content).startswith("[Background task"):
            return "reported"
        return "started" if isinstance(last, ToolMessage) else [delegate(f"w{i}", "dig") for i in range(n)]

    memory = Memory(storage=shared_storage)
    workers = {f"w{i}": Agent(id=f"w{i}-agent", description="W.", model=ScriptedChatModel(policy=lambda m: "facts")) for i in range(n)}
    boss = Agent(
        id="boss", model=ScriptedChatModel(policy=boss_policy), agents=workers, memory=memory,
        background_tasks={"tools": {key: {} for key in workers}},
    )
    try:
        for i in range(10):
            result = await boss.generate_until_idle("go", memory={"thread": f"parallel-{n}-{i}"})
            assert result.finish_reason == "stop"
            tasks = await memory.list_background_tasks(f"parallel-{n}-{i}")
            assert sorted(t.status for t in tasks) == ["completed"] * n
    finally:
        await memory.aclose()
