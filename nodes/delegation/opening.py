"""The start of a delegation inside the node that runs it (SPEC §6.2, §30): the
`delegation` guards (when no `<key>.start` node checked them), the delegation's thread
and record, and its `delegation-start` announcement, the same for every way it runs.

What the start hook decided reaches here in the task (`nodes/delegation/start.py`); a
`Delegation` is what each way to run and the completion then work with.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Command

from supervisor_graph.nodes.delegation.hooks import HookFailed
from supervisor_graph.nodes.delegation.lineage import CHECKPOINT_KEY
from supervisor_graph.nodes.delegation.result import DelegationRecord
from supervisor_graph.nodes.errors import log_failure, original_error
from supervisor_graph.nodes.guards.boundaries import guard_delegation_in_node
from supervisor_graph.nodes.guards.core import guarded_at
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.observability.tracing import announce
from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions
from supervisor_graph.nodes.scope.lookup import run_scope
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.state import zero_usage
from supervisor_graph.nodes.turn.leaf import RESUME_NS_KEY

__all__ = ["Delegation", "Locate", "open_delegation"]

log = logging.getLogger("supervisor_graph")

Locate = Callable[[str, str, Any, RunHandle], tuple[str | None, str | None]]
"""`(namespace, tool call id, parent thread id, handle) -> (thread id, resource id)`: where
the delegation's own thread is (`sub_agent_thread_id`, `sub_agent_resource_id`)."""


@dataclass(slots=True)
class Delegation:
    """One open delegation: what each way to run it, and its completion, work with."""

    parent: AgentSpec
    key: str
    task: Any
    config: RunnableConfig
    runtime: Runtime[RunContext]
    opts: RunOptions
    handle: RunHandle
    record: DelegationRecord
    emit: Emitter
    namespace: str
    """The delegation's checkpoint namespace: its first task's, kept by a continuation."""

    rerunnable: ClassVar[bool] = True
    """Whether a result guard's retry may run it again from its task (SPEC §30)."""

    @property
    def call(self) -> Any:
        return self.task["call"]

    @property
    def agent_id(self) -> str:
        return self.record.agent_id

    @property
    def prompt(self) -> str:
        return self.record.prompt

    def artifact(self) -> dict[str, Any]:
        """The tool result's artifact: the outcome the parent's checkpoint keeps."""
        record = self.record
        return {
            "agent_id": record.agent_id,
            "success": record.success,
            "usage": record.usage,
            "finish_reason": record.finish_reason,
            "sub_agent_thread_id": record.sub_agent_thread_id,
            **self.where(),
        }

    def where(self) -> dict[str, Any]:
        """What the artifact says of where the subagent ran, past its thread (and the
        checkpoint it ended at, where its next delegation continues: `lineage`)."""
        where = {"sub_agent_resource_id": self.record.sub_agent_resource_id}
        if self.record.sub_agent_checkpoint_id is not None:
            where[CHECKPOINT_KEY] = self.record.sub_agent_checkpoint_id
        return where

    def failed(self, exc: Exception) -> None:
        """The way it ran raised: a failed delegation, with the error a hook or a model
        call wrapped (the supervisor's model sees only a generic text, SPEC §6.5)."""
        error = exc.cause if isinstance(exc, HookFailed) else original_error(exc)
        self.record.success, self.record.error = False, error
        self.record.finish_reason = "error"
        log_failure(log, logging.WARNING, "delegation to %r failed", error, self.agent_id)


async def open_delegation(
    parent: AgentSpec,
    key: str,
    agent_id: str,
    task: Any,
    config: RunnableConfig,
    runtime: Runtime[RunContext],
    locate: Locate,
    kind: type[Delegation] = Delegation,
    **fields: Any,
) -> Delegation | Command[Any]:
    """Open one delegation to subagent `key` (a `kind`, given its own `fields`), or the
    command that ends the node instead when a `delegation` guard stops it. Its record is
    the run's from now (`handle.delegations`)."""
    opts, handle = run_scope(parent, config, runtime)
    if guarded_at(parent):  # the `delegation` boundary, before anything starts (SPEC §30)
        task, stopped = await guard_delegation_in_node(parent, key, agent_id, task, handle, config, Emitter(runtime, handle))
        if stopped is not None:
            return stopped
    tool_call_id = task["call"]["id"] or ""
    configurable = config.get("configurable") or {}
    # a continuation task (see nodes/turn/leaf.py) keeps the delegation's first namespace
    continued = task.get(RESUME_NS_KEY)
    namespace = continued or configurable.get("checkpoint_ns", "")
    thread_id, resource_id = locate(namespace, tool_call_id, configurable.get("thread_id"), handle)
    record = DelegationRecord(
        tool_call_id=tool_call_id,
        key=key,
        agent_id=agent_id,
        prompt=task["prompt"],
        sub_agent_thread_id=thread_id,
        sub_agent_resource_id=resource_id,
        usage=zero_usage(),
    )
    # a continuation in the same run already announced the delegation; a resumed run
    # announces it again, as a subgraph's re-run node did
    announced = not continued or tool_call_id not in handle.delegations
    handle.delegations[tool_call_id] = record
    emit = Emitter(runtime, handle)
    if announced:
        started = {
            "tool_call_id": tool_call_id,
            "agent_key": key,
            "agent_id": agent_id,
            "prompt": record.prompt,
            "namespace": namespace,
        }
        emit("delegation-start", started)
        await announce(config, "delegation-start", started, handle.agent_path)
    return kind(parent, key, task, config, runtime, opts, handle, record, emit, namespace, **fields)
