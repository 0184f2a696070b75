"""Checkpointers from storage URLs: sqlite, in-memory, Postgres."""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from supervisor_graph.checkpointers.connections import connect
from supervisor_graph.checkpointers.delta_cache import with_delta_cache
from supervisor_graph.checkpointers.leases import (
    DEFAULT_BUSY_TIMEOUT,
    DEFAULT_LEASE_TTL,
    Leases,
    LocalLeases,
    SqliteLeases,
)
from supervisor_graph.checkpointers.outages import SAVER_METHODS, outages_as, translating
from supervisor_graph.checkpointers.postgres import PoolOptions
from supervisor_graph.checkpointers.sqlite import SqliteCheckpointer, Synchronous

__all__ = ["SETUP_LOCK_KEY", "Storage", "describe", "is_shared_saver", "open_storage", "setup_lock"]


def _sqlite_path(storage: str) -> str | None:
    if storage.startswith("file:"):
        return storage[len("file:") :].removeprefix("//") or None
    if storage.startswith(("sqlite:///", "sqlite+aiosqlite:///")):
        return storage.split(":///", 1)[1]
    if "://" not in storage and storage != ":memory:":
        return storage
    return None


def describe(storage: Any) -> str:
    """Validate `storage` early and say what it is ("sqlite", "memory", "postgres", "saver").

    Raises:
        ValueError: the URL names nothing this library can open.
    """
    if isinstance(storage, BaseCheckpointSaver):
        return "saver"
    if isinstance(storage, Path):
        return "sqlite"
    if not isinstance(storage, str) or not storage:
        raise ValueError(
            "storage must be 'file:<path>', a path, ':memory:', 'postgresql://...' or a LangGraph checkpointer"
        )
    if storage == ":memory:":
        return "memory"
    if storage.startswith(("postgresql://", "postgres://")):
        return "postgres"
    if _sqlite_path(storage):
        return "sqlite"
    raise ValueError(f"storage {storage!r}: use 'file:<path>', ':memory:' or 'postgresql://...'")


def is_shared_saver(storage: Any) -> bool:
    """Storage that works from any event loop, so one instance serves the process."""
    return isinstance(storage, BaseCheckpointSaver) or storage == ":memory:"


@dataclass(slots=True)
class Storage:
    """What a `Memory` opens on one database: the checkpointer, a LangGraph store (tool-call
    journal, working memory) and the thread leases."""

    saver: BaseCheckpointSaver
    store: BaseStore
    leases: Leases


async def open_storage(
    storage: Any,
    stack: AsyncExitStack,
    *,
    store: BaseStore | None = None,
    lease_ttl: float = DEFAULT_LEASE_TTL,
    sqlite_synchronous: Synchronous = "normal",
    pool_options: PoolOptions | None = None,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
) -> Storage:
    """Open what `storage` names; `stack` closes its connections. `store` replaces the
    store a checkpointer object would otherwise get (an in-process one);
    `sqlite_synchronous` is the checkpoint connection's `PRAGMA synchronous` (sqlite.py);
    `pool_options` sizes a Postgres connection pool (postgres.py); `busy_timeout` is how
    long a sqlite statement waits for a file another connection holds locked.

    Raises:
        StorageUnavailableError: the database cannot be reached (outages.py).
    """
    kind = describe(storage)
    if kind == "saver":
        return Storage(storage, store or InMemoryStore(), LocalLeases(lease_ttl))
    if kind == "memory":
        return Storage(
            with_delta_cache(InMemorySaver, compact_versions=True)(), InMemoryStore(), LocalLeases(lease_ttl)
        )
    if kind == "postgres":
        return await _open_postgres(storage, stack, lease_ttl, pool_options or PoolOptions())
    path = str(storage) if isinstance(storage, Path) else _sqlite_path(storage)
    assert path is not None
    return await _open_sqlite(path, stack, lease_ttl, sqlite_synchronous, busy_timeout)


async def _open_postgres(url: str, stack: AsyncExitStack, lease_ttl: float, pool_options: PoolOptions) -> Storage:
    """A Postgres database's storage, on one pool, its schema set up by one process at a time."""
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from langgraph.store.postgres.aio import AsyncPostgresStore

        from supervisor_graph.checkpointers.postgres import (
            PostgresLeases,
            open_pool,
            pooled_saver,
            pooled_store,
            wait_setup_lock,
        )
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise ImportError(
            "postgresql:// storage needs the postgres extra: pip install 'supervisor-graph[postgres]'"
        ) from exc
    # One pool for the checkpointer, the store and the leases (checkpointers/postgres.py):
    # broken connections are replaced, so the process outlives a database restart.
    pool = await open_pool(url, pool_options, stack)
    postgres_class: Any = with_delta_cache(pooled_saver(AsyncPostgresSaver))
    postgres = postgres_class(pool)
    pg_store = pooled_store(AsyncPostgresStore)(pool)
    # Concurrent first starts race in CREATE TABLE / migrations (UniqueViolation on
    # pg_type): one process at a time sets up, the others then find it done. Waiters
    # poll with pg_try_advisory_lock instead of blocking in pg_advisory_lock: a session
    # blocked there holds a snapshot, which CREATE INDEX CONCURRENTLY (a migration)
    # waits for, and Postgres reports a deadlock. The lock is a session's, so one
    # connection is held for lock, set-up and unlock; the set-up takes others.
    with outages_as("the Postgres database"):
        async with pool.connection() as conn:
            await wait_setup_lock(conn, SETUP_LOCK_KEY)
            try:
                await postgres.setup()
                await pg_store.setup()
                leases: Leases = await PostgresLeases.open(pool, stack, lease_ttl)
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK_KEY,))
    return Storage(postgres, pg_store, leases)


async def _open_sqlite(
    path: str, stack: AsyncExitStack, lease_ttl: float, synchronous: Synchronous, busy_timeout: float
) -> Storage:
    """A sqlite file's storage (its folder made), on connections of its own for the
    checkpointer and the store, set up by one process at a time."""
    from supervisor_graph.checkpointers.sqlite_store import SqliteStore

    if path != ":memory:":
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
    target = str(Path(path).expanduser()) if path != ":memory:" else path
    saver_class: Any = with_delta_cache(
        translating(SqliteCheckpointer, SAVER_METHODS, "the sqlite database"), compact_versions=True
    )
    # The connections, not the `from_conn_string` context managers: those are async
    # generators, which asyncio's shutdown closes all at once, racing `Memory`'s closer
    # of this stack (a traceback at exit of a program that never closed its memory).
    conn = await stack.enter_async_context(connect(target, timeout=busy_timeout))
    sqlite = saver_class(conn, synchronous=synchronous)
    stack.push_async_callback(sqlite.flush)
    # the store retries a batch that found the file locked for `busy_timeout` in all
    store_conn = await stack.enter_async_context(connect(target, isolation_level=None, timeout=min(busy_timeout, 5.0)))
    sqlite_store = SqliteStore(store_conn, retry_for=busy_timeout)
    # Concurrent first starts race in `PRAGMA journal_mode=WAL` and CREATE TABLE
    # ("database is locked"): one process at a time sets up.
    with outages_as("the sqlite database"):
        async with setup_lock(target):
            await sqlite.setup()
            await sqlite_store.setup()
            leases = await SqliteLeases.open(target, stack, lease_ttl, busy_timeout=busy_timeout)
    return Storage(sqlite, sqlite_store, leases)


# Postgres advisory-lock key serialising schema set-up (any constant shared by all processes).
SETUP_LOCK_KEY = 0x5347_5345_5455  # "SGSETU"


@asynccontextmanager
async def setup_lock(sqlite_path: str) -> AsyncIterator[None]:
    """An exclusive lock on `<path>-setup.lock` beside a sqlite file, across processes."""
    if sqlite_path == ":memory:":
        yield
        return
    fd = os.open(f"{sqlite_path}-setup.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
