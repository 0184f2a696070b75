"""The subagent node: runs a subagent's compiled graph as a LangGraph subgraph.

The subgraph inherits the parent's checkpointer and stores its checkpoints under the
task's namespace, so each delegation gets a thread of its own that survives a pause
and resume. The parent's conversation reaches the subagent's model through the run
handle (never through state), so the subagent's thread stores only its prompt, its
own messages and its answer, and the parent's thread stores only the call and its
final text.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command

from supervisor_graph.checkpointers.compat import read_channel
from supervisor_graph.checkpointers.naming import delegation_thread_id, stable_namespace, subagent_resource_id
from supervisor_graph.nodes.background.tasks import BackgroundLaunch, outcome_text, started_text, task_id_of
from supervisor_graph.nodes.delegation.complete import abort_delegation, finish_delegation
from supervisor_graph.nodes.delegation.hooks import HookFailed
from supervisor_graph.nodes.delegation.result import DelegationRecord
from supervisor_graph.nodes.delegation.transcript import record_answer, record_transcript
from supervisor_graph.nodes.delegation.view import apply_message_filter, model_view
from supervisor_graph.nodes.errors import log_failure, original_error
from supervisor_graph.nodes.guards.boundaries import guard_delegation_in_node
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.observability.otel import traceparent_headers
from supervisor_graph.nodes.observability.tracing import agent_metadata, announce, detached_config, parent_run_of
from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions
from supervisor_graph.nodes.scope.context import (
    RESOURCE_ID_KEY,
    RUN_ID_KEY,
    RUN_IDENTITY_KEYS,
    THREAD_ID_KEY,
    RequestContext,
)
from supervisor_graph.nodes.scope.lookup import run_scope
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.state import zero_usage
from supervisor_graph.nodes.steps.budget import child_budget, exceeded_result
from supervisor_graph.nodes.steps.compaction import COMPACTION_KEY, summarised
from supervisor_graph.nodes.steps.structured_output import output_schema_of
from supervisor_graph.nodes.text import text_of
from supervisor_graph.nodes.turn.leaf import RESUME_NS_KEY, can_run_directly, run_directly
from supervisor_graph.nodes.turn.routing import SUPERVISOR_NODE
from supervisor_graph.nodes.turn.tools import ended_by_cancel

__all__ = ["make_subagent_node", "sub_options", "text_of"]

log = logging.getLogger("supervisor_graph")

_thread_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
# subagent keys whose background delegations ran inline once already (warned)
_warned_inline: set[str] = set()


def sub_options(parent: RunOptions, sub_defaults: RunOptions, max_steps: int | None, handle: RunHandle) -> RunOptions:
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


def _thread_metadata(values: dict[str, Any] | None) -> dict[str, Any]:
    # LangGraph keeps only primitive metadata values on checkpoints: keep the caller's
    # metadata as one JSON string, decoded again by `list_threads`.
    # Always set, so a nested delegation does not inherit its parent's metadata.
    return {"thread_metadata": json.dumps(values, default=str) if values else ""}


def make_subagent_node(
    parent: AgentSpec,
    key: str,
    sub_spec: AgentSpec,
    graph: Any,
    *,
    per_parent_thread: bool = False,
) -> Any:
    agent_id = sub_spec.agent_id

    async def run_subagent(task: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        opts, handle = run_scope(parent, config, runtime)
        if parent.guarded:  # the `delegation` boundary, before anything starts (SPEC §30)
            task, stopped = await guard_delegation_in_node(parent, key, agent_id, task, handle, config, Emitter(runtime, handle))
            if stopped is not None:
                return stopped
        call = task["call"]
        tool_call_id = call["id"] or ""
        prompt = task["prompt"]
        configurable = config.get("configurable") or {}
        # a continuation task (see nodes/turn/leaf.py) keeps the delegation's first namespace
        continued = task.get(RESUME_NS_KEY)
        ns = task_ns = continued or configurable.get("checkpoint_ns", "")
        if per_parent_thread:
            ns = stable_namespace(ns)
        # runs without memory keep nothing, so their delegations have no thread to name
        thread_id = delegation_thread_id(configurable.get("thread_id"), ns) if handle.thread_id else None
        resource_id = subagent_resource_id(handle.resource_id or handle.thread_id, key)
        record = DelegationRecord(
            tool_call_id=tool_call_id,
            key=key,
            agent_id=agent_id,
            prompt=prompt,
            sub_agent_thread_id=thread_id,
            sub_agent_resource_id=resource_id,
            usage=zero_usage(),
        )
        # a continuation in the same run already announced the delegation; a resumed run
        # announces it again, as a subgraph's re-run node did
        announced = not continued or tool_call_id not in handle.delegations
        handle.delegations[tool_call_id] = record

        values = task.get("request_context")
        request_context = RequestContext(values) if values is not None else handle.request_context.fork(RUN_IDENTITY_KEYS)
        request_context.set(RUN_ID_KEY, handle.run_id)
        request_context.set(THREAD_ID_KEY, thread_id)
        request_context.set(RESOURCE_ID_KEY, resource_id)

        emit = Emitter(runtime, handle)
        if announced:
            started = {"tool_call_id": tool_call_id, "agent_key": key, "agent_id": agent_id, "prompt": prompt, "namespace": task_ns}
            emit("delegation-start", started)
            await announce(config, "delegation-start", started, handle.agent_path)
        try:
            parent_messages: list[BaseMessage] = read_channel(config, "messages") or []
            # inherit_context=False: only the prompt and its own thread (the filter still runs)
            inherited = [*handle.context_messages, *parent_messages] if sub_spec.inherit_context else []
            if parent.compaction is not None and inherited:  # what the parent's model sees: its summary
                inherited = summarised(inherited, read_channel(config, COMPACTION_KEY))
            chosen = await apply_message_filter(opts, handle, inherited, agent_id, prompt, tool_call_id)
            sub_handle = RunHandle(
                run_id=handle.run_id,
                agent_path=(*handle.agent_path, agent_id),
                request_context=request_context,
                abort_signal=handle.abort_signal,
                context_messages=model_view(chosen),
                thread_id=thread_id,
                resource_id=resource_id,
                root_context=handle.root,
                stream_events=handle.stream_events,
                durable=handle.durable,
                scratch=handle.scratch,
                guard_usage=handle.guard_usage,
                versions=handle.versions,
                override=await handle.versions.resolve(agent_id) if handle.versions is not None else None,
                # its parent's budgets and its own (`modified_budget`, else `Agent(budget=)`), from now
                budget=child_budget(handle.budget, task.get("budget"), sub_spec.budget),
            )
            sub_opts = sub_options(opts, sub_spec.defaults, task.get("max_steps"), sub_handle)
            if task.get("output_schema") is not None:  # `modified_output_schema` of the start hook
                chosen_schema = handle.output_schemas.get(tool_call_id) or output_schema_of(task["output_schema"])
                sub_opts = sub_opts.model_copy(update={"output_schema": chosen_schema})
            record.schema = sub_opts.output_schema or sub_spec.output_schema
            sub_config: RunnableConfig = {
                **config,
                "metadata": {
                    **(config.get("metadata") or {}),
                    # who runs, for traces (SPEC §24): every run of the delegation inherits it
                    **agent_metadata(agent_id, sub_spec.agent_name, sub_handle.agent_path, sub_spec.tracing),
                    "tool_call_id": tool_call_id,
                    "sub_agent_thread_id": thread_id or "",
                    "thread_id": handle.thread_id or "",
                    "resource_id": resource_id,
                    "parent_thread_id": handle.thread_id or "",
                    **_thread_metadata(task.get("thread_metadata")),
                },
            }
            context = RunContext.for_run(sub_opts, sub_handle)
            named: RunnableConfig = {**sub_config, "run_name": sub_spec.agent_name or agent_id}  # its run, named after it

            async def _execute() -> Command[Any] | None:
                if can_run_directly(sub_spec, sub_opts, per_parent_thread):
                    return await run_directly(sub_spec, graph, task, sub_config, sub_opts, sub_handle, runtime, task_ns, record, key)
                if per_parent_thread and thread_id is not None:
                    lock = _thread_locks.get(thread_id)
                    if lock is None:
                        lock = _thread_locks[thread_id] = asyncio.Lock()
                    async with lock:
                        await _run(graph, prompt, named, context, record)
                else:
                    await _run(graph, prompt, named, context, record)
                return None

            settings = parent.background.for_key(key) if parent.background is not None else None
            if settings is not None and handle.background is not None:
                return await _launch_background(
                    config,
                    BackgroundLaunch(
                        task_id=task_id_of(handle.thread_id, task_ns, tool_call_id),
                        key=key,
                        agent_id=agent_id,
                        tool_call_id=tool_call_id,
                        tool_name=call["name"],
                        prompt=prompt,
                        graph=graph,
                        # its own trace, linked to this run: it outlives it (SPEC §24)
                        config=detached_config(sub_config, parent_run_of(config)),
                        context=context,
                        settings=settings,
                        parent_options=opts,
                        parent_handle=handle,
                    ),
                    emit,
                )
            server_task = task.get("background_run")
            if settings is not None and server_task is None and parent.server_host_for is not None:
                host = parent.server_host_for(config)
                if host is not None:  # a LangGraph server drives the graph: its queue hosts the task
                    return await _launch_on_server(config, host, task, handle, key, agent_id, prompt, settings, task_ns, emit)
            if server_task is not None:
                return await _run_server_task(parent, server_task, record, emit, config, _execute)
            if settings is not None and key not in _warned_inline:
                # no host (a plain graph.ainvoke): SPEC §12 says so once, and it runs inline
                _warned_inline.add(key)
                log.warning(
                    "background delegation to %r runs inline: nothing hosts background tasks where the graph is "
                    "driven directly (generate / stream with a thread, or the *_until_idle calls, host them)",
                    key,
                )
            handoff = await _execute()
            if handoff is not None:
                return handoff  # it pauses as the first action of a fresh task
        except GraphBubbleUp:
            raise  # interrupts and parent commands belong to LangGraph
        except asyncio.CancelledError:
            # the run was aborted (or a new message stopped it) while the subagent ran: a
            # failed delegation, never a success with no text (SPEC §10)
            await abort_delegation(opts, handle, record, agent_id)
            raise
        except Exception as exc:  # noqa: BLE001 - a failed subagent is a failed tool result
            error = exc.cause if isinstance(exc, HookFailed) else original_error(exc)
            record.success, record.error = False, error
            record.finish_reason = "error"
            log_failure(log, logging.WARNING, "delegation to %r failed", error, agent_id)

        artifact = {
            "agent_id": agent_id,
            "success": record.success,
            "usage": record.usage,
            "finish_reason": record.finish_reason,
            "sub_agent_thread_id": thread_id,
            "sub_agent_resource_id": resource_id,
        }
        if ended_by_cancel(record.messages):  # the caller cancelled a suspended call: stop here too
            artifact["cancelled"] = True
        preview = parent.preview_tokens.get(key)
        return await finish_delegation(
            config, opts, handle, record, call, key, artifact, emit, task_ns, preview, guarded=parent.guarded, task=task, parent=parent
        )

    run_subagent.__name__ = key
    return run_subagent


async def _launch_background(config: RunnableConfig, launch: BackgroundLaunch, emit: Emitter) -> Command[Any]:
    """Hand the delegation to the run's launcher and answer the supervisor at once."""
    handle = launch.parent_handle
    handle.delegations.pop(launch.tool_call_id, None)  # its outcome arrives as a notice, not a result
    launch.context.handle.stream_events = False  # nobody streams a background task's steps
    await handle.background.launch(launch)  # its record exists before the tool answers (SPEC §12)
    call = {"id": launch.tool_call_id, "name": launch.tool_name}
    return await _started_update(config, handle, launch.task_id, launch.key, launch.agent_id, call, launch.prompt, emit)


async def _run(graph: Any, prompt: str, config: RunnableConfig, context: RunContext, record: DelegationRecord) -> None:
    """Run the subgraph, keeping its latest state so a failure still has the partial
    transcript."""
    latest: dict[str, Any] = {}
    try:
        async for values in graph.astream(
            {"messages": [HumanMessage(content=prompt)]}, config, context=context, stream_mode="values"
        ):
            latest = values
    finally:
        record_transcript(record, latest)
    handle = context.handle
    record_answer(record, latest, handle.abort_signal if handle is not None else None)
    exceeded_result(record, handle.budget if handle is not None else None)


async def _started_update(
    config: RunnableConfig, handle: RunHandle, task_id: str, key: str, agent_id: str, call: Any, prompt: str, emit: Emitter, **where: Any
) -> Command[Any]:
    """The supervisor's answer for a task that has started, and its record in the state."""
    started = {"task_id": task_id, "agent_key": key, "agent_id": agent_id, "tool_call_id": call["id"] or "", "prompt": prompt}
    emit("background-task-started", started)
    await announce(config, "background-task-started", started, handle.agent_path)
    message = ToolMessage(
        content=started_text(task_id, call["name"]),
        tool_call_id=call["id"] or "",
        name=call["name"],
        artifact={"agent_id": agent_id, "background_task_id": task_id, "success": True},
    )
    # the launching call's result, as the supervisor's model gets it (SPEC §12): its
    # outcome arrives later as a notice, so no `delegation-complete` follows
    emit("tool-result", {"tool_name": call["name"], "result": message.content, "success": True, **started})
    record = {**started, "status": "running", "tries": 0, "result_text": None, **where}
    del record["prompt"]
    return Command(update={"messages": [message], "background_tasks": {task_id: record}}, goto=SUPERVISOR_NODE)


async def _launch_on_server(
    config: RunnableConfig,
    host: Any, task: dict[str, Any], handle: RunHandle, key: str, agent_id: str, prompt: str, settings: Any, ns: str, emit: Emitter
) -> Command[Any]:
    """Start the delegation as a run of this graph on a thread of its own (SPEC §12)."""
    call = task["call"]
    parent_thread = handle.thread_id or ""
    task_id = task_id_of(parent_thread, ns, call["id"] or "")
    handle.delegations.pop(call["id"] or "", None)  # its outcome arrives as a notice, not a result
    server_task = {
        "task_id": task_id,
        "key": key,
        "agent_id": agent_id,
        "parent_thread": parent_thread,
        "tool_call_id": call["id"] or "",
        "tool_name": call["name"],
        "prompt": prompt,
        "request_context": task.get("request_context"),
        "timeout_ms": settings.timeout_ms,
        "retries": settings.retries,
        "budget": task.get("budget"),  # `modified_budget`, if the start hook gave one (SPEC §25)
        # its run is a trace of its own on the server, linked to this one (SPEC §24)
        "parent_run_id": str(parent_run_of(config) or ""),
        "trace_headers": traceparent_headers(config),
    }
    where = await host.start(server_task)
    return await _started_update(config, handle, task_id, key, agent_id, call, prompt, emit, **where)


async def _run_server_task(
    parent: AgentSpec, server_task: dict[str, Any], record: DelegationRecord, emit: Emitter, config: RunnableConfig, execute: Any
) -> Command[Any]:
    """This run is a background task the server hosts: run the delegation (tries, timeout),
    report its outcome to the parent thread, and end."""
    timeout = server_task.get("timeout_ms")
    retries = int(server_task.get("retries") or 0)
    status = "failed"
    for _ in range(retries + 1):
        record.success, record.error = True, None
        try:
            handoff = await asyncio.wait_for(execute(), timeout / 1000 if timeout else None)
            if handoff is not None:
                return handoff  # a later pause moves to a fresh task of the node (its payload keeps the task)
            status = "completed" if record.success else "failed"
        except TimeoutError:
            status = "timed_out"
        except GraphBubbleUp:
            raise
        except Exception as exc:  # noqa: BLE001 - the notice says it failed, generically
            log_failure(log, logging.WARNING, "background task of %r failed", original_error(exc), record.agent_id)
            status = "failed"
        if status == "completed":
            break
    text = outcome_text(status, record, timeout)
    kind = "background-task-completed" if status == "completed" else "background-task-failed"
    ended = {"task_id": server_task["task_id"], "status": status}
    emit(kind, ended)
    await announce(config, kind, ended, emit.agent_path)
    host = parent.server_host_for(config) if parent.server_host_for is not None else None
    if host is not None:
        await host.report(server_task, status, text)
    return Command(update={"messages": [AIMessage(content=text)], "finish_reason": "stop"}, goto=END)
