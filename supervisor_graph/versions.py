"""Subagent versions (SPEC §13): agent definitions stored in the memory's LangGraph store,
so instructions, model, step limit or tool subset change without a deploy.

`memory.versions` saves, publishes, lists and reads them; a call selects them with
`versions={...}` and `RunVersions` resolves each agent's selection at most once per run.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langgraph.store.base import BaseStore
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from supervisor_graph.models import parse_model_string, resolve_model_string
from supervisor_graph.nodes.versions import AgentOverride, Status, VersionSelection

if TYPE_CHECKING:
    from supervisor_graph.memory import Memory

__all__ = ["VERSIONS_NAMESPACE", "AgentDefinition", "AgentVersion", "RunVersions", "StoreVersions", "Versions", "resolver_for"]

log = logging.getLogger("supervisor_graph")

VERSIONS_NAMESPACE = ("supervisor_graph", "versions")
_LIST_LIMIT = 10_000


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

    async def save(self, agent_id: str, definition: AgentDefinition | dict[str, Any], status: Status = "draft") -> str:
        """Store a new version and return its id. `status="published"` publishes it at
        once (the previous published version is archived).

        Raises:
            ValueError: an unknown field or agent, a bad model string, or tools the code
                agent does not have.
        """
        try:
            checked = AgentDefinition.model_validate(definition)
        except ValidationError as exc:
            raise ValueError(f"invalid version of {agent_id!r}: {exc}") from None
        self._check(agent_id, checked)
        version = AgentVersion(
            version_id=uuid.uuid4().hex,
            agent_id=agent_id,
            status="draft",
            created_at=datetime.now(UTC),
            definition=checked,
        )
        await (await self._store()).aput(
            VERSIONS_NAMESPACE, _key(agent_id, version.version_id), version.model_dump(mode="json"), index=False
        )
        if status == "published":
            await self.publish(agent_id, version.version_id)
        elif status != "draft":
            raise ValueError("a new version is saved as 'draft' or 'published'")
        return version.version_id

    async def publish(self, agent_id: str, version_id: str) -> AgentVersion:
        """Make `version_id` the published version; the previous one becomes archived."""
        store = await self._store()
        target = await self.get(agent_id, version_id=version_id)
        if target is None:
            raise ValueError(f"agent {agent_id!r} has no version {version_id!r}")
        for version in await self.list(agent_id):
            if version.status == "published" and version.version_id != version_id:
                archived = version.model_copy(update={"status": "archived"})
                await store.aput(VERSIONS_NAMESPACE, _key(agent_id, version.version_id), archived.model_dump(mode="json"), index=False)
        published = target.model_copy(update={"status": "published"})
        await store.aput(VERSIONS_NAMESPACE, _key(agent_id, version_id), published.model_dump(mode="json"), index=False)
        return published


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
