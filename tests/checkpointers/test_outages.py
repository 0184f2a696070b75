"""Issue 46: a database that cannot serve says so, the same way on sqlite and Postgres.

A sqlite file held by another connection (`BEGIN EXCLUSIVE`) beyond the busy wait, or a
full disk (sqlite's `max_page_count`, which fails a write exactly as a full disk does:
SQLITE_FULL, "database or disk is full"), refuses a run with `StorageUnavailableError`;
AG-UI ends it with `RUN_ERROR` `STORAGE_UNAVAILABLE`, and the thread is usable again once
the file is. Which driver errors count as an outage, the HTTP answer (JSON 503), and the
pool's options are checked here too; the Postgres outage itself, on a real server, is
tests/reliability/test_postgres_restart.py.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from ag_ui.core import RunAgentInput, UserMessage
from fastapi import FastAPI
from psycopg_pool import PoolTimeout
from pydantic import BaseModel, ValidationError

from supervisor_graph import Agent, Memory, StorageUnavailableError
from supervisor_graph.agui.agent import AGUIAgent
from supervisor_graph.agui.outcomes import STORAGE_UNAVAILABLE_MESSAGE, client_error
from supervisor_graph.agui.serving import add_error_handlers
from supervisor_graph.checkpointers.outages import unavailable
from supervisor_graph.memory import PoolOptions
from supervisor_graph.testing import ScriptedChatModel

BUSY_TIMEOUT = 0.3


def _agent(path: Path) -> Agent:
    memory = Memory(f"file:{path}", busy_timeout=BUSY_TIMEOUT)
    return Agent(id="keeper", description="Answers.", model=ScriptedChatModel(policy=lambda m: "answered"), memory=memory)


def _input(thread: str, text: str) -> RunAgentInput:
    return RunAgentInput(
        thread_id=thread,
        run_id=f"run-{uuid.uuid4().hex[:8]}",
        messages=[UserMessage(id=f"u-{uuid.uuid4().hex[:8]}", content=text)],
        state={},
        tools=[],
        context=[],
        forwarded_props={},
    )


class Locked:
    """Another connection holding the sqlite file's write lock."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)

    def __enter__(self) -> Locked:
        self.conn.execute("BEGIN EXCLUSIVE")
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.close()


async def test_a_file_locked_beyond_the_busy_wait_refuses_the_run_and_the_thread_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    agent = _agent(path)
    assert agent.memory is not None
    try:
        assert (await agent.generate("first", memory={"thread": "t"})).text == "answered"
        with Locked(path):
            started = time.monotonic()
            with pytest.raises(StorageUnavailableError) as caught:
                await agent.generate("second", memory={"thread": "t"})
            waited = time.monotonic() - started
            assert caught.value.reason == "locked"
            assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
            assert waited >= BUSY_TIMEOUT  # it waited for the file, as configured, then said so
            store = await agent.memory.store()
            with pytest.raises(StorageUnavailableError):
                await store.aput(("notes",), "k", {"v": 1})
        assert (await agent.generate("third", memory={"thread": "t"})).text == "answered"
        stored = [(m.type, m.content) for m in await agent.memory.get_messages("t")]
        assert stored == [("human", "first"), ("ai", "answered"), ("human", "third"), ("ai", "answered")]
    finally:
        await agent.memory.aclose()


async def test_a_full_disk_refuses_the_run_and_stores_none_of_it(tmp_path: Path) -> None:
    agent = _agent(tmp_path / "memory.db")
    assert agent.memory is not None
    try:
        assert (await agent.generate("first", memory={"thread": "t"})).text == "answered"
        saver: Any = await agent.memory.checkpointer()
        pages = (await (await saver.conn.execute("PRAGMA page_count")).fetchone())[0]
        await saver.conn.execute(f"PRAGMA max_page_count = {pages}")  # the file may not grow
        with pytest.raises(StorageUnavailableError) as caught:
            await agent.generate("x" * 100_000, memory={"thread": "t"})
        assert caught.value.reason == "full"
        await saver.conn.execute("PRAGMA max_page_count = 1073741823")  # space again
        assert (await agent.generate("after", memory={"thread": "t"})).text == "answered"
        stored = [m.content for m in await agent.memory.get_messages("t")]
        assert stored == ["first", "answered", "after", "answered"]
    finally:
        await agent.memory.aclose()


async def test_agui_ends_a_run_on_a_locked_file_with_storage_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    agent = _agent(path)
    assert agent.memory is not None
    bridge = AGUIAgent(agent)
    try:
        events = [e async for e in bridge.run(_input("t", "first"))]
        assert events[-1].type == "RUN_FINISHED"
        with Locked(path):
            events = [e async for e in bridge.run(_input("t", "second"))]
        last = events[-1].model_dump()
        assert last["type"] == "RUN_ERROR" and last["code"] == "STORAGE_UNAVAILABLE", last
        assert "sqlite" not in last["message"] and "locked" not in last["message"]  # ours, not the driver's
        events = [e async for e in bridge.run(_input("t", "third"))]
        assert events[-1].type == "RUN_FINISHED"
    finally:
        await agent.memory.aclose()


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (psycopg.OperationalError("connection refused"), "unreachable"),  # libpq, no SQLSTATE
        (psycopg.errors.AdminShutdown(), "unreachable"),  # 57P01: the server shut down
        (psycopg.errors.CannotConnectNow(), "unreachable"),  # 57P03: starting up
        (psycopg.errors.ConnectionFailure(), "unreachable"),  # 08006
        (psycopg.errors.TooManyConnections(), "unreachable"),  # 53300
        (psycopg.errors.DiskFull(), "full"),  # 53100
        (PoolTimeout(), "timeout"),
        (sqlite3.OperationalError("database is locked"), "locked"),
        (sqlite3.OperationalError("database or disk is full"), "full"),
        (sqlite3.OperationalError("disk I/O error"), "io"),
        (psycopg.errors.DeadlockDetected(), None),  # a race to report, not an outage
        (psycopg.errors.UniqueViolation(), None),
        (sqlite3.OperationalError("no such table: checkpoints"), None),
        (ValueError("nope"), None),
    ],
)
def test_which_driver_errors_mean_the_database_is_unavailable(error: BaseException, reason: str | None) -> None:
    found = unavailable(error)
    assert (found.reason if found is not None else None) == reason
    # what the storage layer raises: the outage, or the driver's error unchanged
    code, message = client_error(found or error, False)
    assert (code == "STORAGE_UNAVAILABLE") == (reason is not None)
    if reason is not None:  # one message of ours, whatever the driver said
        assert message == STORAGE_UNAVAILABLE_MESSAGE
    else:
        assert client_error(error, False)[0] == "AGENT_ERROR"


def test_a_wrapped_outage_still_reads_as_one() -> None:
    try:
        try:
            raise StorageUnavailableError("the database is unavailable")
        except StorageUnavailableError as exc:
            raise RuntimeError("the run failed") from exc
    except RuntimeError as wrapped:
        assert client_error(wrapped, False)[0] == "STORAGE_UNAVAILABLE"


async def test_routes_answer_an_outage_with_a_json_503() -> None:
    app = FastAPI()
    add_error_handlers(app)

    async def history() -> None:
        raise StorageUnavailableError("the Postgres database is unavailable (no connection)")

    app.add_api_route("/threads", history, methods=["GET"])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        response = await client.get("/threads")
    assert response.status_code == 503
    assert response.json()["code"] == "STORAGE_UNAVAILABLE"
    assert "Postgres" not in response.text  # the server's log has the details, not the client
    assert response.headers["retry-after"]


def test_pool_options() -> None:
    assert PoolOptions() == PoolOptions(min_size=1, max_size=10, timeout=3.0, connect_timeout=3)
    assert Memory("postgresql://u@127.0.0.1:1/db", pool={"max_size": 4}).pool.max_size == 4
    with pytest.raises(ValidationError):
        PoolOptions(min_size=5, max_size=4)
    with pytest.raises(ValidationError):
        PoolOptions(max_size=1)  # set-up holds a connection while it uses another
    with pytest.raises(ValidationError):
        PoolOptions(size=3)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="busy_timeout"):
        Memory(":memory:", busy_timeout=0)


async def test_a_run_whose_lease_cannot_be_renewed_ends_with_the_outage(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unrenewed, a lease lapses and another run could take the thread: the run ends at
    the failed renewal (every lease_ttl / 3 s), not at its next write (here a model call
    of a minute away)."""
    memory = Memory(":memory:", lease_ttl=0.3)
    agent = Agent(
        id="keeper",
        description="Answers.",
        model=ScriptedChatModel(policy=lambda m: "answered", latency=60.0),
        memory=memory,
    )
    leases = (await memory.opened()).leases

    async def renew(thread_id: str, owner: str) -> bool:
        raise StorageUnavailableError("the database is unavailable (no connection)", "unreachable")

    monkeypatch.setattr(leases, "renew", renew)
    with pytest.raises(StorageUnavailableError):
        await asyncio.wait_for(agent.generate("hello", memory={"thread": "t"}), 30)  # not the model's minute
    assert await leases.acquire("t", "next-run") is not None  # the thread was given back


async def test_a_run_cut_by_a_full_disk_leaves_its_thread_for_the_next_run_to_repair(tmp_path: Path) -> None:
    """The tool ran, its result could not be stored: the run ends with the outage, its
    repair (which could not be stored either) is left to the thread's next run, which
    closes the call before its own input, as after a crash."""
    from langchain_core.messages import ToolMessage

    from supervisor_graph import create_tool
    from supervisor_graph.testing import tool_call

    memory = Memory(f"file:{tmp_path / 'memory.db'}", busy_timeout=BUSY_TIMEOUT)

    async def fill_the_disk(args: Any) -> str:
        saver: Any = await memory.checkpointer()
        pages = (await (await saver.conn.execute("PRAGMA page_count")).fetchone())[0]
        await saver.conn.execute(f"PRAGMA max_page_count = {pages}")
        return "y" * 100_000  # a result the file has no room for

    class Nothing(BaseModel):
        pass

    tool = create_tool(id="fetch", description="Fetch.", input_schema=Nothing, execute=fill_the_disk)

    def policy(messages: list[Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return "fetched"
        return tool_call("fetch", {}) if messages[-1].content == "fetch" else "answered"

    agent = Agent(id="keeper", description="Fetches.", tools=[tool], model=ScriptedChatModel(policy=policy), memory=memory)
    try:
        with pytest.raises(StorageUnavailableError):
            await agent.generate("fetch", memory={"thread": "t"})
        saver: Any = await memory.checkpointer()
        await saver.conn.execute("PRAGMA max_page_count = 1073741823")
        assert (await agent.generate("hello", memory={"thread": "t"})).text == "answered"
        messages = await memory.get_messages("t")
        kinds = [m.type for m in messages]
        assert kinds == ["human", "ai", "tool", "human", "ai"], kinds
        # the tool ran and its result is lost: "outcome unknown", as after a crash (not
        # "[Aborted] ... cancelled before the tool ran", which the model would believe)
        assert messages[2].content.startswith("[Interrupted]"), messages[2].content
    finally:
        await memory.aclose()
