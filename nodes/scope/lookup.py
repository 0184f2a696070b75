"""How a node finds the options and run handle of the run it belongs to."""

from __future__ import annotations

import uuid
from collections import OrderedDict
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions
from supervisor_graph.nodes.scope.context import RequestContext
from supervisor_graph.nodes.scope.versions import VERSIONS_KEY
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.steps.budget import budget_of, open_budget

__all__ = ["run_scope", "with_version"]


# a run's handles when it has no context, by LangGraph's per-run control object (which
# takes no weak references: the most recent runs are kept, each with its control object
# so that its id cannot be reused while the entry lives)
_RECENT_RUNS = 128
_by_run: OrderedDict[int, tuple[Any, dict[str, RunHandle]]] = OrderedDict()


def _run_handles(control: Any) -> dict[str, RunHandle]:
    entry = _by_run.get(id(control))
    if entry is None or entry[0] is not control:
        entry = _by_run[id(control)] = (control, {})
        if len(_by_run) > _RECENT_RUNS:
            _by_run.popitem(last=False)
    return entry[1]


def run_scope(spec: AgentSpec, config: RunnableConfig, runtime: Runtime[Any] | None) -> tuple[RunOptions, RunHandle]:
    """Options and handle for this node: attached by `generate()` or a parent delegation,
    or built from the agent's defaults when the graph is driven directly (plain
    `ainvoke`, LangGraph Studio)."""
    ctx = runtime.context if runtime is not None else None
    control = None
    if isinstance(ctx, RunContext):
        opts = ctx.effective(spec.defaults)
        handle = ctx.handle
        if handle is not None:
            return opts, handle
    else:
        opts = spec.defaults
        # no context (a plain `graph.ainvoke(input)`): LangGraph's run control object is the
        # one thing every node of this run shares, so the run's handle (its result
        # references, delegation records, request context) is kept under it
        control = getattr(runtime, "control", None)
        if control is not None:
            known = _run_handles(control).get(spec.agent_id)
            if known is not None:
                return opts, known
    configurable = config.get("configurable") or {}
    run_id = config.get("run_id") or (config.get("metadata") or {}).get("run_id") or uuid.uuid4()
    if isinstance(ctx, RunContext) and ctx.request_context is not None:
        request_context = RequestContext(ctx.request_context)
    else:
        request_context = opts.request_context.fork() if opts.request_context is not None else RequestContext()
    handle = RunHandle(
        run_id=str(run_id),
        agent_path=(spec.agent_id,),
        request_context=request_context,
        abort_signal=opts.abort_signal,
        thread_id=configurable.get("thread_id"),
        # the call's budget and the agent's own; a background task a server runs as a run of
        # its own is under its subagent's budget only (nodes/steps/budget.py)
        budget=None if isinstance(ctx, RunContext) and ctx.background_task else open_budget(opts.budget, budget_of(spec)),
    )
    if opts.versions is not None and spec.versions_for is not None:
        # stored versions come from the run's store (servers provide one)
        handle.versions = spec.versions_for(opts.versions, runtime.store if runtime is not None else None)
        request_context.set(VERSIONS_KEY, opts.versions.model_dump(mode="json"))
    if isinstance(ctx, RunContext):
        # Keep one handle for the whole run so every node sees the same request context.
        ctx._handle = handle
    elif control is not None:
        _run_handles(control)[spec.agent_id] = handle
    return opts, handle


async def with_version(spec: AgentSpec, opts: RunOptions, handle: RunHandle, runtime: Runtime[Any] | None) -> RunOptions:
    """`opts` with the top-level agent's stored version in force (`handle.override`), for
    a run the facade did not prepare; the version's `max_steps` applies unless the run
    set one. Resolved once per run (the resolver keeps it)."""
    if handle.versions is None or len(handle.agent_path) > 1 or handle.override is not None:
        return opts
    handle.override = await handle.versions.resolve(spec.agent_id)
    ctx = runtime.context if runtime is not None else None
    explicit = isinstance(ctx, RunContext) and (ctx.options is not None or ctx.max_steps is not None)
    if handle.override is not None and handle.override.max_steps is not None and not explicit:
        return opts.model_copy(update={"max_steps": handle.override.max_steps})
    return opts
