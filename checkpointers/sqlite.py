"""The sqlite checkpointer: LangGraph's `AsyncSqliteSaver`, one trip to sqlite per call.

`AsyncSqliteSaver` drives its aiosqlite connection statement by statement: storing a
checkpoint is three round trips to the connection's thread (execute, commit, close the
cursor), a batch of writes four, loading a checkpoint six, and every commit waits for an
fsync. A delegation stores about three checkpoints and two batches, so on sqlite most of
a run's time was spent waiting on that thread (bench/RESULTS.md, "Profile of ours").

This subclass stores and loads checkpoints as one job each on the same connection
thread, with the same statements, tables and rows (the stock savers open its files and it
opens theirs). Values are encoded on the caller's thread when the call is made, as
`AsyncSqliteSaver` does, so later changes to them are not stored. Everything else
(listing, the delta-channel history, deleting, copying) is `AsyncSqliteSaver`'s own.

Commits use `PRAGMA synchronous=NORMAL` by default. In WAL mode that is what SQLite
recommends: a committed checkpoint survives the process being killed (the reliability
tests SIGKILL real processes), and the file is never corrupted; only a power cut or an
operating-system crash may roll back the last commits. `synchronous="full"` fsyncs every
commit (about 0.3 ms each on the benchmark machine) for machines where that matters;
Postgres is the choice for data that must outlive the machine.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    SerializerProtocol,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.checkpoint.sqlite.utils import load_pending_writes, pending_writes_sql

from supervisor_graph.checkpointers.compat import on_connection_thread
from supervisor_graph.checkpointers.connections import connect
from supervisor_graph.checkpointers.fence import hold_fence

__all__ = ["SqliteCheckpointer", "Synchronous"]

Synchronous = Literal["normal", "full"]

_PUT = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
    "checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
# LangGraph's rule: special channels (errors, interrupts, resumes) replace what a task
# stored before; ordinary writes keep the first value stored for a (task, idx).
_PUT_WRITES = (
    "INSERT OR {verb} INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, "
    "value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT = "SELECT thread_id, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
_ONE = _SELECT + "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
_LATEST = _SELECT + "WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1"


def _store_all(conn: sqlite3.Connection, jobs: Sequence[tuple[str, Sequence[tuple[Any, ...]]]]) -> None:
    """Every (statement, rows) of `jobs` in one transaction, or none of them: a job that
    failed (a full disk, a file locked beyond the busy wait) is rolled back, so its rows
    never ride along with the next job's commit."""
    try:
        for query, rows in jobs:
            if rows:
                conn.executemany(query, rows)
        conn.commit()
    except BaseException:
        if conn.in_transaction:
            conn.rollback()
        raise


def _load(
    conn: sqlite3.Connection,
    thread_id: str,
    ns: str,
    checkpoint_id: str | None,
    writes_sql: str,
    deferred: Sequence[tuple[Any, ...]] = (),
) -> tuple[tuple[Any, ...], list[Any]] | None:
    if deferred:
        _store_all(conn, [(_PUT, deferred)])
    if checkpoint_id:
        row = conn.execute(_ONE, (thread_id, ns, checkpoint_id)).fetchone()
    else:
        row = conn.execute(_LATEST, (thread_id, ns)).fetchone()
    if row is None:
        return None
    return row, conn.execute(writes_sql, (thread_id, ns, row[1])).fetchall()


class SqliteCheckpointer(AsyncSqliteSaver):
    """`AsyncSqliteSaver` with one connection-thread job per store or load; see the
    module docstring. Open it with `async with SqliteCheckpointer.from_conn_string(path)`."""

    def __init__(
        self, conn: aiosqlite.Connection, *, serde: SerializerProtocol | None = None, synchronous: Synchronous = "normal"
    ) -> None:
        if synchronous not in ("normal", "full"):
            raise ValueError(f"synchronous must be 'normal' or 'full', not {synchronous!r}")
        super().__init__(conn, serde=serde)
        self.synchronous = synchronous
        # checkpoint rows stored with the next job on the connection (`aput_with_next_write`)
        self._deferred: list[tuple[Any, ...]] = []

    @classmethod
    @asynccontextmanager
    async def from_conn_string(  # type: ignore[override]
        cls, conn_string: str, *, synchronous: Synchronous = "normal"
    ) -> AsyncIterator[SqliteCheckpointer]:
        # `timeout`: how long a commit waits for another process's write transaction.
        async with connect(conn_string, timeout=30.0) as conn:
            saver = cls(conn, synchronous=synchronous)
            try:
                yield saver
            finally:
                await saver.flush()

    async def alist(self, config: RunnableConfig | None, **kwargs: Any) -> AsyncIterator[CheckpointTuple]:
        await self.flush()
        async for item in super().alist(config, **kwargs):
            yield item

    async def adelete_thread(self, thread_id: str) -> None:
        await self.flush()
        await super().adelete_thread(thread_id)

    async def aget_delta_channel_history(self, *args: Any, **kwargs: Any) -> Any:
        await self.flush()
        return await super().aget_delta_channel_history(*args, **kwargs)

    async def setup(self) -> None:
        if self.is_setup:
            return
        await super().setup()
        async with self.lock:  # a connection setting: every commit from here on
            await self.conn.execute(f"PRAGMA synchronous={self.synchronous.upper()}")

    def _row(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata) -> tuple[Any, ...]:
        conf = config["configurable"]
        type_, blob = self.serde.dumps_typed(checkpoint)
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False).encode("utf-8", "ignore")
        return (str(conf["thread_id"]), conf["checkpoint_ns"], checkpoint["id"], conf.get("checkpoint_id"), type_, blob, meta)

    def _take_deferred(self) -> list[tuple[Any, ...]]:
        rows, self._deferred = self._deferred, []
        return rows

    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        if not self.is_setup:
            await self.setup()
        row = self._row(config, checkpoint, metadata)
        async with self.lock:
            await on_connection_thread(self.conn, _store_all, [(_PUT, [*self._take_deferred(), row])])
        return {"configurable": {"thread_id": row[0], "checkpoint_ns": row[1], "checkpoint_id": checkpoint["id"]}}

    async def aput_with_next_write(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        """Store a checkpoint in the same transaction as the connection's next job (any
        store or load, or closing), instead of a trip of its own now.

        For a delegation's thread written by its parent's node (`first_write.py`): the node's
        own writes, stored right after it returns, carry it, so the thread and the
        delegation's result reach the file together or not at all. Every read here sees
        it (they run after it on the connection)."""
        await hold_fence(config)
        if not self.is_setup:
            await self.setup()
        row = self._row(config, checkpoint, metadata)
        self._deferred.append(row)
        return {"configurable": {"thread_id": row[0], "checkpoint_ns": row[1], "checkpoint_id": checkpoint["id"]}}

    async def flush(self) -> None:
        """Store the checkpoints waiting for the next job now."""
        if not self._deferred:
            return
        async with self.lock:
            rows = self._take_deferred()
            if rows:
                await on_connection_thread(self.conn, _store_all, [(_PUT, rows)])

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        if not self.is_setup:
            await self.setup()
        conf = config["configurable"]
        key = (str(conf["thread_id"]), str(conf["checkpoint_ns"]), str(conf["checkpoint_id"]), task_id, task_path)
        rows = [
            (*key, WRITES_IDX_MAP.get(channel, idx), channel, *self.serde.dumps_typed(value))
            for idx, (channel, value) in enumerate(writes)
        ]
        verb = "REPLACE" if all(channel in WRITES_IDX_MAP for channel, _ in writes) else "IGNORE"
        async with self.lock:
            jobs = [(_PUT, self._take_deferred()), (_PUT_WRITES.format(verb=verb), rows)]
            await on_connection_thread(self.conn, _store_all, jobs)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        if not self.is_setup:
            await self.setup()
        conf = config["configurable"]
        checkpoint_ns = conf.get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)
        writes_sql = pending_writes_sql(getattr(self, "_has_task_path", True))
        async with self.lock:
            found = await on_connection_thread(
                self.conn, _load, str(conf["thread_id"]), checkpoint_ns, checkpoint_id, writes_sql, self._take_deferred()
            )
        if found is None:
            return None
        (thread_id, found_id, parent_id, type_, blob, meta), writes = found
        if not checkpoint_id:
            config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": found_id}}
        parent: RunnableConfig | None = (
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": parent_id}}
            if parent_id
            else None
        )
        return CheckpointTuple(
            config,
            self.serde.loads_typed((type_, blob)),
            json.loads(meta) if meta is not None else {},
            parent,
            load_pending_writes(writes, self.serde),
        )
