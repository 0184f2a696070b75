"""The sqlite checkpointer: LangGraph's sqlite tables, one thread hop per call.

`AsyncSqliteSaver` drives aiosqlite statement by statement: storing a checkpoint is three
round trips to the connection's thread (execute, commit, close the cursor), a batch of
writes four, loading a checkpoint six, and each commit waits for an fsync. A delegation
stores about three checkpoints and two batches, so on sqlite most of a run's time was
spent waiting on that thread (bench/RESULTS.md, "Profile of ours").

This saver keeps the same tables and rows (`langgraph.checkpoint.sqlite.SqliteSaver`
creates and reads them, so either saver opens the other's file) and does each call as
one function on a dedicated thread: values are encoded on the caller's thread when the
call is made, as `AsyncSqliteSaver` does, so later changes to them are not stored.

Commits use `PRAGMA synchronous=NORMAL` by default. In WAL mode that is what SQLite
recommends: a committed checkpoint survives the process being killed (the reliability
tests SIGKILL real processes), and the file is never corrupted; only a power cut or an
operating-system crash may roll back the last commits. `synchronous="full"` fsyncs every
commit (about 0.3 ms each here) for machines where that matters; Postgres is the choice
for data that must outlive the machine.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Literal, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.sqlite import SqliteSaver

from supervisor_graph.checkpointers.compat import DeltaChannelHistory

__all__ = ["SqliteCheckpointer", "Synchronous"]

Synchronous = Literal["normal", "full"]
T = TypeVar("T")

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


class SqliteCheckpointer(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer on a sqlite file; see the module docstring.

    Open it with `async with SqliteCheckpointer.connect(path) as saver:`. Async calls run
    on the saver's own thread in the order they were made; the sync methods (for graphs
    run with `invoke`) run on the caller's thread under the same lock.
    """

    def __init__(self, conn: sqlite3.Connection, *, synchronous: Synchronous = "normal") -> None:
        if synchronous not in ("normal", "full"):
            raise ValueError(f"synchronous must be 'normal' or 'full', not {synchronous!r}")
        self._sqlite = SqliteSaver(conn)  # reads, schema and locking: LangGraph's own code
        super().__init__(serde=self._sqlite.serde)
        self.synchronous = synchronous
        conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
        # One thread keeps the calls in order (a checkpoint before the writes made on it).
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="supervisor-graph-sqlite")

    @classmethod
    @asynccontextmanager
    async def connect(cls, path: str, *, synchronous: Synchronous = "normal") -> AsyncIterator[SqliteCheckpointer]:
        """Open `path` (or ":memory:") and close it on exit. The tables are created by
        `setup()` or, failing that, by the first call."""
        # `timeout`: how long a commit waits for another process's write transaction.
        conn = sqlite3.connect(path, check_same_thread=False, timeout=30.0)
        saver = cls(conn, synchronous=synchronous)
        try:
            yield saver
        finally:
            saver._thread.shutdown(wait=True)
            conn.close()

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return self._sqlite.get_next_version(current, channel)  # the stock savers' string versions

    async def setup(self) -> None:
        await self._run(self._with_lock, self._sqlite.setup)

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, partial(fn, *args, **kwargs))

    def _with_lock(self, fn: Callable[..., T], *args: Any) -> T:
        with self._sqlite.lock:
            return fn(*args)

    # -- writing: encode here, store on the thread -------------------------------------

    def _checkpoint_row(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> tuple[RunnableConfig, tuple[Any, ...]]:
        conf = config["configurable"]
        thread_id, checkpoint_ns = conf["thread_id"], conf["checkpoint_ns"]
        type_, blob = self.serde.dumps_typed(checkpoint)
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False).encode("utf-8", "ignore")
        row = (str(thread_id), checkpoint_ns, checkpoint["id"], conf.get("checkpoint_id"), type_, blob, meta)
        saved: RunnableConfig = {
            "configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint["id"]}
        }
        return saved, row

    def _write_rows(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> tuple[str, list[tuple[Any, ...]]]:
        conf = config["configurable"]
        key = (str(conf["thread_id"]), str(conf["checkpoint_ns"]), str(conf["checkpoint_id"]), task_id, task_path)
        rows = [
            (*key, WRITES_IDX_MAP.get(channel, idx), channel, *self.serde.dumps_typed(value))
            for idx, (channel, value) in enumerate(writes)
        ]
        verb = "REPLACE" if all(channel in WRITES_IDX_MAP for channel, _ in writes) else "IGNORE"
        return _PUT_WRITES.format(verb=verb), rows

    def _store(self, query: str, rows: Sequence[tuple[Any, ...]]) -> None:
        with self._sqlite.cursor() as cur:  # takes the lock, commits on exit
            cur.executemany(query, rows)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved, row = self._checkpoint_row(config, checkpoint, metadata)
        await self._run(self._store, _PUT, (row,))
        return saved

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved, row = self._checkpoint_row(config, checkpoint, metadata)
        self._store(_PUT, (row,))
        return saved

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await self._run(self._store, *self._write_rows(config, writes, task_id, task_path))

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self._store(*self._write_rows(config, writes, task_id, task_path))

    # -- reading and the rest: LangGraph's sync saver, on the thread ---------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._run(self._sqlite.get_tuple, config)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._sqlite.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await self._run(lambda: list(self._sqlite.list(config, filter=filter, before=before, limit=limit)))
        for item in found:
            yield item

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        return self._sqlite.list(config, filter=filter, before=before, limit=limit)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await self._run(partial(self._sqlite.get_delta_channel_history, config=config, channels=channels))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return self._sqlite.get_delta_channel_history(config=config, channels=channels)

    async def adelete_thread(self, thread_id: str) -> None:
        await self._run(self._sqlite.delete_thread, thread_id)

    def delete_thread(self, thread_id: str) -> None:
        self._sqlite.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Any) -> None:
        await self._run(self._sqlite.delete_for_runs, run_ids)

    def delete_for_runs(self, run_ids: Any) -> None:
        self._sqlite.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._run(self._sqlite.copy_thread, source_thread_id, target_thread_id)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._sqlite.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Any, *, strategy: str = "keep_latest") -> None:
        await self._run(partial(self._sqlite.prune, thread_ids, strategy=strategy))

    def prune(self, thread_ids: Any, *, strategy: str = "keep_latest") -> None:
        self._sqlite.prune(thread_ids, strategy=strategy)
