"""Checkpointers from storage URLs: sqlite (aiosqlite), in-memory, Postgres."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from supervisor_graph.checkpointers.delta_cache import with_delta_cache

__all__ = ["describe", "is_shared_saver", "open_saver"]


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
        await postgres.setup()
        return postgres
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = str(storage) if isinstance(storage, Path) else _sqlite_path(storage)
    assert path is not None
    if path != ":memory:":
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
    target = str(Path(path).expanduser()) if path != ":memory:" else path
    saver_class: Any = with_delta_cache(AsyncSqliteSaver, compact_versions=True)
    sqlite = await stack.enter_async_context(saver_class.from_conn_string(target))
    await sqlite.setup()
    return sqlite
