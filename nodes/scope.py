"""How a node finds the options and run handle of the run it belongs to."""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from supervisor_graph.nodes.context import RequestContext
from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions
from supervisor_graph.nodes.spec import AgentSpec

__all__ = ["run_scope"]


def run_scope(spec: AgentSpec, config: RunnableConfig, runtime: Runtime[Any] | None) -> tuple[RunOptions, RunHandle]:
    """Options and handle for this node: attached by `generate()` or a parent delegation,
    or built from the agent's defaults when the graph is driven directly (plain
    `ainvoke`, LangGraph Studio)."""
    ctx = runtime.context if runtime is not None else None
    if isinstance(ctx, RunContext):
        opts = ctx.effective(spec.defaults)
        handle = ctx.handle
        if handle is not None:
            return opts, handle
    else:
        opts = spec.defaults
    configurable = config.get("configurable") or {}
    run_id = config.get("run_id") or (config.get("metadata") or {}).get("run_id") or uuid.uuid4()
    handle = RunHandle(
        run_id=str(run_id),
        agent_path=(spec.agent_id,),
        request_context=opts.request_context if opts.request_context is not None else RequestContext(),
        abort_signal=opts.abort_signal,
        thread_id=configurable.get("thread_id"),
    )
    if isinstance(ctx, RunContext):
        # Keep one handle for the whole run so every node sees the same request context.
        ctx._handle = handle
    return opts, handle
