"""The subagent node: one delegation to a local subagent, through the delegation
lifecycle (`nodes.delegation.lifecycle`: start, run, complete).

Its thread is named from the parent's thread and the delegation's namespace (one per
parent thread with `per_parent_thread`). It runs with what it inherits from the parent
(`inheritance`), one of three ways: a leaf's loop right in this node
(`nodes/turn/leaf.py`), else its compiled graph as a subgraph (`subgraph`), or as a
background task (`in_background`) for a subagent declared in `background_tasks`.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Command

from supervisor_graph.checkpointers.naming import delegation_thread_id, stable_namespace, subagent_resource_id
from supervisor_graph.nodes.background.control import background_of
from supervisor_graph.nodes.delegation.in_background import run_in_background
from supervisor_graph.nodes.delegation.inheritance import inherit, sub_options
from supervisor_graph.nodes.delegation.lifecycle import open_delegation, run_and_complete
from supervisor_graph.nodes.delegation.opening import Delegation, Locate
from supervisor_graph.nodes.delegation.subgraph import run_subgraph
from supervisor_graph.nodes.options import RunContext, RunHandle
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.text import text_of
from supervisor_graph.nodes.turn.leaf import can_run_directly, run_directly

__all__ = ["make_subagent_node", "sub_options", "text_of"]


def make_subagent_node(
    parent: AgentSpec,
    key: str,
    sub_spec: AgentSpec,
    graph: Any,
    *,
    per_parent_thread: bool = False,
) -> Any:
    locate = _thread_of(key, per_parent_thread)

    async def run_subagent(task: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        opened = await open_delegation(parent, key, sub_spec.agent_id, task, config, runtime, locate)
        # `graph` is named here, not only deeper: LangGraph finds a node's subgraph among
        # its function's nonlocals (Studio's xray view, the state of subgraphs)
        return await run_and_complete(opened, lambda delegation: _run_here(delegation, sub_spec, graph, per_parent_thread))

    run_subagent.__name__ = key
    return run_subagent


async def _run_here(delegation: Delegation, sub_spec: AgentSpec, graph: Any, per_parent_thread: bool) -> Command[Any] | None:
    """Run the delegation in this node, or hand it to a background task."""
    sub = await inherit(delegation, sub_spec)

    async def execute() -> Command[Any] | None:  # in this node: the leaf's loop, else the subgraph
        if can_run_directly(sub_spec, sub.opts, per_parent_thread):
            return await run_directly(
                sub_spec, graph, delegation.task, sub.config, sub.opts, sub.handle, delegation.runtime,
                delegation.namespace, delegation.record, delegation.key,
            )  # fmt: skip
        await run_subgraph(delegation, sub, sub_spec, graph, per_parent_thread)
        return None

    parent, key = delegation.parent, delegation.key
    background = background_of(parent)
    settings = background.for_key(key) if background is not None else None
    if settings is None and delegation.task.get("background_run") is None:
        return await execute()
    return await run_in_background(delegation, sub, graph, settings, execute)


def _thread_of(key: str, per_parent_thread: bool) -> Locate:
    """Where a delegation to subagent `key` keeps its thread: named from the parent's
    thread and its namespace (runs without memory keep nothing, so have none), its
    resource the parent's resource's own for `key`."""

    def locate(namespace: str, tool_call_id: str, parent_thread: Any, handle: RunHandle) -> tuple[str | None, str | None]:
        if per_parent_thread:
            namespace = stable_namespace(namespace)
        thread_id = delegation_thread_id(parent_thread, namespace) if handle.thread_id else None
        return thread_id, subagent_resource_id(handle.resource_id or handle.thread_id, key)

    return locate
