"""What a compiled agent's nodes know about it, fixed at compile time.

The compiler (in `supervisor_graph`) resolves a declaration into an `AgentSpec`: model
bound to its tools once, tool objects by name, delegation tool names, defaults. Nodes
read only this, so per-call work stays proportional to what the call does.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

from nodes.context import RequestContext
from nodes.options import RunOptions

__all__ = ["AgentSpec", "DELEGATION_PREFIX", "maybe_await"]

DELEGATION_PREFIX = "agent-"

Instructions = str | Callable[[RequestContext], str | Awaitable[str]] | None
ModelFactory = Callable[[RequestContext], BaseChatModel | Awaitable[BaseChatModel]]


async def maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


@dataclass(slots=True)
class AgentSpec:
    """Compile-time facts about one agent that its nodes act on."""

    agent_id: str
    instructions: Instructions
    # The model already bound to every tool schema (static models), or a factory called
    # per run with the request context (dynamic models), bound on first use and cached.
    model: Runnable[Any, Any] | None
    model_factory: ModelFactory | None
    tool_schemas: list[dict[str, Any]]
    tools: Mapping[str, BaseTool]
    # "agent-<key>" -> key, and key -> the subagent's id
    delegation_tools: Mapping[str, str]
    subagent_ids: Mapping[str, str]
    defaults: RunOptions
    approval_tools: frozenset[str] = frozenset()
    # id(model) -> (model, bound model); holding the model keeps its id from being reused
    _bound: dict[int, tuple[Any, Runnable[Any, Any]]] = field(default_factory=dict)

    async def resolve_model(self, request_context: RequestContext) -> Runnable[Any, Any]:
        if self.model is not None:
            return self.model
        assert self.model_factory is not None
        model = await maybe_await(self.model_factory(request_context))
        if not isinstance(model, BaseChatModel):
            raise TypeError(
                f"Agent {self.agent_id!r}: the model callable returned {type(model).__name__}; "
                "it must return a LangChain BaseChatModel"
            )
        entry = self._bound.get(id(model))
        if entry is not None and entry[0] is model:
            return entry[1]
        bound = model.bind_tools(self.tool_schemas) if self.tool_schemas else model
        if len(self._bound) >= 64:
            self._bound.clear()
        self._bound[id(model)] = (model, bound)
        return bound

    async def resolve_instructions(self, request_context: RequestContext) -> str:
        if self.instructions is None or isinstance(self.instructions, str):
            return self.instructions or ""
        text = await maybe_await(self.instructions(request_context))
        if not isinstance(text, str):
            raise TypeError(
                f"Agent {self.agent_id!r}: the instructions callable returned "
                f"{type(text).__name__}; it must return a string"
            )
        return text
