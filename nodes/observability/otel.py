"""OpenTelemetry spans following the GenAI agent conventions (SPEC §24), made from the
LangChain runs of a graph: `invoke_agent <name>` for each run of an agent (the top agent
and each delegation, nested), `execute_tool <name>` for each tool call, the agent's
token usage and what it cost in USD (`supervisor_graph.usage.cost_usd`, SPEC §33) on its
span, and an error status naming the error type only.

A callback handler rather than spans opened in the nodes, because an agent's run spans
several graph steps (and, for a delegation that pauses, several node tasks); LangChain
already reports where each run starts and ends, whichever driver runs the graph. An
agent's run is recognised by its metadata (`nodes/observability/tracing.py`): the first run whose
`agent_path` differs from its parent's. Without `opentelemetry-api` installed, or with
no tracer provider configured, nothing is attached at all (`span_handler()` is None)."""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from supervisor_graph.nodes.observability.cost import ByModel, add_call, model_key, price_models
from supervisor_graph.nodes.observability.tracing import AGENT_ID_KEY, AGENT_NAME_KEY, AGENT_PATH_KEY_META, TRACING_KEY

__all__ = ["COST_ATTRIBUTE", "AgentSpanHandler", "guard_span", "span_handler", "traceparent_headers"]

# the agent span's attribute for what its own model calls cost, in USD
COST_ATTRIBUTE = "supervisor_graph.usage.cost_usd"

_RECENT = 4096  # ended runs remembered, so a background task started by one can nest under it


@dataclass(slots=True)
class _Run:
    parent: UUID | None
    agent_path: str | None
    span: Any = None  # this run's own span (an agent or a tool), if it has one
    agent: Any = None  # the span of the agent whose run this is (for usage)
    nearest: Any = None  # the nearest span at or above this run
    usage: list[int] = field(default_factory=lambda: [0, 0])  # an agent span's input, output tokens
    models: ByModel | None = None  # the same by model (once it has some), priced when the span ends
    traced: bool = True


class AgentSpanHandler(BaseCallbackHandler):
    """Maps LangChain runs to GenAI agent spans; one per process, shared by every graph."""

    run_inline = True  # in the event loop, in order: a span's parent is known when it starts
    ignore_custom_event = True  # spans need no custom events: a run it traces dispatches none for it

    def __init__(self, tracer: Any) -> None:
        self._tracer = tracer
        self._runs: dict[UUID, _Run] = {}
        self._ended: OrderedDict[str, Any] = OrderedDict()  # run id -> nearest span, after its end

    # -- where a span starts --------------------------------------------------------------

    def _parent(self, parent_run_id: UUID | None) -> _Run | None:
        if parent_run_id is not None and parent_run_id in self._runs:
            return self._runs[parent_run_id]
        return None

    def _start(self, name: str, parent: Any, attributes: dict[str, Any]) -> Any:
        from opentelemetry import trace

        context = trace.set_span_in_context(parent) if parent is not None else None
        return self._tracer.start_span(name, context=context, kind=trace.SpanKind.INTERNAL, attributes=attributes)

    def _launched_by(self, metadata: dict[str, Any] | None) -> Any:
        """A background task's root run: the span of the run that started it."""
        started_by = (metadata or {}).get("parent_run_id")
        if not started_by:
            return None
        run = next((r for rid, r in self._runs.items() if str(rid) == started_by), None)
        return run.nearest if run is not None else self._ended.get(started_by)

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        parent = self._parent(parent_run_id)
        path = (metadata or {}).get(AGENT_PATH_KEY_META)
        traced = (metadata or {}).get(TRACING_KEY, True) is not False
        run = _Run(parent_run_id, path, traced=traced)
        if parent is not None:
            run.agent, run.nearest = parent.agent, parent.nearest
        if path and traced and (parent is None or parent.agent_path != path):
            meta = metadata or {}
            name = meta.get(AGENT_NAME_KEY) or meta.get(AGENT_ID_KEY) or kwargs.get("name") or "agent"
            attributes = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.id": meta.get(AGENT_ID_KEY) or name,
                "gen_ai.agent.name": name,
            }
            conversation = meta.get("sub_agent_thread_id") or meta.get("thread_id")
            if conversation:
                attributes["gen_ai.conversation.id"] = str(conversation)
            if meta.get("tool_call_id"):
                attributes["gen_ai.tool.call.id"] = meta["tool_call_id"]
            above = parent.nearest if parent is not None else self._launched_by(meta)
            run.span = run.agent = run.nearest = self._start(f"invoke_agent {name}", above, attributes)
        self._runs[run_id] = run

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        parent = self._parent(parent_run_id)
        run = _Run(parent_run_id, parent.agent_path if parent is not None else None)
        if parent is not None:
            run.agent, run.nearest, run.traced = parent.agent, parent.nearest, parent.traced
        if run.traced and (parent is not None or (metadata or {}).get(AGENT_PATH_KEY_META)):
            name = kwargs.get("name") or (serialized or {}).get("name") or "tool"
            attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
            if kwargs.get("tool_call_id"):
                attributes["gen_ai.tool.call.id"] = kwargs["tool_call_id"]
            run.span = run.nearest = self._start(f"execute_tool {name}", run.nearest, attributes)
        self._runs[run_id] = run

    def on_chat_model_start(
        self, serialized: dict[str, Any] | None, messages: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self._child(run_id, parent_run_id)

    def on_llm_start(
        self, serialized: dict[str, Any] | None, prompts: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self._child(run_id, parent_run_id)

    def on_retriever_start(
        self, serialized: dict[str, Any] | None, query: str, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self._child(run_id, parent_run_id)

    def _child(self, run_id: UUID, parent_run_id: UUID | None) -> None:
        parent = self._runs.get(parent_run_id) if parent_run_id is not None else None
        run = _Run(parent_run_id, parent.agent_path if parent is not None else None)
        if parent is not None:
            run.agent, run.nearest, run.traced = parent.agent, parent.nearest, parent.traced
        self._runs[run_id] = run

    # -- where it ends --------------------------------------------------------------------

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        run = self._runs.pop(run_id, None)
        if run is None or run.agent is None or not run.traced:
            return  # an untraced agent's tokens are its own, not its parent's
        owner = self._agent_run(run)
        if owner is None:
            return
        for generations in getattr(response, "generations", None) or ():
            for generation in generations:
                message = getattr(generation, "message", None)
                usage = getattr(message, "usage_metadata", None) or {}
                owner.usage[0] += int(usage.get("input_tokens") or 0)
                owner.usage[1] += int(usage.get("output_tokens") or 0)
                if usage:
                    if owner.models is None:
                        owner.models = {}
                    add_call(owner.models, model_key(message), usage)

    def _agent_run(self, run: _Run) -> _Run | None:
        """The run that owns the agent span `run` reports to."""
        current: _Run | None = run
        while current is not None and current.span is not run.agent:
            current = self._runs.get(current.parent) if current.parent is not None else None
        return current

    def _end(self, run_id: UUID, error: BaseException | None = None) -> None:
        run = self._runs.pop(run_id, None)
        if run is None:
            return
        self._ended[str(run_id)] = run.nearest
        if len(self._ended) > _RECENT:
            self._ended.popitem(last=False)
        if run.span is None:
            return
        from opentelemetry.trace import Status, StatusCode

        if run.span is run.agent:
            run.span.set_attribute("gen_ai.usage.input_tokens", run.usage[0])
            run.span.set_attribute("gen_ai.usage.output_tokens", run.usage[1])
            # no GenAI convention names a cost yet (SPEC §33): ours, in USD, left out when unknown
            cost = price_models(run.models or {})
            if cost is not None:
                run.span.set_attribute(COST_ATTRIBUTE, cost)
        if error is not None:
            # the type only: a provider's message may hold the user's data
            run.span.set_attribute("error.type", type(error).__name__)
            run.span.set_status(Status(StatusCode.ERROR, type(error).__name__))
        run.span.end()

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, None if _is_control_flow(error) else error)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, None if _is_control_flow(error) else error)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._runs.pop(run_id, None)

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._runs.pop(run_id, None)

    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._runs.pop(run_id, None)

    # -- guards -------------------------------------------------------------------------------

    def guard(self, run_id: UUID | None, attributes: dict[str, Any]) -> None:
        """A guard's verdict as a span of its own under the span around run `run_id` (the
        agent's, or the tool's it checks), started and ended at once (SPEC §30)."""
        run = self._runs.get(run_id) if run_id is not None else None
        if run is None or not run.traced:
            return
        name = f"guard {attributes.get('guard.name', '')}".strip()
        self._start(name, run.nearest, {"gen_ai.operation.name": "guard", **attributes}).end()

    # -- remote subagents --------------------------------------------------------------------

    def headers_for(self, run_id: UUID | None) -> dict[str, str]:
        """W3C `traceparent` (and `tracestate`) of the span around run `run_id`."""
        run = self._runs.get(run_id) if run_id is not None else None
        if run is None or run.nearest is None:
            return {}
        from opentelemetry import propagate, trace

        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(run.nearest))
        return carrier


def _is_control_flow(error: BaseException) -> bool:
    """A pause or a handoff (LangGraph's `GraphBubbleUp`) ends a run without failing it."""
    return any(cls.__name__ in ("GraphBubbleUp", "GraphInterrupt", "ParentCommand") for cls in type(error).__mro__)


_handler: AgentSpanHandler | None = None


def span_handler() -> AgentSpanHandler | None:
    """The process's span handler, when `opentelemetry-api` is importable and a tracer
    provider is configured (the default proxy provider, or OTEL_SDK_DISABLED, means no
    one collects spans: then None, and runs pay nothing)."""
    global _handler
    if _handler is not None:
        return _handler
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return None
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("supervisor-graph")
    except PackageNotFoundError:
        release = None
    _handler = AgentSpanHandler(provider.get_tracer("supervisor_graph", release))
    return _handler


def guard_span(config: Any, attributes: dict[str, Any]) -> None:
    """A span for one guard verdict inside the run `config` belongs to (nothing without a
    tracer provider)."""
    if _handler is None:
        return
    from supervisor_graph.nodes.observability.tracing import parent_run_of

    _handler.guard(parent_run_of(config), attributes)


def traceparent_headers(config: Any) -> dict[str, str]:
    """Trace-context headers for a remote call made inside the run `config` belongs to."""
    if _handler is None:
        return {}
    from supervisor_graph.nodes.observability.tracing import parent_run_of

    return _handler.headers_for(parent_run_of(config))
