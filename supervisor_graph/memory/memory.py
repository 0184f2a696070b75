"""`Memory`: where conversations are kept, and reading them back (SPEC §8)."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncGenerator, Mapping
from contextlib import AsyncExitStack
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.store.base import BaseStore
from pydantic import BaseModel

from supervisor_graph.checkpointers.compat import INTERRUPT_WRITE, namespaced_config
from supervisor_graph.checkpointers.leases import DEFAULT_BUSY_TIMEOUT, DEFAULT_LEASE_TTL
from supervisor_graph.checkpointers.naming import split_thread_id
from supervisor_graph.checkpointers.postgres import PoolOptions
from supervisor_graph.checkpointers.sqlite import Synchronous
from supervisor_graph.checkpointers.threads import ThreadRecord, list_threads, thread_metadata
from supervisor_graph.checkpointers.urls import Storage, describe, is_shared_saver, open_storage
from supervisor_graph.memory.background_records import BACKGROUND_NAMESPACE, BackgroundTask, task_view
from supervisor_graph.memory.lease import ThreadLease
from supervisor_graph.memory.versions import MAX_DEFINITION_BYTES, Versions
from supervisor_graph.nodes.background.tasks import FullState
from supervisor_graph.nodes.steps.working_memory import (
    WORKING_MEMORY_NAMESPACE,
    WorkingMemory,
    apply_update,
    store_key,
)
from supervisor_graph.sync_loop import run_sync

__all__ = ["Memory", "ThreadRecord"]


def _reader() -> Any:
    graph = StateGraph(FullState)
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
    over at once). `sqlite_synchronous` is how a sqlite file commits checkpoints:
    `"normal"` (default; a checkpoint survives the process being killed, a power cut may
    lose the last ones) or `"full"` (an fsync per commit, about 0.3 ms each).

    `pool` sizes the Postgres connection pool that the checkpointer, the store and the
    leases share (`PoolOptions` or its dict: `min_size` 1, `max_size` 10, `timeout` 3 s
    to wait for a free connection, `connect_timeout` 3 s); a broken connection is
    replaced, so the process serves again as soon as its database is back.
    `busy_timeout` is how long (seconds, 30 by default) a sqlite statement waits for a
    file another connection holds locked. A database that cannot be reached (down, no
    connection in time, a file locked beyond the busy wait, a full disk) raises
    `StorageUnavailableError`.

    `working_memory` (SPEC §8) applies to the agents declared with this memory that do not
    declare their own `Agent(working_memory=...)`. `max_version_bytes` caps a stored
    version's definition (`memory.versions.save`, SPEC §13), serialized as JSON: 64 kB
    by default.

    Example:
        >>> memory = Memory(storage=":memory:")
        >>> memory.kind
        'memory'
    """

    def __init__(
        self,
        storage: Any = ":memory:",
        *,
        store: BaseStore | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        sqlite_synchronous: Synchronous = "normal",
        working_memory: WorkingMemory | dict[str, Any] | bool | None = None,
        max_version_bytes: int = MAX_DEFINITION_BYTES,
        pool: PoolOptions | dict[str, Any] | None = None,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> None:
        self.kind = describe(storage)
        self.pool = PoolOptions.model_validate(pool) if isinstance(pool, dict) else pool or PoolOptions()
        if isinstance(busy_timeout, bool) or not isinstance(busy_timeout, (int, float)) or busy_timeout <= 0:
            raise ValueError(f"busy_timeout must be a positive number of seconds, not {busy_timeout!r}")
        self.busy_timeout = float(busy_timeout)
        if isinstance(max_version_bytes, bool) or not isinstance(max_version_bytes, int) or max_version_bytes < 1:
            raise ValueError(f"max_version_bytes must be a positive number of bytes, not {max_version_bytes!r}")
        self.max_version_bytes = max_version_bytes
        if working_memory is True:
            working_memory = WorkingMemory()
        elif working_memory is False:
            working_memory = None
        self.working_memory = (
            WorkingMemory.model_validate(working_memory) if isinstance(working_memory, dict) else working_memory
        )
        # agent id -> working memory of the agents declared with this memory (and their
        # subagents), so get/set_working_memory know each one's scope and schema
        self._agents: dict[str, WorkingMemory] = {}
        # agent id -> the code agent's own tool names (a stored version may only choose among them)
        self._tools: dict[str, frozenset[str]] = {}
        self._versions: Versions | None = None
        self.storage = storage
        if store is not None and self.kind != "saver":
            raise ValueError("Memory(store=...) goes with a checkpointer object; a storage URL opens its own store")
        self.lease_ttl = lease_ttl
        if sqlite_synchronous not in ("normal", "full"):
            raise ValueError(f"sqlite_synchronous must be 'normal' or 'full', not {sqlite_synchronous!r}")
        self.sqlite_synchronous: Synchronous = sqlite_synchronous
        self._store = store
        self._shared: Storage | None = None
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[Storage, AsyncGenerator[None, None]]
        ] = weakref.WeakKeyDictionary()
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
                self._shared = await open_storage(
                    self.storage, AsyncExitStack(), store=self._store, lease_ttl=self.lease_ttl
                )
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
                try:
                    opened = await open_storage(
                        self.storage,
                        stack,
                        lease_ttl=self.lease_ttl,
                        sqlite_synchronous=self.sqlite_synchronous,
                        pool_options=self.pool,
                        busy_timeout=self.busy_timeout,
                    )
                except BaseException:
                    # nothing is kept of a failed opening (a database that was down): the
                    # next call opens afresh
                    await stack.aclose()
                    raise
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

    async def get_messages(self, thread_id: str, checkpoint: str | None = None) -> list[BaseMessage]:
        """The messages stored in a thread (a top-level one, or a `sub_agent_thread_id`),
        as they are now or at `checkpoint` (an id `agent.history` lists)."""
        reader, config = await self._thread_reader(thread_id)
        if checkpoint is not None:
            config = {**config, "configurable": {**config["configurable"], "checkpoint_id": checkpoint}}
        snapshot = await reader.aget_state(config)
        return list(snapshot.values.get("messages") or [])

    # -- working memory (SPEC §8) ---------------------------------------------------

    def register(self, agent: Any) -> None:
        """Learn the working memory of `agent` (declared with this memory) and of its
        subagents; `Agent` calls this."""
        stack = [agent]
        while stack:
            current = stack.pop()
            config = current.working_memory if current is not agent else current.effective_working_memory
            if config is not None:
                self._agents[current.id] = config
            self._tools[current.id] = frozenset(current.tools)
            stack.extend(current.agents.values())

    def agent_ids(self) -> list[str]:
        """Ids of the agents declared with this memory, and of their subagents."""
        return list(self._tools)

    def agent_tools(self, agent_id: str) -> frozenset[str] | None:
        """The own tools of an agent declared with this memory (None: unknown agent)."""
        return self._tools.get(agent_id)

    @property
    def versions(self) -> Versions:
        """Stored versions of the agents declared with this memory (SPEC §13)."""
        if self._versions is None:
            self._versions = Versions(self)
        return self._versions

    def _working(self, agent_id: str | None) -> tuple[str, WorkingMemory]:
        if agent_id is None:
            if len(self._agents) != 1:
                known = ", ".join(sorted(self._agents)) or "none"
                raise ValueError(f"pass agent_id=...: agents with working memory on this memory: {known}")
            agent_id = next(iter(self._agents))
        config = self._agents.get(agent_id)
        if config is None:
            known = ", ".join(sorted(self._agents)) or "none"
            raise ValueError(
                f"agent {agent_id!r} has no working memory on this memory (agents that have one: {known}); "
                "declare Agent(working_memory=...) on an agent built with memory=this Memory"
            )
        return agent_id, config

    @staticmethod
    def _resource(agent_id: str, thread: str | None, resource: str | None) -> str:
        if resource is None and thread is None:
            raise ValueError(
                f"working memory of agent {agent_id!r} is resource-scoped: pass resource=... (or thread=...)"
            )
        # a run without a resource keeps it under its thread id, as this does
        return resource if resource is not None else thread  # type: ignore[return-value]

    async def _thread_reader(self, thread: str) -> tuple[Any, RunnableConfig]:
        saver = await self.checkpointer()
        reader = self._readers.get(saver)
        if reader is None:
            global _READER
            if _READER is None:
                _READER = _reader()
            reader = self._readers[saver] = _READER.copy(update={"checkpointer": saver})
        parent, ns = split_thread_id(thread)
        config: RunnableConfig = {"configurable": {"thread_id": parent, "checkpoint_ns": ns}}
        return reader, namespaced_config(config, saver) if ns else config

    async def get_working_memory(
        self, *, agent_id: str | None = None, thread: str | None = None, resource: str | None = None
    ) -> Any:
        """An agent's working memory (`str` in template mode, `dict` in schema mode; `None`
        when unset). Thread scope reads `thread` (a `sub_agent_thread_id` for a
        subagent); resource scope reads `resource` (`<parent resource>/<key>` for a
        subagent; the thread id when the runs had no resource)."""
        agent_id, config = self._working(agent_id)
        if config.scope == "thread":
            if thread is None:
                raise ValueError(f"working memory of agent {agent_id!r} is thread-scoped: pass thread=...")
            reader, read_config = await self._thread_reader(thread)
            snapshot = await reader.aget_state(read_config)
            return snapshot.values.get("working_memory")
        store = await self.store()
        item = await store.aget(
            WORKING_MEMORY_NAMESPACE, store_key(agent_id, self._resource(agent_id, thread, resource))
        )
        return item.value.get("value") if item is not None else None

    async def set_working_memory(
        self,
        value: Any,
        *,
        agent_id: str | None = None,
        thread: str | None = None,
        resource: str | None = None,
        replace: bool = False,
    ) -> Any:
        """Write an agent's working memory and return the value stored. In schema mode the
        fields given are merged into the stored value, as the model's own updates are
        (`replace=True` stores `value` as the whole value); markdown text replaces the
        text. Validated as the update tool validates it; `None` clears it. A
        thread-scoped write takes the thread like a run does (`ThreadBusyError` while a
        run is on it).

        Raises:
            WorkingMemoryError: the value does not fit the template or the schema.
        """
        agent_id, config = self._working(agent_id)
        merge = not replace and value is not None and config.schema_ is not None
        if merge and isinstance(value, BaseModel):
            value = value.model_dump(mode="json", exclude_unset=True)
        if merge:
            # fields to change, checked as the update tool checks them (`apply_update`,
            # below): unknown keys now, before any read; the merged value once read
            if not isinstance(value, Mapping):
                config.validate_value(value)  # says what the value must be
            config.check_known_keys(value)
            stored = None
        else:
            stored = config.validate_value(value) if value is not None else None
        if config.scope == "resource":
            store = await self.store()
            key = store_key(agent_id, self._resource(agent_id, thread, resource))
            if merge:
                item = await store.aget(WORKING_MEMORY_NAMESPACE, key)
                stored = apply_update(config, (item.value or {}).get("value") if item is not None else None, {"memory": value})
            if stored is None:
                await store.adelete(WORKING_MEMORY_NAMESPACE, key)
            else:
                await store.aput(WORKING_MEMORY_NAMESPACE, key, {"value": stored}, index=False)
            return stored
        if thread is None:
            raise ValueError(f"working memory of agent {agent_id!r} is thread-scoped: pass thread=...")
        parent, ns = split_thread_id(thread)
        lease = ThreadLease((await self.opened()).leases, parent)
        await lease.acquire()
        try:
            reader, write_config = await self._thread_reader(thread)
            saver = await self.checkpointer()
            saved = await saver.aget_tuple({"configurable": {"thread_id": parent, "checkpoint_ns": ""}})
            # a pause anywhere in the run (a delegation's included) is recorded on the thread's
            # own checkpoint; a write now would start a checkpoint without the paused tasks
            if saved is not None and any(write[1] == INTERRUPT_WRITE for write in saved.pending_writes or ()):
                raise ValueError(
                    f"thread {thread!r} waits for answers to paused tool calls; its working memory can be "
                    "written once they are answered"
                )
            # the new checkpoint keeps what the thread's newest one says about it: its owner
            # (resource), agent, parent and the caller's metadata (LangGraph copies a
            # config's metadata onto the checkpoint it writes)
            newest = saved if not ns else await saver.aget_tuple({"configurable": {"thread_id": parent, "checkpoint_ns": ns}})
            if newest is not None:
                write_config = {**write_config, "metadata": thread_metadata(newest.metadata or {})}
            if merge:
                current = (await reader.aget_state(write_config)).values.get("working_memory")
                stored = apply_update(config, current, {"memory": value})
            await reader.aupdate_state(write_config, {"working_memory": stored}, as_node="read")
        finally:
            await lease.release(ran=False)
        return stored

    async def list_background_tasks(self, thread_id: str) -> list[BackgroundTask]:
        """The background tasks a thread's runs started (SPEC §12), oldest first."""
        reader, config = await self._thread_reader(thread_id)
        snapshot = await reader.aget_state(config)
        told: dict[str, Any] = snapshot.values.get("background_tasks") or {}
        store = await self.store()
        tasks = []
        for task_id, record in told.items():
            item = await store.aget(BACKGROUND_NAMESPACE, task_id)
            tasks.append(task_view({"task_id": task_id, **record}, dict(item.value) if item is not None else None))
        return tasks

    def list_threads_sync(self, filter: dict[str, Any] | None = None) -> list[ThreadRecord]:
        return run_sync(self.list_threads(filter))

    def get_messages_sync(self, thread_id: str) -> list[BaseMessage]:
        return run_sync(self.get_messages(thread_id))
