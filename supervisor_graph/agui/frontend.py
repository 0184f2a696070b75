"""Frontend tools: the tools a client lists in `RunAgentInput.tools`.

They become client tools of the top-level agent for that request (tools without
`execute`: a call ends the run with the call pending, for the client to answer). The
agent is copied with them added (`Agent.model_copy` validates the copy again, so a name
clash is refused), and the copies are cached by the tool list: a front end sends the
same list on every request, so a copy is compiled once, not per request.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import ValidationError

from supervisor_graph.agent import Agent

__all__ = ["FrontendTools", "InputError"]

_EMPTY = {"type": "object", "properties": {}}


class InputError(Exception):
    """A request the bridge refuses before running anything."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _client_side(**_: Any) -> Any:
    raise RuntimeError("a frontend tool is run by the client")


def client_tool(name: str, description: str, parameters: Any) -> BaseTool:
    schema = parameters if isinstance(parameters, dict) and parameters.get("type") == "object" else _EMPTY
    return StructuredTool(
        name=name,
        description=description or name,
        args_schema=schema,
        func=_client_side,
        metadata={"client_tool": True, "frontend_tool": True},
    )


class FrontendTools:
    def __init__(self, agent: Agent, size: int = 32) -> None:
        self.agent = agent
        self.size = size
        self._copies: OrderedDict[str, Agent] = OrderedDict()

    def agent_for(self, tools: Sequence[Any] | None) -> tuple[Agent, frozenset[str]]:
        """The agent to run with `tools` added, and their names.

        Raises:
            InputError: a frontend tool has the name of one of the agent's own tools.
        """
        if not tools:
            return self.agent, frozenset()
        names = frozenset(t.name for t in tools)
        key = json.dumps([[t.name, t.description, t.parameters] for t in tools], sort_keys=True, default=str)
        copy = self._copies.get(key)
        if copy is not None:
            self._copies.move_to_end(key)
            return copy, names
        clash = sorted(n for n in names if n in self.agent.tools)
        if clash:
            raise InputError("INVALID_TOOLS", f"Frontend tools {clash} have the names of the agent's own tools; rename them.")
        try:
            copy = self.agent.model_copy(
                update={"tools": {**self.agent.tools, **{t.name: client_tool(t.name, t.description, t.parameters) for t in tools}}}
            )
        except ValueError as exc:
            reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            raise InputError("INVALID_TOOLS", f"The frontend tools cannot be added: {reason}") from None
        self._copies[key] = copy
        if len(self._copies) > self.size:
            self._copies.popitem(last=False)
        return copy, names
