"""Checkpointers for the contenders, and counting wrappers around them.

Every contender of one measurement gets the same kind of storage (`InMemorySaver`, or a
sqlite file of its own). On sqlite a graph gets LangGraph's `AsyncSqliteSaver`, what a
hand-written graph would use, unless its `Storage` names supervisor-graph's
`SqliteCheckpointer` (`saver="sg"`: the floor, so that ours/floor measures the design and
not the saver). The counting subclasses record
each `aput` (one checkpoint) and `aput_writes` (one batch of pending writes) with the
sizes `serde.dumps_typed` gives, which is what the sqlite saver stores.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from supervisor_graph.checkpointers.sqlite import SqliteCheckpointer

__all__ = [
    "Counts",
    "CountingInMemorySaver",
    "CountingSqliteCheckpointer",
    "CountingSqliteSaver",
    "SqliteFootprint",
    "Storage",
    "file_size",
    "open_saver",
    "remove_sqlite",
    "sqlite_footprint",
    "stored_bytes",
]

KINDS = ("memory", "sqlite")


@dataclass
class Counts:
    """What a saver was asked to store."""

    checkpoints: int = 0  # aput calls
    nested_checkpoints: int = 0  # of which in a subgraph namespace (checkpoint_ns != "")
    checkpoint_bytes: int = 0  # dumps_typed(checkpoint) + dumps_typed(metadata)
    write_batches: int = 0  # aput_writes calls
    writes: int = 0  # (channel, value) pairs in them
    write_bytes: int = 0  # dumps_typed(value) of each

    @property
    def total_bytes(self) -> int:
        return self.checkpoint_bytes + self.write_bytes

    def reset(self) -> None:
        for f in fields(self):
            setattr(self, f.name, 0)

    def copy(self) -> Counts:
        return Counts(**{f.name: getattr(self, f.name) for f in fields(self)})


class _CountingMixin:
    """Counts calls and serialized sizes, then defers to the real saver."""

    counts: Counts
    serde: Any

    def _size(self, value: Any) -> int:
        return len(self.serde.dumps_typed(value)[1])

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self._count_checkpoint(config, checkpoint, metadata)
        return await super().aput(config, checkpoint, metadata, new_versions)  # type: ignore[misc,no-any-return]

    def _count_checkpoint(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata) -> None:
        counts = self.counts
        counts.checkpoints += 1
        if (config.get("configurable") or {}).get("checkpoint_ns"):
            counts.nested_checkpoints += 1
        counts.checkpoint_bytes += self._size(checkpoint) + self._size(dict(metadata))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        counts = self.counts
        counts.write_batches += 1
        counts.writes += len(writes)
        counts.write_bytes += sum(self._size(value) for _, value in writes)
        await super().aput_writes(config, writes, task_id, task_path)  # type: ignore[misc]


class CountingInMemorySaver(_CountingMixin, InMemorySaver):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.counts = Counts()


class CountingSqliteSaver(_CountingMixin, AsyncSqliteSaver):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.counts = Counts()


class CountingSqliteCheckpointer(_CountingMixin, SqliteCheckpointer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.counts = Counts()

    async def aput_with_next_write(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        # a checkpoint all the same: stored with the next write instead of a trip of its own
        self._count_checkpoint(config, checkpoint, metadata)
        return await super().aput_with_next_write(config, checkpoint, metadata, new_versions)  # type: ignore[misc,no-any-return]


COUNTING = (CountingInMemorySaver, CountingSqliteSaver, CountingSqliteCheckpointer)


@dataclass(frozen=True)
class Storage:
    """Which saver a contender gets: `kind` is "memory" or "sqlite" (then `path` is its
    file); on sqlite, `saver` is "stock" (`AsyncSqliteSaver`) or "sg" (`SqliteCheckpointer`)."""

    kind: str
    path: Path | None = None
    counting: bool = False
    saver: str = "stock"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"storage kind must be one of {KINDS}, not {self.kind!r}")
        if self.kind == "sqlite" and self.path is None:
            raise ValueError("sqlite storage needs a path")

    @property
    def url(self) -> str:
        """The `Memory(storage=...)` string for this storage."""
        return ":memory:" if self.kind == "memory" else f"file:{self.path}"


async def open_saver(storage: Storage, stack: AsyncExitStack) -> BaseCheckpointSaver:
    """A fresh saver for `storage`; `stack` closes its connection."""
    if storage.kind == "memory":
        return CountingInMemorySaver() if storage.counting else InMemorySaver()
    saver: Any
    if storage.saver == "sg":
        sg = CountingSqliteCheckpointer if storage.counting else SqliteCheckpointer
        saver = await stack.enter_async_context(sg.from_conn_string(str(storage.path)))
    else:
        stock = CountingSqliteSaver if storage.counting else AsyncSqliteSaver
        saver = await stack.enter_async_context(stock.from_conn_string(str(storage.path)))
    await saver.setup()
    return saver  # type: ignore[no-any-return]


def stored_bytes(storage: Storage, thread_id: str | None = None) -> int | None:
    """Bytes of checkpoint blobs, metadata and writes in a sqlite file, for one thread
    (all its namespaces) or all of them (read on a connection of its own); None in memory."""
    if storage.kind != "sqlite" or storage.path is None:
        return None
    where, params = ("WHERE thread_id = ?", (thread_id,)) if thread_id is not None else ("", ())
    conn = sqlite3.connect(storage.path)
    try:
        return sum(
            int(conn.execute(query, params).fetchone()[0])
            for query in (
                f"SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0) FROM checkpoints {where}",
                f"SELECT coalesce(sum(length(value)), 0) FROM writes {where}",
            )
        )
    finally:
        conn.close()


def file_size(path: Path) -> int:
    """Size of a sqlite database with its write-ahead log, if any."""
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if p.exists())


@dataclass(frozen=True)
class SqliteFootprint:
    """A closed sqlite database: its file as left, and after a WAL checkpoint and VACUUM."""

    file_bytes: int  # database file plus write-ahead log, as the savers left them
    compact_bytes: int  # the file after `PRAGMA wal_checkpoint(TRUNCATE)` and `VACUUM`
    checkpoint_bytes: int  # length(checkpoint) + length(metadata) over the `checkpoints` table
    write_bytes: int  # length(value) over the `writes` table
    checkpoints: int  # rows of `checkpoints`
    writes: int  # rows of `writes`

    @property
    def table_bytes(self) -> int:
        return self.checkpoint_bytes + self.write_bytes


def sqlite_footprint(path: Path) -> SqliteFootprint:
    """Measure a database no connection holds open any more (compacts it in place)."""
    raw = file_size(path)
    conn = sqlite3.connect(path)
    try:
        (ckpt_bytes, ckpts), (write_bytes, writes) = (
            conn.execute(query).fetchone()
            for query in (
                "SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0), count(*) FROM checkpoints",
                "SELECT coalesce(sum(length(value)), 0), count(*) FROM writes",
            )
        )
        for statement in ("PRAGMA wal_checkpoint(TRUNCATE)", "VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"):
            conn.execute(statement)  # in WAL mode VACUUM writes to the log: checkpoint again
    finally:
        conn.close()
    return SqliteFootprint(raw, file_size(path), int(ckpt_bytes), int(write_bytes), int(ckpts), int(writes))


def remove_sqlite(path: Path) -> None:
    """Delete a database file and its journals."""
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        p.unlink(missing_ok=True)
