"""What a compiled agent's nodes know about it, fixed at compile time.

The compiler (in `supervisor_graph`) resolves a declaration into an `AgentSpec`: model
bound to its tools once, tool objects by name, delegation tool names, defaults. Nodes
read only this, so per-call work stays proportional to what the call does.

The spec knows no capability: what an agent declares of one (a budget, an output
schema, working memory, guards, compaction, background tasks) is held by that
capability's step (`steps`, SPEC §32), and read with the capability's own accessor
(`budget_of`, `declared_schema`, `working_memory_of`, `guards_of`, ...).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

from supervisor_graph.nodes.options import RunOptions
from supervisor_graph.nodes.scope.context import RequestContext
from supervisor_graph.nodes.scope.versions import AgentOverride
from supervisor_graph.nodes.steps.protocol import NO_STEPS, AnswerShape, Steps

__all__ = ["AgentSpec", "DELEGATION_PREFIX", "maybe_await", "with_refs_parameter"]

DELEGATION_PREFIX = "agent-"

Instructions = str | Callable[[RequestContext], str | Awaitable[str]] | None
ModelFactory = Callable[[RequestContext], BaseChatModel | Awaitable[BaseChatModel]]


async def maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


REFS_PROPERTY = {
    "type": "array",
    "description": (
        "Ids of earlier subagent results ([ref: id]) to pass verbatim before the prompt; "
        'each an id or {"ref": id, "as": label, "note": text}.'
    ),
    "items": {
        "anyOf": [
            {"type": "string"},
            {
                "type": "object",
                "properties": {"ref": {"type": "string"}, "as": {"type": "string"}, "note": {"type": "string"}},
                "required": ["ref"],
            },
        ]
    },
}


def with_refs_parameter(schema: dict[str, Any]) -> dict[str, Any]:
    """A delegation tool schema that also takes `context_from_refs`."""
    function = schema["function"]
    parameters = function["parameters"]
    return {
        **schema,
        "function": {
            **function,
            "parameters": {**parameters, "properties": {**parameters["properties"], "context_from_refs": REFS_PROPERTY}},
        },
    }


@dataclass(slots=True)
class AgentSpec:
    """Compile-time facts about one agent that its nodes act on."""

    agent_id: str
    instructions: Instructions
    # A fixed chat model, or a factory called per run with the request context.
    chat_model: BaseChatModel | None
    model_factory: ModelFactory | None
    # Delegation tool schemas first, then the agent's own tools.
    delegation_schemas: list[dict[str, Any]]
    tools: Mapping[str, BaseTool]
    # "agent-<key>" -> key, and key -> the subagent's id
    delegation_tools: Mapping[str, str]
    subagent_ids: Mapping[str, str]
    defaults: RunOptions
    # tools without `execute`: the caller runs them
    client_tools: frozenset[str] = frozenset()
    retry_policy: Any = None  # the agent's RetryPolicy for its model calls
    agent_name: str = ""  # `Agent.name`, else its id: what traces call it
    # as a subagent, how much of its parent's conversation it sees (an `InheritContext`;
    # None: only its prompt and its own thread; SPEC §25)
    inherit_context: Any = None
    # subagent key -> its `result_preview_tokens`: longer answers reach this agent as a preview and a ref
    preview_tokens: Mapping[str, int] = field(default_factory=dict)
    tracing: bool = True  # False: `Agent(tracing=False)`, no OpenTelemetry spans for its runs
    # the capabilities it declares, as the steps its turn runs (SPEC §32), built by the
    # compiler once; each holds its capability's settings
    steps: Steps = NO_STEPS
    # (selection, the run's store) -> a version resolver, for runs the facade did not
    # prepare (Studio, servers, `graph.ainvoke`); given by the compiler, which knows how
    # versions are stored
    versions_for: Callable[[Any, Any], Any] | None = None
    # (a node's config) -> the LangGraph server hosting background delegations of the run,
    # or None (the graph is not driven by a server); given by the compiler
    server_host_for: Callable[[Any], Any] | None = None
    # (id(model), with refs, tool subset, output schema) -> (model, bound model); holding
    # the model keeps its id from being reused while the entry lives
    _bound: dict[tuple[int, bool, frozenset[str] | None, str], tuple[Any, Runnable[Any, Any]]] = field(
        default_factory=dict
    )

    def bind(
        self,
        model: BaseChatModel,
        with_refs: bool = False,
        only: frozenset[str] | None = None,
        schema: AnswerShape | None = None,
    ) -> Runnable[Any, Any]:
        """`model` bound to this agent's tools (or the subset `only`, a version's) and the
        output schema's way of answering, once per model (binding is not free)."""
        key = (id(model), with_refs, only, schema.key if schema is not None else "")
        entry = self._bound.get(key)
        if entry is not None and entry[0] is model:
            return entry[1]
        delegation = [with_refs_parameter(s) for s in self.delegation_schemas] if with_refs else self.delegation_schemas
        own = self.tools.values() if only is None else [t for name, t in self.tools.items() if name in only]
        schemas: list[Any] = [*delegation, *own]
        schemas.extend(self.steps.tools)  # working memory's update tool, background control's tools
        kwargs: dict[str, Any] = {}
        if schema is not None:  # native structured output, else the final answer tool (SPEC §28)
            schemas, kwargs = schema.binding(model, schemas)
        bound: Runnable[Any, Any]
        if schemas:
            bound = model.bind_tools(schemas, **kwargs)
        else:
            bound = model.bind(**kwargs) if kwargs else model
        if len(self._bound) >= 64:
            self._bound.clear()
        self._bound[key] = (model, bound)
        return bound

    async def resolve_model(
        self,
        request_context: RequestContext,
        with_refs: bool = False,
        override: AgentOverride | None = None,
        schema: AnswerShape | None = None,
    ) -> Runnable[Any, Any]:
        model = override.chat_model if override is not None and override.chat_model is not None else self.chat_model
        if model is None:
            assert self.model_factory is not None
            model = await maybe_await(self.model_factory(request_context))
            if not isinstance(model, BaseChatModel):
                raise TypeError(
                    f"Agent {self.agent_id!r}: the model callable returned {type(model).__name__}; "
                    "it must return a LangChain BaseChatModel"
                )
        only = override.tools if override is not None else None
        return self.bind(model, with_refs and bool(self.delegation_schemas), only, schema)

    async def resolve_instructions(self, request_context: RequestContext, override: AgentOverride | None = None) -> str:
        if override is not None and override.instructions is not None:
            return override.instructions
        if self.instructions is None or isinstance(self.instructions, str):
            return self.instructions or ""
        text = await maybe_await(self.instructions(request_context))
        if not isinstance(text, str):
            raise TypeError(
                f"Agent {self.agent_id!r}: the instructions callable returned "
                f"{type(text).__name__}; it must return a string"
            )
        return text
