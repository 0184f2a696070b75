"""The Postgres pool (checkpointers/postgres.py) on a live server: connections the server
closed (what a restart does to its clients, done here with `pg_terminate_backend`, so
the shared server keeps running) are replaced at their next checkout, and the next run
works without an error or a restart. The outage itself: tests/reliability/test_postgres_restart.py."""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from contextlib import AsyncExitStack
from typing import Any

import psycopg
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from psycopg import pq

from supervisor_graph import Agent, Memory
from supervisor_graph.checkpointers import shield
from supervisor_graph.checkpointers.postgres import PoolOptions, open_pool
from supervisor_graph.checkpointers.urls import open_storage
from supervisor_graph.testing import ScriptedChatModel
from tests.conftest import fresh_postgres


def _terminate_clients(url: str) -> int:
    """Close every connection to `url`'s database from the server's side, and return once
    their server processes have exited (so their goodbyes have been sent): waited for,
    bounded, not assumed after a fixed delay. The number closed."""
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as admin:
        pids = [
            pid
            for (pid,) in admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", (name,)
            ).fetchall()
        ]
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        deadline = time.monotonic() + 60
        while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,)).fetchone()[0]:
            assert time.monotonic() < deadline, "the terminated server processes did not exit"
            time.sleep(0.02)
    return len(pids)


async def test_connections_the_server_closed_are_replaced_without_an_error() -> None:
    with fresh_postgres() as url:
        memory = Memory(url, pool={"min_size": 2, "max_size": 4})
        agent = Agent(id="keeper", description="Answers.", model=ScriptedChatModel(policy=lambda m: "answered"), memory=memory)
        try:
            # a few runs at once: the pool holds several connections
            await asyncio.gather(*(agent.generate("first", memory={"thread": f"t{i}"}) for i in range(4)))
            assert _terminate_clients(url) >= 2  # the server's goodbyes have arrived
            # every idle connection is dead; the runs neither fail nor wait for a retry
            results = await asyncio.gather(*(agent.generate("again", memory={"thread": f"t{i}"}) for i in range(4)))
            assert [r.text for r in results] == ["answered"] * 4
            for i in range(4):
                assert [m.content for m in await memory.get_messages(f"t{i}")] == ["first", "answered", "again", "answered"]
        finally:
            await memory.aclose()


async def _statements(storage: Any, i: int) -> None:
    """One run's worth of statements: the lease, a pipelined checkpoint and its writes
    (LangGraph's `_cursor(pipeline=True)`), reads, and the lease given back."""
    thread, owner = f"t{i % 5}", f"owner-{i}"
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    got = await storage.leases.acquire(thread, owner)
    try:
        checkpoint = create_checkpoint(empty_checkpoint(), None, i)
        checkpoint["channel_versions"] = {"notes": f"{i:032}.0"}
        checkpoint["channel_values"] = {"notes": ["note"] * 3}
        saved = await storage.saver.aput(config, checkpoint, {"source": "loop", "step": i}, {"notes": f"{i:032}.0"})
        await storage.saver.aput_writes(saved, [("notes", "more")], str(uuid.uuid4()))
        await storage.saver.aget_tuple(config)
        async for _ in storage.saver.alist(config, limit=2):
            break  # an iteration left early: its connection must not stay checked out
    finally:
        if got is not None:
            await storage.leases.release(thread, owner)


def _open_transactions(url: str) -> list[tuple[Any, ...]]:
    """The database's other connections that are in a transaction or mid-statement."""
    with psycopg.connect(url, autocommit=True) as admin:
        return admin.execute(
            "SELECT pid, state, xact_start, left(query, 80) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND (xact_start IS NOT NULL OR state <> 'idle')"
        ).fetchall()


async def test_runs_cancelled_mid_statement_leave_no_connection_in_a_transaction(caplog: Any) -> None:
    """Client cancels cancel a run's task wherever it is, twice at times (the stream
    closed, then the run stopped). Before shield.py a cancellation inside a statement made
    psycopg cancel it on the server and, cancelled again, close the connection ("query
    cancellation interrupted"), which the pool took for an outage (the runs beside it
    failed with StorageUnavailableError); one inside a pipeline's Sync could leave the
    connection in an open transaction that blocked every lease statement after it."""
    caplog.set_level(logging.WARNING)
    rnd = random.Random(46)
    with fresh_postgres() as url:
        async with AsyncExitStack() as stack:
            storage = await open_storage(url, stack, pool_options=PoolOptions(min_size=2, max_size=6))
            pool = storage.saver.conn
            failures: list[BaseException] = []
            cancelled = 0
            for round_ in range(120):
                tasks = [asyncio.ensure_future(_statements(storage, round_ * 6 + k)) for k in range(6)]
                await asyncio.sleep(rnd.uniform(0, 0.015))
                for task in tasks:
                    if rnd.random() < 0.6:
                        task.cancel()
                await asyncio.sleep(rnd.uniform(0, 0.003))
                for task in tasks:
                    if rnd.random() < 0.4:
                        task.cancel()  # again, while the first cancellation is handled
                for outcome in await asyncio.gather(*tasks, return_exceptions=True):
                    if isinstance(outcome, asyncio.CancelledError):
                        cancelled += 1
                    elif isinstance(outcome, BaseException):
                        failures.append(outcome)
            for _ in range(200):  # leases taken by cancelled acquires are being given back
                if not shield._UNDOING:
                    break
                await asyncio.sleep(0.05)
            # the runs that were not cancelled all succeeded: no connection closed by a
            # cancellation, so no false outage
            assert failures == [], failures[:3]
            assert cancelled > 100, f"too few cancellations landed to test anything ({cancelled})"
            closed = [r.getMessage() for r in caplog.records if "cancellation interrupted" in r.getMessage()]
            assert closed == []
            # every pooled connection is idle and out of pipeline mode; the server agrees
            for conn in list(pool._pool):
                assert conn.pgconn.transaction_status == pq.TransactionStatus.IDLE
                assert conn.pgconn.pipeline_status == pq.PipelineStatus.OFF
            assert _open_transactions(url) == []
            # leases still work on every thread (a lock left behind would hang these)
            for thread in (f"t{i}" for i in range(5)):
                assert await asyncio.wait_for(storage.leases.acquire(thread, "last"), 10) is not None
                await asyncio.wait_for(storage.leases.release(thread, "last"), 10)
            await asyncio.wait_for(_statements(storage, 10_000), 10)


async def test_a_connection_left_in_pipeline_mode_is_never_lent_again() -> None:
    """The net behind shield.py: a connection given back still in libpq's pipeline mode
    (a pipeline whose exit was cut short) would make every later statement on it join one
    implicit transaction that is never committed. The pool closes it instead."""
    with fresh_postgres() as url:
        async with AsyncExitStack() as stack:
            pool = await open_pool(url, PoolOptions(min_size=1, max_size=2), stack)
            conn = await pool.getconn()
            conn.pgconn.enter_pipeline_mode()  # what a cut-short pipeline leaves behind
            await pool.putconn(conn)
            assert conn.closed
            async with pool.connection() as fresh:
                assert fresh is not conn
                await fresh.execute("SELECT 1")
                assert fresh.pgconn.transaction_status == pq.TransactionStatus.IDLE


async def test_settle_writes_waits_for_the_threads_writes_in_flight() -> None:
    """A stopped run's repair reads its thread after `settle_writes`: the results its
    finished steps were still writing (LangGraph writes them from background tasks, on
    other pooled connections) are stored by then, so no call is answered twice
    ('[Aborted]' beside its real result, issue 46)."""
    with fresh_postgres() as url:
        async with AsyncExitStack() as stack:
            storage = await open_storage(url, stack)
            saver = storage.saver
            config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
            checkpoint = create_checkpoint(empty_checkpoint(), None, 1)
            saved = await saver.aput(config, checkpoint, {"source": "loop", "step": 1}, {})
            writes = [asyncio.ensure_future(saver.aput_writes(saved, [("notes", f"result {i}")], f"task-{i}")) for i in range(5)]
            await asyncio.sleep(0)  # the writes have started, none has been stored
            await saver.settle_writes("t")
            assert all(write.done() for write in writes)
            stored = await saver.aget_tuple(saved)
            assert sorted(value for _, _, value in stored.pending_writes) == [f"result {i}" for i in range(5)]
            await saver.settle_writes("t")  # nothing in flight: returns at once
