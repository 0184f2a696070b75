"""Looking things up in a declared agent tree by the agent path a chunk carries."""

from __future__ import annotations

from typing import Any

from supervisor_graph.agent import Agent
from supervisor_graph.declaration.remote import RemoteAgent

__all__ = ["AgentTree"]


class AgentTree:
    def __init__(self, root: Agent | RemoteAgent) -> None:
        self.root = root
        self.descriptions: dict[str, str | None] = {}
        stack: list[Any] = [root]
        while stack:
            agent = stack.pop()
            for sub in agent.agents.values():
                self.descriptions.setdefault(sub.id, sub.description)
                stack.append(sub)

    def path(self, agent_path: tuple[str, ...]) -> list[Agent]:
        """The agents along `agent_path` (as far as they are known)."""
        return self.root.agents_along(agent_path)

    def needs_approval(self, agent_path: tuple[str, ...], tool_name: str) -> bool:
        """Whether a call to `tool_name` by the agent at `agent_path` waits for approval
        (the tool's own flag, or `require_tool_approval` anywhere above it)."""
        agents = self.path(agent_path)
        tool = agents[-1].tools.get(tool_name)
        if tool is None or (tool.metadata or {}).get("client_tool"):
            return False
        return bool((tool.metadata or {}).get("require_approval")) or any(a.defaults.require_tool_approval for a in agents)

    def has_working_memory(self, agent_path: tuple[str, ...]) -> bool:
        return self.path(agent_path)[-1].effective_working_memory is not None

    def resume_schema(self, agent_path: tuple[str, ...], tool_name: str) -> dict[str, Any] | None:
        tool = self.path(agent_path)[-1].tools.get(tool_name)
        schema = (tool.metadata or {}).get("resume_schema") if tool is not None else None
        return schema.model_json_schema() if schema is not None else None  # type: ignore[no-any-return]
