"""Subagent versions (SPEC §13): agent definitions stored in the memory's LangGraph store,
so instructions, model, step limit or tool subset change without a deploy.

`memory.versions` saves, publishes, lists and reads them; a call selects them with
`versions={...}` and `RunVersions` resolves each agent's selection at most once per run.

One published version per agent, whoever publishes (SPEC §19 "Consistent writes outside
runs"). LangGraph's `BaseStore` has no transaction or compare-and-set a caller can use,
so a publish reads the agent's versions and writes the changes while holding a lock
row: the lease `versions:<agent id>` in the memory's thread-lease table
(`checkpointers/leases.py`; one atomic `INSERT ... ON CONFLICT` on sqlite and Postgres,
so it holds across processes sharing the database; in-process for `":memory:"` and for a
checkpointer object). A publish that finds it held waits for it; one left by a dead
process is taken over like a thread's. Its writes (the new published version and the
archived ones) go in one store batch: one transaction on sqlite, one `INSERT` on
Postgres, so a crash mid-publish leaves the old state or the new one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langgraph.store.base import BaseStore, PutOp
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from supervisor_graph.declaration.errors import ThreadBusyError
from supervisor_graph.declaration.models import parse_model_string, resolve_model_string
from supervisor_graph.memory.lease import ThreadLease
from supervisor_graph.nodes.scope.versions import AgentOverride, Status, VersionSelection

if TYPE_CHECKING:
    from supervisor_graph.memory.memory import Memory

__all__ = ["MAX_DEFINITION_BYTES", "VERSIONS_NAMESPACE", "AgentDefinition", "AgentVersion", "RunVersions", "StoreVersions", "Versions", "resolver_for"]

log = logging.getLogger("supervisor_graph")

VERSIONS_NAMESPACE = ("supervisor_graph", "versions")
_LIST_LIMIT = 10_000
# the largest definition `save` stores (its JSON, UTF-8): it becomes a system prompt on
# every run that selects it (SPEC §19 "Serving safely"); `Memory(max_version_bytes=...)`
MAX_DEFINITION_BYTES = 64 * 1024
# how long a publish waits for another publish of the same agent beyond the lease ttl
# (a lock left by a process that died on another host frees itself after the ttl)
_LOCK_PATIENCE = 10.0


class AgentDefinition(BaseModel):
    """The fields a version may set; each replaces the code definition's when set."""

    model_config = ConfigDict(extra="forbid")

    instructions: str | None = None
    model: str | None = Field(default=None, description="A 'provider/model' string (SPEC §3).")
    max_steps: int | None = Field(default=None, ge=1, strict=True)
    tools: list[str] | None = Field(default=None, description="A subset of the code agent's own tools.")

    @field_validator("model")
    @classmethod
    def _model_string(cls, value: str | None) -> str | None:
        if value is not None:
            parse_model_string(value)
        return value


class AgentVersion(BaseModel):
    """One stored version."""

    version_id: str
    agent_id: str
    status: Status
    created_at: datetime
    definition: AgentDefinition


def _key(agent_id: str, version_id: str) -> str:
    # store namespace labels may not hold every character an agent id can; keys may
    return json.dumps([agent_id, version_id])


class StoreVersions:
    """Reading stored versions from a LangGraph store: `memory.versions` reads through it,
    and so does a run the facade did not prepare (Studio, servers, `graph.ainvoke`),
    from the run's own store."""

    def __init__(self, store: BaseStore) -> None:
        self.store = store

    async def _store(self) -> BaseStore:
        return self.store

    async def list(self, agent_id: str) -> list[AgentVersion]:
        """The agent's versions, newest first."""
        items = await (await self._store()).asearch(VERSIONS_NAMESPACE, filter={"agent_id": agent_id}, limit=_LIST_LIMIT)
        versions = [AgentVersion.model_validate(item.value) for item in items]
        return sorted(versions, key=lambda v: v.created_at, reverse=True)

    async def get(self, agent_id: str, *, version_id: str | None = None, status: Status | None = None) -> AgentVersion | None:
        """One version, by id or by status (the newest with it); None when there is none."""
        if (version_id is None) == (status is None):
            raise ValueError("pass version_id=... or status=...")
        if version_id is not None:
            item = await (await self._store()).aget(VERSIONS_NAMESPACE, _key(agent_id, version_id))
            return AgentVersion.model_validate(item.value) if item is not None else None
        return next((v for v in await self.list(agent_id) if v.status == status), None)


def resolver_for(selection: VersionSelection, store: BaseStore | None) -> RunVersions:
    """A run's version resolver over `store` (no store: every selector logs and code runs)."""
    return RunVersions(selection, StoreVersions(store) if store is not None else None)


class Versions(StoreVersions):
    """`memory.versions`: versions of the agents declared with this memory."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    async def _store(self) -> BaseStore:
        return await self._memory.store()

    def _check(self, agent_id: str, definition: AgentDefinition) -> None:
        tools = self._memory.agent_tools(agent_id)
        if tools is None:
            known = ", ".join(sorted(self._memory.agent_ids())) or "none"
            raise ValueError(f"agent {agent_id!r} is not declared with this memory (agents: {known})")
        extra = sorted(set(definition.tools or ()) - tools)
        if extra:
            raise ValueError(
                f"version of {agent_id!r} names tools the code agent does not have: {', '.join(extra)} "
                f"(its tools: {', '.join(sorted(tools)) or 'none'}); a version can only choose among them"
            )

    def _size(self, agent_id: str, definition: AgentDefinition) -> None:
        limit = self._memory.max_version_bytes
        size = len(definition.model_dump_json(exclude_none=True).encode("utf-8"))
        if size > limit:
            raise ValueError(
                f"version of {agent_id!r} is {size:,} bytes serialized; the limit is {limit:,} bytes "
                "(Memory(max_version_bytes=...)): shorten its instructions or raise the limit"
            )

    async def save(self, agent_id: str, definition: AgentDefinition | dict[str, Any], status: Status = "draft") -> str:
        """Store a new version and return its id. `status="published"` publishes it at
        once (the previous published version is archived). Everything is checked before
        anything is written: a refused save stores nothing.

        Raises:
            ValueError: a status other than draft or published, an unknown field or
                agent, a bad model string, tools the code agent does not have, or a
                definition over `Memory(max_version_bytes=...)`.
        """
        if status not in ("draft", "published"):
            raise ValueError(f"a new version is saved as 'draft' or 'published', not {status!r}")
        try:
            checked = AgentDefinition.model_validate(definition)
        except ValidationError as exc:
            raise ValueError(f"invalid version of {agent_id!r}: {exc}") from None
        self._check(agent_id, checked)
        self._size(agent_id, checked)
        version = AgentVersion(
            version_id=uuid.uuid4().hex,
            agent_id=agent_id,
            status=status,
            created_at=datetime.now(UTC),
            definition=checked,
        )
        if status == "draft":
            await self._write([version])
        else:
            async with self._publishing(agent_id):
                await self._write([version, *self._archived(await self.list(agent_id), version.version_id)])
        return version.version_id

    async def publish(self, agent_id: str, version_id: str) -> AgentVersion:
        """Make `version_id` the published version; the previous one becomes archived.
        Concurrent publishes (any process on the database) follow one another, so
        exactly one version is published afterwards (module docstring)."""
        async with self._publishing(agent_id):
            versions = await self.list(agent_id)
            target = next((v for v in versions if v.version_id == version_id), None)
            if target is None:
                raise ValueError(f"agent {agent_id!r} has no version {version_id!r}")
            published = target.model_copy(update={"status": "published"})
            # every other published one, not only the newest: a lock lost to an expired
            # lease (a publish stalled past the ttl) leaves no second published version behind
            await self._write([published, *self._archived(versions, version_id)])
        return published

    @staticmethod
    def _archived(versions: list[AgentVersion], keep: str) -> list[AgentVersion]:
        return [
            v.model_copy(update={"status": "archived"})
            for v in versions
            if v.status == "published" and v.version_id != keep
        ]

    async def _write(self, versions: list[AgentVersion]) -> None:
        """Store `versions` in one batch (one transaction on sqlite, one statement on Postgres)."""
        await (await self._store()).abatch(
            [PutOp(VERSIONS_NAMESPACE, _key(v.agent_id, v.version_id), v.model_dump(mode="json"), index=False) for v in versions]
        )

    @asynccontextmanager
    async def _publishing(self, agent_id: str) -> AsyncIterator[None]:
        """Hold the agent's publish lock (module docstring), waiting while another holds it."""
        leases = (await self._memory.opened()).leases
        lock = ThreadLease(leases, f"versions:{agent_id}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + leases.ttl + _LOCK_PATIENCE
        delay = 0.002
        while True:
            try:
                await lock.acquire()
                break
            except ThreadBusyError:
                if loop.time() >= deadline:
                    raise TimeoutError(
                        f"another publish of agent {agent_id!r} held its lock for over "
                        f"{leases.ttl + _LOCK_PATIENCE:.0f}s; try again"
                    ) from None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.05)
        try:
            yield
        finally:
            await lock.release()


class RunVersions:
    """One run's version resolver: each agent's selection is read once, when the agent
    first runs, and kept for the run (its delegations share it)."""

    def __init__(self, selection: VersionSelection, versions: StoreVersions | None) -> None:
        self.selection = selection
        self.versions = versions
        self._resolved: dict[str, AgentOverride | None] = {}

    async def resolve(self, agent_id: str) -> AgentOverride | None:
        if agent_id in self._resolved:
            return self._resolved[agent_id]
        selector, named = self.selection.selector_for(agent_id)
        override = None
        if selector is not None:
            override = await self._read(agent_id, selector.version_id, selector.status, named)
        self._resolved[agent_id] = override
        return override

    async def _read(self, agent_id: str, version_id: str | None, status: Status | None, named: bool) -> AgentOverride | None:
        wanted = f"version_id={version_id!r}" if version_id is not None else f"status={status!r}"
        if self.versions is None:
            log.warning("versions: agent %r selects %s, but the agent has no memory to store versions in; "
                        "running its code definition", agent_id, wanted)
            return None
        try:
            found = await self.versions.get(agent_id, version_id=version_id, status=status)
            if found is None:
                if named:  # a default status that finds nothing is the common case: code runs
                    log.warning("versions: no version of agent %r with %s; running its code definition", agent_id, wanted)
                return None
            definition = found.definition
            return AgentOverride(
                version_id=found.version_id,
                instructions=definition.instructions,
                chat_model=resolve_model_string(definition.model) if definition.model else None,
                max_steps=definition.max_steps,
                tools=frozenset(definition.tools) if definition.tools is not None else None,
            )
        except Exception as exc:  # noqa: BLE001 - an unreachable store or a model without its key: code runs
            log.warning(
                "versions: the version of agent %r with %s could not be used (%s); running its code definition",
                agent_id,
                wanted,
                type(exc).__name__,
            )
            return None
