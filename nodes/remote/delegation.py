"""One delegation to a subagent on a server of its own (SPEC §21, §27): what the
LangGraph-server node (`nodes.remote.langgraph`) and the A2A node (`nodes.remote.a2a`) share.

A remote delegation goes through the same lifecycle as a local one
(`nodes.delegation.lifecycle`: start, run, complete); its way to run is the
protocol's own exchange, handed a `RemoteDelegation` (the filtered parent conversation,
the request context, the subagent's text deltas), after which what it spent is counted
against the run's budgets.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from supervisor_graph.checkpointers.compat import read_channel
from supervisor_graph.nodes.delegation.lifecycle import open_delegation, run_and_complete
from supervisor_graph.nodes.delegation.opening import Delegation
from supervisor_graph.nodes.delegation.result import abort_reason, mark_aborted
from supervisor_graph.nodes.delegation.view import apply_message_filter, model_view
from supervisor_graph.nodes.errors import log_failure
from supervisor_graph.nodes.observability.events import EVENT_KEY
from supervisor_graph.nodes.options import RunContext, RunHandle
from supervisor_graph.nodes.scope.context import RUN_IDENTITY_KEYS
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.steps.budget import spend

__all__ = ["RemoteDelegation", "RemoteEndpoint", "remote_delegation_node"]

log = logging.getLogger("supervisor_graph")


@dataclass(frozen=True, slots=True)
class RemoteEndpoint:
    """Where a remote subagent is served, and how long its server may take."""

    agent_id: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float = 300.0
    connect_timeout: float = 10.0


@dataclass(slots=True)
class RemoteDelegation(Delegation):
    """One open delegation to a remote subagent, as its protocol's exchange sees it."""

    remote: dict[str, Any] = field(default_factory=dict)
    """What the delegation's artifact says of the remote side (its url, ids); the exchange
    may add to it as it learns them."""
    protocol: str = "remote"
    """The protocol's name in a failure's log line."""

    rerunnable: ClassVar[bool] = False  # nothing here can run the remote exchange again

    @property
    def path(self) -> tuple[str, ...]:
        """The subagent's agent path (its chunks are attributed to it)."""
        return (*self.handle.agent_path, self.record.agent_id)

    def where(self) -> dict[str, Any]:
        return {"remote": self.remote}

    def failed(self, exc: Exception) -> None:
        """An unreachable or failing server (or a failing message filter, as raised) is a
        failed delegation."""
        self.record.success, self.record.error, self.record.finish_reason = False, exc, "error"
        log_failure(log, logging.WARNING, f"{self.protocol} delegation to %r failed", exc, self.agent_id)

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
    """The graph node (named `key`) that runs each delegation to remote subagent `key`.
    `thread_of(parent thread, namespace, tool call id)`: the remote thread (or context)
    of the delegation, its `sub_agent_thread_id`; `remote`: what the artifact says of the
    remote side; `exchange`: the protocol's own part, which sets the record's text, usage
    and finish reason (its pause, a `GraphBubbleUp`, pauses the parent; any other
    exception is a failed delegation, logged as a `protocol` delegation's failure)."""

    def locate(namespace: str, tool_call_id: str, parent_thread: Any, handle: RunHandle) -> tuple[str | None, str | None]:
        return thread_of(parent_thread, namespace, tool_call_id), None

    async def run_remotely(delegation: RemoteDelegation) -> None:
        await exchange(delegation)
        spend(delegation.handle.budget, delegation.record.usage)  # counted once it has ended (SPEC §25)
        if delegation.record.finish_reason == "abort":  # the remote run was aborted: not an answer
            mark_aborted(delegation.record, abort_reason(delegation.handle.abort_signal))

    async def run_remote_delegation(task: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        opened = await open_delegation(
            parent, key, agent_id, task, config, runtime, locate, RemoteDelegation, remote=dict(remote), protocol=protocol
        )
        return await run_and_complete(opened, run_remotely)

    run_remote_delegation.__name__ = key
    return run_remote_delegation
