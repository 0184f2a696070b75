"""Compile an `Agent` declaration into a LangGraph `StateGraph` (SPEC §4).

Shape (every subagent key `k` gets three nodes):

    START -> supervisor -+- Send -> k.start -> k -> k.complete -+-> supervisor
                         +- Send -> k ------------------------- +
                         +- Send -> tools ----------------------+
                         +-> iteration -> (the same fan-out) / task_complete / END
                         +-> task_complete -> supervisor / END

Hook nodes are on the graph for every delegation edge, but a run passes through one
only when it has that hook, so unused hooks cost no super-step.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict, get_type_hints

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from supervisor_graph.background.server import server_host
from supervisor_graph.compiler.dynamic import SLOT, DynamicNodes
from supervisor_graph.compiler.edits import route_outside_updates
from supervisor_graph.compiler.steps import asks_to_cache, steps_of
from supervisor_graph.compiler.sync_nodes import with_sync_twin
from supervisor_graph.declaration.agent_rules import check_cycles
from supervisor_graph.declaration.fallbacks import FallbackChatModel
from supervisor_graph.declaration.models import check_credentials, model_strings, resolve_model_string
from supervisor_graph.declaration.remote import RemoteAgent, RemoteSubagent
from supervisor_graph.declaration.tools import is_client_tool
from supervisor_graph.memory.versions import resolver_for
from supervisor_graph.nodes.background.control import background_of
from supervisor_graph.nodes.background.tasks import input_schema, state_schema
from supervisor_graph.nodes.delegation.control import inherit_bound, make_complete_node, make_start_node
from supervisor_graph.nodes.delegation.subagent import make_subagent_node
from supervisor_graph.nodes.errors import unwrapping_retry_on
from supervisor_graph.nodes.gates.iteration import make_iteration_node
from supervisor_graph.nodes.gates.task_complete import make_task_complete_node
from supervisor_graph.nodes.guards.core import Guardrail, guards_of
from supervisor_graph.nodes.observability.otel import span_handler
from supervisor_graph.nodes.observability.tracing import agent_metadata
from supervisor_graph.nodes.options import RunContext
from supervisor_graph.nodes.remote.a2a import make_a2a_node
from supervisor_graph.nodes.remote.langgraph import make_remote_node
from supervisor_graph.nodes.spec import DELEGATION_PREFIX, AgentSpec
from supervisor_graph.nodes.steps.compaction import Compactor, compactor_of, with_compaction
from supervisor_graph.nodes.steps.working_memory import working_memory_of
from supervisor_graph.nodes.turn.routing import (
    ITERATION_NODE,
    SUPERVISOR_NODE,
    TASK_COMPLETE_NODE,
    TOOLS_NODE,
    complete_node,
    start_node,
)
from supervisor_graph.nodes.turn.supervisor import make_supervisor_node
from supervisor_graph.nodes.turn.tools import make_tools_node

if TYPE_CHECKING:
    from supervisor_graph.agent import Agent

__all__ = ["add_nodes", "build_spec", "compile_agent", "delegation_tool_schema", "new_builder", "node_table"]


def delegation_tool_schema(key: str, description: str, expose_max_steps: bool = False) -> dict[str, Any]:
    """The tool the supervisor model sees for subagent `key` (SPEC §6.1): the subagent's
    description, once, and a `prompt`; `max_steps` only when the supervisor opts in
    (`Agent(expose_max_steps=True)`: every call resends the schema, issue 51)."""
    properties: dict[str, Any] = {"prompt": {"type": "string"}}
    if expose_max_steps:
        properties["max_steps"] = {"type": "integer", "minimum": 1}
    return {
        "type": "function",
        "function": {
            "name": f"{DELEGATION_PREFIX}{key}",
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": ["prompt"]},
        },
    }


def _lazy_string_model(value: str) -> Any:
    cache: list[Any] = []

    def factory(_request_context: Any) -> Any:
        if not cache:
            cache.append(resolve_model_string(value))
        return cache[0]

    return factory


def _compactor(agent: Agent) -> Compactor | None:
    """The agent's compaction (SPEC §25); a summariser's model string is resolved at the
    first summary (its credentials are checked with the agent's, `model_strings`)."""
    settings = agent.compaction
    if settings is None:
        return None
    summariser = settings.model
    if isinstance(summariser, str):
        return Compactor(settings, agent.id, functools.partial(_lazy_string_model(summariser), None))
    return Compactor(settings, agent.id, summariser)


class Inherited(NamedTuple):
    """What a subagent keeps of its parent's unless it declares its own: the guards
    (`guardrails=`, SPEC §30) and LangChain's middleware (`middleware=`, SPEC §33)."""

    guards: tuple[Guardrail, ...] = ()
    middleware: tuple[Any, ...] = ()

    @classmethod
    def of(cls, spec: AgentSpec) -> Inherited:
        # a middleware step holds its middleware (nodes/steps/middleware.py, imported only when used)
        return cls(guards_of(spec), tuple(m for step in spec.steps.all if (m := getattr(step, "middleware", None)) is not None))


NOTHING_INHERITED = Inherited()  # a top-level agent's


def build_spec(agent: Agent, inherited: Inherited = NOTHING_INHERITED) -> AgentSpec:
    """Resolve a declaration into what its nodes need, once (`inherited`: what it keeps of
    its parent's unless it declares its own)."""
    guards = tuple(agent.guardrails) if agent.guardrails is not None else inherited.guards
    middleware = tuple(agent.middleware) if agent.middleware is not None else inherited.middleware
    tools: dict[str, BaseTool] = dict(agent.tools)
    if middleware:  # LangChain's human-in-the-loop asks through the approvals (imported only when used)
        from supervisor_graph.nodes.steps.middleware import as_approvals

        tools = as_approvals(middleware, tools)
        for mw in middleware:  # a middleware's tools are the agent's (TodoList's `write_todos`)
            tools.update((tool.name, tool) for tool in getattr(mw, "tools", None) or () if tool.name not in tools)
    model: Any = agent.model
    factory = None
    if isinstance(model, str):
        factory, model = _lazy_string_model(model), None
    elif isinstance(model, FallbackChatModel):  # retries model by model as the agent's policy says (SPEC §33)
        model = model.retrying(agent.retry_policy)
    elif not isinstance(model, BaseChatModel):
        factory, model = model, None
    compactor = _compactor(agent)
    delegation_tools = {f"{DELEGATION_PREFIX}{key}": key for key in agent.agents}
    client_tools = frozenset(name for name, tool in tools.items() if is_client_tool(tool))
    spec = AgentSpec(
        agent_id=agent.id,
        instructions=agent.instructions,
        chat_model=model,
        model_factory=factory,
        delegation_schemas=[
            delegation_tool_schema(key, sub.description or "", agent.expose_max_steps) for key, sub in agent.agents.items()
        ],
        tools=tools,
        delegation_tools=delegation_tools,
        subagent_ids={key: sub.id for key, sub in agent.agents.items()},
        defaults=agent.defaults,
        client_tools=client_tools,
        retry_policy=agent.retry_policy,
        agent_name=agent.name or agent.id,
        inherit_context=inherit_bound(agent.inherit_context),
        preview_tokens={
            key: sub.result_preview_tokens
            for key, sub in agent.agents.items()
            if not isinstance(sub, RemoteSubagent) and sub.result_preview_tokens is not None
        },
        tracing=agent.tracing,
        steps=steps_of(
            agent.id,
            delegation_tools,
            server_host,
            compactor=compactor,
            working_memory=agent.effective_working_memory,
            background=agent.background_settings,
            budget=agent.budget,
            output_schema=agent.output_schema,
            guards=guards,
            runs_tools=len(client_tools) < len(tools),
            middleware=middleware,
            prompt_cache=agent.prompt_cache and asks_to_cache(agent.model),
        ),
        versions_for=resolver_for,
        server_host_for=server_host,
    )
    if model is not None:
        spec.bind(model)  # bind at compile time, not on the first call
    return spec


def node_table(agent: Agent, spec: AgentSpec) -> dict[str, Any]:
    """Every node function of `agent`'s graph, by node name."""
    table: dict[str, Any] = {
        SUPERVISOR_NODE: make_supervisor_node(spec),
        TOOLS_NODE: make_tools_node(spec),
        ITERATION_NODE: make_iteration_node(spec),
        TASK_COMPLETE_NODE: make_task_complete_node(spec),
    }
    per_parent = agent.subagent_threads == "per_parent_thread"
    for key, sub in agent.agents.items():
        table[start_node(key)] = make_start_node(spec, key, sub.id)
        if isinstance(sub, RemoteAgent):
            table[key] = make_remote_node(spec, key, sub.spec())
        elif isinstance(sub, RemoteSubagent):  # an A2AAgent
            table[key] = make_a2a_node(spec, key, sub.spec())
        else:
            sub_graph, sub_spec = _build(sub, checkpointer=True if per_parent else None, store=None, inherited=Inherited.of(spec))
            table[key] = make_subagent_node(spec, key, sub_spec, sub_graph, per_parent_thread=per_parent)
        table[complete_node(key)] = make_complete_node(spec, key, sub.id)
    return table


def new_builder(agent: Agent, spec: AgentSpec) -> Any:
    """An empty `StateGraph` with `agent`'s state: extra channels only for the features it
    uses (thread-scoped working memory, background delegations)."""
    in_state = (memory := working_memory_of(spec)) is not None and memory.scope == "thread"
    background = background_of(spec) is not None
    schema = with_step_keys(with_compaction(state_schema(in_state, background), compactor_of(spec)), spec.steps.state_keys)
    return StateGraph(
        schema,
        input_schema=input_schema(in_state, background),
        context_schema=RunContext,
    )


def with_step_keys(schema: type, keys: Mapping[str, Any]) -> type:
    """`schema` with the state channels the agent's steps bring that it lacks (a LangChain
    middleware's `state_schema`); itself when there are none."""
    hints = get_type_hints(schema, include_extras=True)
    extra = {key: kind for key, kind in keys.items() if key not in hints}
    if not extra:
        return schema
    return TypedDict(f"{schema.__name__}WithSteps", {**hints, **extra}, total=False)  # type: ignore[operator,no-any-return]


def add_nodes(builder: Any, agent: Agent, spec: AgentSpec, table: dict[str, Any], keys: list[str]) -> None:
    """Add the nodes of `table` to `builder`, with subagent keys `keys` as fan-out targets;
    each with a sync twin (supervisor_graph/sync_nodes.py), so sync drivers work too."""
    table = {name: with_sync_twin(name, fn) for name, fn in table.items()}
    in_state = (memory := working_memory_of(spec)) is not None and memory.scope == "thread"
    background = background_of(spec) is not None
    fan_out = (TOOLS_NODE, *keys, *(start_node(k) for k in keys))
    builder.add_node(
        SUPERVISOR_NODE,
        table[SUPERVISOR_NODE],
        # a node reads the channels of its annotated state type unless told otherwise
        input_schema=with_compaction(state_schema(in_state, background), compactor_of(spec))
        if in_state or background or compactor_of(spec) is not None
        else None,
        # the node raises ModelCallError around the provider's exception: judge the latter
        retry_policy=agent.retry_policy._replace(retry_on=unwrapping_retry_on(agent.retry_policy.retry_on))
        if agent.retry_policy is not None
        else None,
        destinations=(*fan_out, SUPERVISOR_NODE, ITERATION_NODE, TASK_COMPLETE_NODE, END),
    )
    builder.add_node(TOOLS_NODE, table[TOOLS_NODE], destinations=(SUPERVISOR_NODE,))
    for key in keys:
        builder.add_node(start_node(key), table[start_node(key)], destinations=(key, SUPERVISOR_NODE))
        builder.add_node(key, table[key], destinations=(complete_node(key), SUPERVISOR_NODE))
        builder.add_node(complete_node(key), table[complete_node(key)], destinations=(SUPERVISOR_NODE,))
    builder.add_node(
        ITERATION_NODE,
        table[ITERATION_NODE],
        destinations=(*fan_out, SUPERVISOR_NODE, TASK_COMPLETE_NODE, END),
    )
    builder.add_node(TASK_COMPLETE_NODE, table[TASK_COMPLETE_NODE], destinations=(SUPERVISOR_NODE, END))
    builder.add_edge(START, SUPERVISOR_NODE)


def _build(agent: Agent, *, checkpointer: Any, store: Any, inherited: Inherited = NOTHING_INHERITED) -> tuple[Any, AgentSpec]:
    spec = build_spec(agent, inherited)
    builder = new_builder(agent, spec)
    add_nodes(builder, agent, spec, node_table(agent, spec), list(agent.agents))
    return _identified(agent, _compiled(builder, agent, spec, list(agent.agents), checkpointer, store)), spec


def _build_dynamic(agent: Agent, *, checkpointer: Any, store: Any) -> Any:
    """The graph of an agent whose subagents are chosen per run (compiler/dynamic.py)."""
    spec = build_spec(agent)
    dynamic = DynamicNodes(agent, spec, node_table, build_spec)
    names = [SUPERVISOR_NODE, TOOLS_NODE, ITERATION_NODE, TASK_COMPLETE_NODE, start_node(SLOT), SLOT, complete_node(SLOT)]
    builder = new_builder(agent, spec)
    add_nodes(builder, agent, spec, {name: dynamic.node(name) for name in names}, [SLOT])
    return _identified(agent, _compiled(builder, agent, spec, [SLOT], checkpointer, store))


def _compiled(builder: Any, agent: Agent, spec: AgentSpec, keys: list[str], checkpointer: Any, store: Any) -> CompiledStateGraph:
    """The compiled graph, with its routes after state written from outside (`edits`)."""
    graph = builder.compile(checkpointer=checkpointer, store=store, name=agent.id)
    route_outside_updates(graph, spec, [TOOLS_NODE, *keys, *(complete_node(key) for key in keys)])
    return graph


def _identified(agent: Agent, graph: CompiledStateGraph) -> CompiledStateGraph:
    """The graph with the agent's identity in its runs' metadata (SPEC §24), and the
    OpenTelemetry span handler when a tracer provider is configured. A delegation's
    config names the subagent over this when the graph runs as a subgraph."""
    config: dict[str, Any] = {"metadata": agent_metadata(agent.id, agent.name, (agent.id,), agent.tracing)}
    handler = span_handler() if agent.tracing else None
    if handler is not None:
        config["callbacks"] = [handler]
    return graph.with_config(config)  # type: ignore[arg-type]


def compile_agent(agent: Agent, checkpointer: Any = None, store: Any = None, *, check_models: bool = True) -> CompiledStateGraph:
    """`agent` as a LangGraph `CompiledStateGraph`.

    Subagents become subgraphs that inherit this graph's checkpointer (or the one LangGraph
    Platform supplies), each delegation in a namespace of its own. `check_models=False`
    skips the credentials check of model strings (drawing the graph calls no model).
    """
    check_cycles(agent)  # the tree may have been changed after construction
    for value in model_strings(agent) if check_models else ():
        check_credentials(value)  # a clear error now, not a traceback at the first model call
    if agent.agents_factory is not None:
        return _build_dynamic(agent, checkpointer=checkpointer, store=store)
    graph, _ = _build(agent, checkpointer=checkpointer, store=store)
    return graph
