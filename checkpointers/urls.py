"""Checkpointers from storage URLs: sqlite (aiosqlite), in-memory, Postgres."""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from supervisor_graph.checkpointers.delta_cache import with_delta_cache

__all__ = ["SETUP_LOCK_KEY", "describe", "is_shared_saver", "open_saver", "setup_lock"]


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
    """Savers that work from any event loop, so one instance serves the process."""
    return isinstance(storage, BaseCheckpointSaver) or storage == ":memory:"


async def open_saver(storage: Any, stack: AsyncExitStack) -> BaseCheckpointSaver:
    """Open the saver `storage` names; `stack` closes its connection."""
    kind = describe(storage)
    if kind == "saver":
        return storage  # type: ignore[no-any-return]
    if kind == "memory":
        return with_delta_cache(InMemorySaver, compact_versions=True)()
    if kind == "postgres":
        try:
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        except ImportError as exc:  # pragma: no cover - depends on the extra
            raise ImportError(
                "postgresql:// storage needs the postgres extra: pip install 'supervisor-graph[postgres]'"
            ) from exc
        postgres_class: Any = with_delta_cache(AsyncPostgresSaver)
        postgres = await stack.enter_async_context(postgres_class.from_conn_string(storage))
        # Concurrent first starts race in CREATE TABLE / migrations (UniqueViolation on
        # pg_type): one process at a time sets up, the others then find it done. Waiters
        # poll with pg_try_advisory_lock instead of blocking in pg_advisory_lock: a session
        # blocked there holds a snapshot, which CREATE INDEX CONCURRENTLY (a migration)
        # waits for, and Postgres reports a deadlock.
        while not (await (await postgres.conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (SETUP_LOCK_KEY,))).fetchone())["ok"]:
            await asyncio.sleep(0.05)
        try:
            await postgres.setup()
        finally:
            await postgres.conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK_KEY,))
        return postgres
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = str(storage) if isinstance(storage, Path) else _sqlite_path(storage)
    assert path is not None
    if path != ":memory:":
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
    target = str(Path(path).expanduser()) if path != ":memory:" else path
    saver_class: Any = with_delta_cache(AsyncSqliteSaver, compact_versions=True)
    sqlite = await stack.enter_async_context(saver_class.from_conn_string(target))
    # Concurrent first starts race in `PRAGMA journal_mode=WAL` and CREATE TABLE
    # ("database is locked"): one process at a time sets up.
    async with setup_lock(target):
        await sqlite.setup()
    return sqlite


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
