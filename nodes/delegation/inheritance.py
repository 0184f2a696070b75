"""What a local subagent's run inherits from its parent's (SPEC §6.4, §6.8, §24, §25):
its request context, the parent conversation its model sees (the message filter
applied), its handle (budget scope, selected version, abort signal), its options and its
config, whichever way it then runs.

The parent's conversation reaches the subagent's model through the handle (never
through state), so the subagent's thread stores only its prompt, its own messages and
its answer. It is the model view (user messages and answers: no tool calls, no tool
results), the newest turns `Agent(inherit_context=...)` lets through (`within`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from supervisor_graph.checkpointers.compat import read_channel
from supervisor_graph.nodes.delegation.opening import Delegation
from supervisor_graph.nodes.delegation.view import apply_message_filter, model_view, within
from supervisor_graph.nodes.observability.tracing import agent_metadata
from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions
from supervisor_graph.nodes.scope.context import (
    RESOURCE_ID_KEY,
    RUN_ID_KEY,
    RUN_IDENTITY_KEYS,
    THREAD_ID_KEY,
    RequestContext,
)
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.steps.budget import budget_of, child_budget
from supervisor_graph.nodes.steps.compaction import COMPACTION_KEY, compactor_of, summarised
from supervisor_graph.nodes.steps.structured_output import declared_schema, output_schema_of

__all__ = ["SubRun", "inherit", "sub_options"]


def sub_options(parent: RunOptions, sub_defaults: RunOptions, max_steps: int | None, handle: RunHandle) -> RunOptions:
    """The subagent's options: its own defaults, with what of the call reaches every
    depth (its handle's request context and abort signal, tool approval, the call's
    delegation options) and its step limit (the delegation's, else its version's)."""
    if max_steps is None and handle.override is not None:
        max_steps = handle.override.max_steps  # the selected version's, unless the call set one
    update: dict[str, Any] = {
        "request_context": handle.request_context,
        "abort_signal": handle.abort_signal,
        "memory": None,
        "require_tool_approval": parent.require_tool_approval or sub_defaults.require_tool_approval,
    }
    if max_steps is not None:
        update["max_steps"] = max_steps
    # Delegation options of the call apply at every depth (SPEC §6.8).
    if parent.delegation.model_fields_set:
        update["delegation"] = parent.delegation
    return sub_defaults.model_copy(update=update)


@dataclass(slots=True)
class SubRun:
    """What a local subagent runs with."""

    opts: RunOptions
    handle: RunHandle
    config: RunnableConfig
    """The node's config, its metadata saying who runs (SPEC §24)."""
    context: RunContext


async def inherit(delegation: Delegation, sub_spec: AgentSpec) -> SubRun:
    """What the delegation's subagent runs with (the message filter runs here)."""
    task, handle, record = delegation.task, delegation.handle, delegation.record
    # forked before the message filter runs, which records its failure in the run's context
    request_context = _request_context(delegation)
    sub_handle = await _sub_handle(delegation, sub_spec, request_context, await _inherited(delegation, sub_spec))
    sub_opts = sub_options(delegation.opts, sub_spec.defaults, task.get("max_steps"), sub_handle)
    if task.get("output_schema") is not None:  # `modified_output_schema` of the start hook
        chosen_schema = handle.output_schemas.get(record.tool_call_id) or output_schema_of(task["output_schema"])
        sub_opts = sub_opts.model_copy(update={"output_schema": chosen_schema})
    record.schema = sub_opts.output_schema or declared_schema(sub_spec)
    sub_config = _sub_config(delegation, sub_spec, sub_handle)
    return SubRun(sub_opts, sub_handle, sub_config, RunContext.for_run(sub_opts, sub_handle))


def _request_context(delegation: Delegation) -> RequestContext:
    """The delegation's request context (the start hook's, else a fork of the run's),
    naming the subagent's own thread and resource."""
    values, record = delegation.task.get("request_context"), delegation.record
    context = RequestContext(values) if values is not None else delegation.handle.request_context.fork(RUN_IDENTITY_KEYS)
    context.set(RUN_ID_KEY, delegation.handle.run_id)
    context.set(THREAD_ID_KEY, record.sub_agent_thread_id)
    context.set(RESOURCE_ID_KEY, record.sub_agent_resource_id)
    return context


async def _inherited(delegation: Delegation, sub_spec: AgentSpec) -> list[BaseMessage]:
    """The parent conversation the message filter lets through to the subagent."""
    config, handle, record = delegation.config, delegation.handle, delegation.record
    parent_messages: list[BaseMessage] = read_channel(config, "messages") or []
    # inherit_context=False: only the prompt and its own thread (the filter still runs)
    inherited = [*handle.context_messages, *parent_messages] if sub_spec.inherit_context is not None else []
    if compactor_of(delegation.parent) is not None and inherited:  # what the parent's model sees: its summary
        inherited = summarised(inherited, read_channel(config, COMPACTION_KEY))
    opts = delegation.opts
    return await apply_message_filter(opts, handle, inherited, record.agent_id, record.prompt, record.tool_call_id)


async def _sub_handle(
    delegation: Delegation, sub_spec: AgentSpec, request_context: RequestContext, chosen: list[BaseMessage]
) -> RunHandle:
    handle, agent_id = delegation.handle, delegation.agent_id
    return RunHandle(
        run_id=handle.run_id,
        agent_path=(*handle.agent_path, agent_id),
        request_context=request_context,
        abort_signal=handle.abort_signal,
        context_messages=_bounded(model_view(chosen), sub_spec),
        thread_id=delegation.record.sub_agent_thread_id,
        resource_id=delegation.record.sub_agent_resource_id,
        root_context=handle.root,
        stream_events=handle.stream_events,
        durable=handle.durable,
        scratch=handle.scratch,
        guard_usage=handle.guard_usage,
        guard_answers=handle.guard_answers,
        versions=handle.versions,
        override=await handle.versions.resolve(agent_id) if handle.versions is not None else None,
        # its parent's budgets and its own (`modified_budget`, else `Agent(budget=)`), from now
        budget=child_budget(handle.budget, delegation.task.get("budget"), budget_of(sub_spec)),
    )


def _bounded(view: list[BaseMessage], sub_spec: AgentSpec) -> list[BaseMessage]:
    # after the filter, so that the bound holds whatever it chose; without inheritance
    # the filter's choice (from nothing) is the subagent's, as before
    return view if sub_spec.inherit_context is None else within(view, sub_spec.inherit_context)


def _sub_config(delegation: Delegation, sub_spec: AgentSpec, sub_handle: RunHandle) -> RunnableConfig:
    config, handle, record = delegation.config, delegation.handle, delegation.record
    return {
        **config,
        "metadata": {
            **(config.get("metadata") or {}),
            # who runs, for traces (SPEC §24): every run of the delegation inherits it
            **agent_metadata(record.agent_id, sub_spec.agent_name, sub_handle.agent_path, sub_spec.tracing),
            "tool_call_id": record.tool_call_id,
            "sub_agent_thread_id": record.sub_agent_thread_id or "",
            "thread_id": handle.thread_id or "",
            "resource_id": record.sub_agent_resource_id,
            "parent_thread_id": handle.thread_id or "",
            **_thread_metadata(delegation.task.get("thread_metadata")),
        },
    }


def _thread_metadata(values: dict[str, Any] | None) -> dict[str, Any]:
    # LangGraph keeps only primitive metadata values on checkpoints: keep the caller's
    # metadata as one JSON string, decoded again by `list_threads`.
    # Always set, so a nested delegation does not inherit its parent's metadata.
    return {"thread_metadata": json.dumps(values, default=str) if values else ""}
