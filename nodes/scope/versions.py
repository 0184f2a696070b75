"""Subagent versions as nodes see them (SPEC §13): which stored version a call selects,
and the fields of the one in force for an agent's run.

Storing and resolving versions is the facade's job (`supervisor_graph.versions`); a run
carries the resolver in its `RunHandle`, shared with its delegations, so each agent's
version is read once per run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["VERSIONS_KEY", "AgentOverride", "VersionResolver", "VersionSelection", "VersionSelector"]

# Where a call's selection travels in the request context (copied at each delegation).
VERSIONS_KEY = "supervisor_graph.versions"
"""The request-context key of a call's `versions=` selection (copied at each delegation)."""

Status = Literal["draft", "published", "archived"]


class VersionSelector(BaseModel):
    """One agent's version: `{"version_id": ...}` or `{"status": "published"}`."""

    model_config = ConfigDict(extra="forbid")

    version_id: str | None = None
    status: Status | None = None

    @model_validator(mode="after")
    def _one(self) -> VersionSelector:
        if (self.version_id is None) == (self.status is None):
            raise ValueError('a version selector names a version_id or a status, e.g. {"status": "published"}')
        return self


class VersionSelection(BaseModel):
    """`versions={"agents": {agent_id: selector}, "default_status": ...}` on a call or in
    `default_options`: keys are agent ids, at any depth (the top-level agent too)."""

    model_config = ConfigDict(extra="forbid")

    agents: dict[str, VersionSelector] = Field(default_factory=dict)
    default_status: Status | None = None

    def selector_for(self, agent_id: str) -> tuple[VersionSelector | None, bool]:
        """The selector for `agent_id`, and whether the call named it (not the default)."""
        named = self.agents.get(agent_id)
        if named is not None:
            return named, True
        if self.default_status is not None:
            return VersionSelector(status=self.default_status), False
        return None, False


@dataclass(frozen=True, slots=True)
class AgentOverride:
    """The fields of a selected version that replace an agent's code definition for a run."""

    version_id: str
    instructions: str | None = None
    chat_model: BaseChatModel | None = None
    max_steps: int | None = None
    tools: frozenset[str] | None = None  # a subset of the agent's own tools


class VersionResolver(Protocol):
    async def resolve(self, agent_id: str) -> AgentOverride | None: ...


def selection_of(value: Any) -> VersionSelection | None:
    if value is None or isinstance(value, VersionSelection):
        return value
    return VersionSelection.model_validate(value)
