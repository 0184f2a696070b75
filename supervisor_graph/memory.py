"""`Memory`: where conversations are kept, and reading them back (SPEC §8)."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.store.base import BaseStore

from supervisor_graph.checkpointers.leases import DEFAULT_LEASE_TTL
from supervisor_graph.checkpointers.naming import split_thread_id
from supervisor_graph.checkpointers.threads import ThreadRecord, list_threads
from supervisor_graph.checkpointers.urls import Storage, describe, is_shared_saver, open_storage
from supervisor_graph.nodes.state import SupervisorState

__all__ = ["Memory", "ThreadRecord"]


def _reader() -> Any:
    graph = StateGraph(SupervisorState)
    graph.add_node("read", lambda state: None)
    graph.add_edge(START, "read")
    return graph.compile()


_READER: Any = None


async def _close_with_loop(stack: AsyncExitStack) -> AsyncGenerator[None, None]:
    """Holds a loop's connections open and closes them when it is closed: by
    `Memory.aclose()`, or by the loop's own shutdown (`asyncio.run` finalises the async
    generators still open), so a program that never closes its memory does not leave
    database threads answering a closed loop."""
    try:
        yield
    finally:
        await stack.aclose()


class Memory:
    """Conversation storage for an agent.

    `storage` is `"file:app.db"` or a path (sqlite through aiosqlite), `":memory:"`,
    `"postgresql://..."` (the `postgres` extra), or any LangGraph checkpointer (with an
    optional `store=`, a LangGraph `BaseStore`; an in-process one otherwise). A URL opens,
    on the same database, the checkpointer, a LangGraph store and the thread leases;
    `lease_ttl` is how long (seconds) a crashed process's lease on a thread blocks it
    when the process ran on another host (on this host a dead process's lease is taken
    over at once).

    Example:
        >>> memory = Memory(storage=":memory:")
        >>> memory.kind
        'memory'
    """

    def __init__(self, storage: Any = ":memory:", *, store: BaseStore | None = None, lease_ttl: float = DEFAULT_LEASE_TTL) -> None:
        self.kind = describe(storage)
        self.storage = storage
        if store is not None and self.kind != "saver":
            raise ValueError("Memory(store=...) goes with a checkpointer object; a storage URL opens its own store")
        self.lease_ttl = lease_ttl
        self._store = store
        self._shared: Storage | None = None
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Storage, AsyncGenerator[None, None]]] = (
            weakref.WeakKeyDictionary()
        )
        # a graph that reads this storage's threads, per checkpointer (messages are deltas
        # that only a graph with the state's channels can replay)
        self._readers: weakref.WeakKeyDictionary[BaseCheckpointSaver, Any] = weakref.WeakKeyDictionary()
        self._opening: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"Memory(storage={self.storage!r})"

    async def opened(self) -> Storage:
        """Checkpointer, store and thread leases for the running event loop (database
        connections belong to one loop)."""
        if is_shared_saver(self.storage):
            if self._shared is None:
                self._shared = await open_storage(self.storage, AsyncExitStack(), store=self._store, lease_ttl=self.lease_ttl)
            return self._shared
        loop = asyncio.get_running_loop()
        entry = self._by_loop.get(loop)
        if entry is not None:
            return entry[0]
        lock = self._opening.setdefault(loop, asyncio.Lock())
        async with lock:
            entry = self._by_loop.get(loop)
            if entry is None:
                stack = AsyncExitStack()
                opened = await open_storage(self.storage, stack, lease_ttl=self.lease_ttl)
                closer = _close_with_loop(stack)
                await closer.__anext__()
                entry = self._by_loop[loop] = (opened, closer)
        return entry[0]

    async def checkpointer(self) -> BaseCheckpointSaver:
        """The checkpointer for the running event loop."""
        return (await self.opened()).saver

    async def store(self) -> BaseStore:
        """The LangGraph store on the same database (sqlite, Postgres, or in-process)."""
        return (await self.opened()).store

    async def aclose(self) -> None:
        """Close this loop's database connection."""
        loop = asyncio.get_running_loop()
        entry = self._by_loop.pop(loop, None)
        if entry is not None:
            await entry[1].aclose()

    async def __aenter__(self) -> Memory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def list_threads(self, filter: dict[str, Any] | None = None) -> list[ThreadRecord]:
        """Threads, top-level and delegation ones: `filter={"metadata": {...}, "resource_id": ...}`."""
        return await list_threads(await self.checkpointer(), filter)

    async def get_messages(self, thread_id: str) -> list[BaseMessage]:
        """The messages stored in a thread (a top-level one, or a `sub_agent_thread_id`)."""
        thread, ns = split_thread_id(thread_id)
        saver = await self.checkpointer()
        reader = self._readers.get(saver)
        if reader is None:
            global _READER
            if _READER is None:
                _READER = _reader()
            reader = self._readers[saver] = _READER.copy(update={"checkpointer": saver})
        snapshot = await reader.aget_state({"configurable": {"thread_id": thread, "checkpoint_ns": ns}})
        return list(snapshot.values.get("messages") or [])

    def list_threads_sync(self, filter: dict[str, Any] | None = None) -> list[ThreadRecord]:
        from supervisor_graph.run import run_sync

        return run_sync(self.list_threads(filter))

    def get_messages_sync(self, thread_id: str) -> list[BaseMessage]:
        from supervisor_graph.run import run_sync

        return run_sync(self.get_messages(thread_id))
