"""One delegation to a subagent on a server of its own (SPEC §21, §27): what the
LangGraph-server node (`nodes.remote.langgraph`) and the A2A node (`nodes.remote.a2a`) share.

`delegate_remotely` opens the delegation (its scope, the call, the record, the
`delegation-start` announcement), hands the protocol's own exchange a `RemoteDelegation`
(the filtered parent conversation, the request context, the subagent's text deltas),
counts what it spent, turns a failure into a failed delegation, and finishes it as a
local subagent's delegation is finished.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime
from langgraph.types import Command

from supervisor_graph.checkpointers.compat import read_channel
from supervisor_graph.nodes.delegation.complete import abort_delegation, finish_delegation
from supervisor_graph.nodes.delegation.result import DelegationRecord, abort_reason, mark_aborted
from supervisor_graph.nodes.delegation.view import apply_message_filter, model_view
from supervisor_graph.nodes.errors import log_failure
from supervisor_graph.nodes.guards.boundaries import guard_delegation_in_node
from supervisor_graph.nodes.observability.events import EVENT_KEY, Emitter
from supervisor_graph.nodes.observability.tracing import announce
from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions
from supervisor_graph.nodes.scope.context import RUN_IDENTITY_KEYS
from supervisor_graph.nodes.scope.lookup import run_scope
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.state import zero_usage
from supervisor_graph.nodes.steps.budget import spend

__all__ = ["RemoteDelegation", "delegate_remotely", "remote_delegation_node"]

log = logging.getLogger("supervisor_graph")


@dataclass(slots=True)
class RemoteDelegation:
    """One open delegation to a remote subagent, as its protocol's exchange sees it."""

    task: Any
    config: RunnableConfig
    opts: RunOptions
    handle: RunHandle
    record: DelegationRecord
    emit: Emitter
    namespace: str
    remote: dict[str, Any] = field(default_factory=dict)
    """What the delegation's artifact says of the remote side (its url, ids); the exchange
    may add to it as it learns them."""

    @property
    def agent_id(self) -> str:
        return self.record.agent_id

    @property
    def prompt(self) -> str:
        return self.record.prompt

    @property
    def path(self) -> tuple[str, ...]:
        """The subagent's agent path (its chunks are attributed to it)."""
        return (*self.handle.agent_path, self.record.agent_id)

    def request_context(self) -> dict[str, Any]:
        """The request context the remote gets: the delegation's own (`task`), else the
        run's, without the run-level identity keys."""
        values = self.task.get("request_context")
        context = dict(values) if values is not None else self.handle.request_context.fork(RUN_IDENTITY_KEYS).to_dict()
        return {k: v for k, v in context.items() if k not in RUN_IDENTITY_KEYS}

    async def parent_messages(self) -> list[dict[str, Any]]:
        """The parent conversation the message filter lets through, as role and content."""
        messages: list[BaseMessage] = read_channel(self.config, "messages") or []
        chosen = await apply_message_filter(
            self.opts,
            self.handle,
            [*self.handle.context_messages, *messages],
            self.record.agent_id,
            self.record.prompt,
            self.record.tool_call_id,
        )
        return [{"role": m.type, "content": m.content} for m in model_view(chosen)]

    def text_delta(self, text: str, message_id: Any) -> None:
        """Some of the remote answer's text, streamed as the subagent's."""
        if not self.emit.active:
            return
        self.emit.writer(  # type: ignore[misc]
            {
                EVENT_KEY: True,
                "type": "text-delta",
                "payload": {"text": text, "message_id": message_id},
                "agent_path": self.path,
                "run_id": self.handle.run_id,
                "namespace": self.namespace,
            }
        )


async def delegate_remotely(
    parent: AgentSpec,
    key: str,
    agent_id: str,
    task: Any,
    config: RunnableConfig,
    runtime: Runtime[RunContext],
    *,
    thread_of: Callable[[Any, str, str], str],
    remote: dict[str, Any],
    exchange: Callable[[RemoteDelegation], Awaitable[None]],
    protocol: str,
) -> Command[Any]:
    """Run one delegation to a remote subagent. `thread_of(parent thread, namespace, tool
    call id)`: the remote thread (or context) of the delegation, its
    `sub_agent_thread_id`; `remote`: what the artifact says of the remote side;
    `exchange`: the protocol's own part, which sets the record's text, usage and finish
    reason (its pause, a `GraphBubbleUp`, pauses the parent; any other exception is a
    failed delegation, logged as a `protocol` delegation's failure)."""
    opts, handle = run_scope(parent, config, runtime)
    if parent.guarded:  # the `delegation` boundary, before anything is sent (SPEC §30)
        task, stopped = await guard_delegation_in_node(parent, key, agent_id, task, handle, config, Emitter(runtime, handle))
        if stopped is not None:
            return stopped
    call = task["call"]
    tool_call_id = call["id"] or ""
    prompt = task["prompt"]
    configurable = config.get("configurable") or {}
    namespace = configurable.get("checkpoint_ns", "")
    thread_id = thread_of(configurable.get("thread_id"), namespace, tool_call_id)
    record = DelegationRecord(
        tool_call_id=tool_call_id,
        key=key,
        agent_id=agent_id,
        prompt=prompt,
        sub_agent_thread_id=thread_id,
        usage=zero_usage(),
    )
    handle.delegations[tool_call_id] = record
    emit = Emitter(runtime, handle)
    announced = {
        "tool_call_id": tool_call_id,
        "agent_key": key,
        "agent_id": agent_id,
        "prompt": prompt,
        "namespace": namespace,
    }
    emit("delegation-start", announced)
    await announce(config, "delegation-start", announced, handle.agent_path)
    delegation = RemoteDelegation(task, config, opts, handle, record, emit, namespace, dict(remote))
    try:
        await exchange(delegation)
        spend(handle.budget, record.usage)  # counted against this run's budgets once it has ended (SPEC §25)
        if record.finish_reason == "abort":  # the remote run was aborted: not an answer
            mark_aborted(record, abort_reason(handle.abort_signal))
    except GraphBubbleUp:
        raise  # this graph's own pause: the parent's caller answers it
    except asyncio.CancelledError:  # this run was aborted: the exchange cancelled the remote run
        await abort_delegation(opts, handle, record, agent_id)
        raise
    except Exception as exc:  # noqa: BLE001 - an unreachable or failing server is a failed delegation
        record.success, record.error, record.finish_reason = False, exc, "error"
        log_failure(log, logging.WARNING, f"{protocol} delegation to %r failed", exc, agent_id)

    artifact = {
        "agent_id": agent_id,
        "success": record.success,
        "usage": record.usage,
        "finish_reason": record.finish_reason,
        "sub_agent_thread_id": thread_id,
        "remote": delegation.remote,
    }
    return await finish_delegation(config, opts, handle, record, call, key, artifact, emit, namespace, guarded=parent.guarded, parent=parent)


def remote_delegation_node(
    parent: AgentSpec,
    key: str,
    agent_id: str,
    *,
    thread_of: Callable[[Any, str, str], str],
    remote: dict[str, Any],
    exchange: Callable[[RemoteDelegation], Awaitable[None]],
    protocol: str,
) -> Any:
    """The graph node (named `key`) that runs each delegation to subagent `key` with
    `delegate_remotely`."""

    async def run_remote_delegation(task: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        return await delegate_remotely(
            parent,
            key,
            agent_id,
            task,
            config,
            runtime,
            thread_of=thread_of,
            remote=remote,
            exchange=exchange,
            protocol=protocol,
        )

    run_remote_delegation.__name__ = key
    return run_remote_delegation
