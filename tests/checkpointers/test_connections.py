"""sqlite connections that never keep a process alive (aiosqlite >= 0.22 made its
connection thread non-daemon: an unclosed `Memory` hung the process at exit)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
import weakref

import pytest

from supervisor_graph.checkpointers import connections
from supervisor_graph.checkpointers.connections import close_open_connections, connect, worker_thread

# A program that runs on a loop it closes without `shutdown_asyncgens()` (what closes a
# `Memory` left open), the agent and its memory still referenced at exit.
LEFT_OPEN = textwrap.dedent(
    """
    import asyncio, sys
    from supervisor_graph import Agent, Memory
    from supervisor_graph.testing import ScriptedChatModel

    agent = Agent(id="a", description="d", instructions="i",
                  model=ScriptedChatModel(responses=["hi"]), memory=Memory(storage=sys.argv[1]))
    loop = asyncio.new_event_loop()
    print(loop.run_until_complete(agent.generate("hello", memory="t1")).text, flush=True)
    loop.close()
    """
)


def test_a_program_that_never_closes_its_memory_still_exits_with_its_conversation_stored(tmp_path) -> None:
    path = str(tmp_path / "app.db")
    done = subprocess.run(
        [sys.executable, "-c", LEFT_OPEN, path], capture_output=True, text=True, timeout=60
    )  # before the fix: no exit at all (the timeout)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hi"
    with sqlite3.connect(path) as db:
        (count,) = db.execute("SELECT count(*) FROM checkpoints WHERE thread_id = 't1'").fetchone()
    assert count > 0


@pytest.fixture
def only_these(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exit hook sees only the connections this test opens (not those other tests of
    the process left to the garbage collector)."""
    monkeypatch.setattr(connections, "_open", weakref.WeakSet())


async def test_a_connection_left_open_is_closed_at_exit_after_its_queued_jobs(tmp_path, only_these) -> None:
    path = str(tmp_path / "left.db")
    conn = await connect(path, isolation_level=None)
    worker = worker_thread(conn)
    assert worker.daemon and worker.is_alive()
    await conn.execute("CREATE TABLE t (x INTEGER)")
    await conn.execute("INSERT INTO t VALUES (1)")
    # the exit hook runs where no loop runs (after the program's loops have ended)
    hook = threading.Thread(target=close_open_connections)
    hook.start()
    hook.join(30)
    # the connection's thread ends just after its close job answered: on a busy machine
    # it may not have been scheduled yet when the hook returns
    worker.join(30)
    assert not hook.is_alive() and not worker.is_alive()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT x FROM t").fetchall() == [(1,)]
    await conn.close()  # closing again is harmless


async def test_a_closed_connection_is_left_alone_at_exit(tmp_path) -> None:
    async with connect(str(tmp_path / "closed.db")) as conn:
        worker = worker_thread(conn)
    worker.join(30)
    assert not worker.is_alive()
    close_open_connections()  # nothing to do, and no loop is needed
