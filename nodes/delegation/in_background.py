"""A way to run a delegation: as a background task (SPEC §12), for a subagent declared
in `background_tasks`.

Who hosts the task decides: the run's own host (a facade run with a thread) gets a
`BackgroundLaunch`; a LangGraph server gets a run of this graph on a thread of its own,
which runs the delegation here as that run's task (`background_run`) and reports its
outcome to the parent thread. Either way the supervisor is answered at once with the
"started" text; where nothing hosts it, the delegation runs inline (`execute`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END
from langgraph.types import Command

from supervisor_graph.nodes.background.tasks import BackgroundLaunch, outcome_text, started_text, task_id_of
from supervisor_graph.nodes.delegation.inheritance import SubRun
from supervisor_graph.nodes.delegation.opening import Delegation
from supervisor_graph.nodes.errors import log_failure, original_error
from supervisor_graph.nodes.observability.otel import traceparent_headers
from supervisor_graph.nodes.observability.tracing import announce, detached_config, parent_run_of
from supervisor_graph.nodes.turn.routing import SUPERVISOR_NODE

__all__ = ["run_in_background"]

log = logging.getLogger("supervisor_graph")

# subagent keys whose background delegations ran inline once already (warned)
_warned_inline: set[str] = set()

Execute = Callable[[], Awaitable[Command[Any] | None]]


async def run_in_background(
    delegation: Delegation, sub: SubRun, graph: Any, settings: Any, execute: Execute
) -> Command[Any] | None:
    """Launch the delegation as a background task where something hosts it (`settings`:
    its `BackgroundTaskConfig`, None when the subagent is not declared for it), run it
    as the task this run is (a server's `background_run`), else run it inline
    (`execute`: the way it runs in this node)."""
    parent, handle, config = delegation.parent, delegation.handle, delegation.config
    if settings is not None and handle.background is not None:
        return await _launch_in_process(delegation, sub, graph, settings)
    server_task = delegation.task.get("background_run")
    if settings is not None and server_task is None and parent.server_host_for is not None:
        host = parent.server_host_for(config)
        if host is not None:  # a LangGraph server drives the graph: its queue hosts the task
            return await _launch_on_server(delegation, host, settings)
    if server_task is not None:
        return await _run_server_task(delegation, server_task, execute)
    if settings is not None and delegation.key not in _warned_inline:
        # no host (a plain graph.ainvoke): SPEC §12 says so once, and it runs inline
        _warned_inline.add(delegation.key)
        log.warning(
            "background delegation to %r runs inline: nothing hosts background tasks where the graph is "
            "driven directly (generate / stream with a thread, or the *_until_idle calls, host them)",
            delegation.key,
        )
    return await execute()


async def _launch_in_process(delegation: Delegation, sub: SubRun, graph: Any, settings: Any) -> Command[Any]:
    """Hand the delegation to the run's launcher and answer the supervisor at once."""
    handle, record, config = delegation.handle, delegation.record, delegation.config
    launch = BackgroundLaunch(
        task_id=task_id_of(handle.thread_id, delegation.namespace, record.tool_call_id),
        key=delegation.key,
        agent_id=record.agent_id,
        tool_call_id=record.tool_call_id,
        tool_name=delegation.call["name"],
        prompt=record.prompt,
        graph=graph,
        # its own trace, linked to this run: it outlives it (SPEC §24)
        config=detached_config(sub.config, parent_run_of(config)),
        context=sub.context,
        settings=settings,
        parent_options=delegation.opts,
        parent_handle=handle,
    )
    handle.delegations.pop(launch.tool_call_id, None)  # its outcome arrives as a notice, not a result
    launch.context.handle.stream_events = False  # nobody streams a background task's steps
    await handle.background.launch(launch)  # its record exists before the tool answers (SPEC §12)
    return await _started_update(delegation, launch.task_id)


async def _launch_on_server(delegation: Delegation, host: Any, settings: Any) -> Command[Any]:
    """Start the delegation as a run of this graph on a thread of its own (SPEC §12)."""
    task, handle, record, config = delegation.task, delegation.handle, delegation.record, delegation.config
    parent_thread = handle.thread_id or ""
    task_id = task_id_of(parent_thread, delegation.namespace, record.tool_call_id)
    handle.delegations.pop(record.tool_call_id, None)  # its outcome arrives as a notice, not a result
    server_task = {
        "task_id": task_id,
        "key": delegation.key,
        "agent_id": record.agent_id,
        "parent_thread": parent_thread,
        "tool_call_id": record.tool_call_id,
        "tool_name": delegation.call["name"],
        "prompt": record.prompt,
        "request_context": task.get("request_context"),
        "timeout_ms": settings.timeout_ms,
        "retries": settings.retries,
        "budget": task.get("budget"),  # `modified_budget`, if the start hook gave one (SPEC §25)
        # its run is a trace of its own on the server, linked to this one (SPEC §24)
        "parent_run_id": str(parent_run_of(config) or ""),
        "trace_headers": traceparent_headers(config),
    }
    where = await host.start(server_task)
    return await _started_update(delegation, task_id, **where)


async def _started_update(delegation: Delegation, task_id: str, **where: Any) -> Command[Any]:
    """The supervisor's answer for a task that has started, and its record in the state."""
    call, record, emit = delegation.call, delegation.record, delegation.emit
    started = {
        "task_id": task_id,
        "agent_key": delegation.key,
        "agent_id": record.agent_id,
        "tool_call_id": record.tool_call_id,
        "prompt": record.prompt,
    }
    emit("background-task-started", started)
    await announce(delegation.config, "background-task-started", started, delegation.handle.agent_path)
    message = ToolMessage(
        content=started_text(task_id, call["name"]),
        tool_call_id=record.tool_call_id,
        name=call["name"],
        artifact={"agent_id": record.agent_id, "background_task_id": task_id, "success": True},
    )
    # the launching call's result, as the supervisor's model gets it (SPEC §12): its
    # outcome arrives later as a notice, so no `delegation-complete` follows
    emit("tool-result", {"tool_name": call["name"], "result": message.content, "success": True, **started})
    task = {**started, "status": "running", "tries": 0, "result_text": None, **where}
    del task["prompt"]
    return Command(update={"messages": [message], "background_tasks": {task_id: task}}, goto=SUPERVISOR_NODE)


async def _run_server_task(delegation: Delegation, server_task: dict[str, Any], execute: Execute) -> Command[Any]:
    """This run is a background task the server hosts: run the delegation (tries, timeout),
    report its outcome to the parent thread, and end."""
    record, timeout = delegation.record, server_task.get("timeout_ms")
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
    delegation.emit(kind, ended)
    await announce(delegation.config, kind, ended, delegation.emit.agent_path)
    parent = delegation.parent
    host = parent.server_host_for(delegation.config) if parent.server_host_for is not None else None
    if host is not None:
        await host.report(server_task, status, text)
    return Command(update={"messages": [AIMessage(content=text)], "finish_reason": "stop"}, goto=END)
