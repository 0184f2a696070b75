"""The `<key>.start` node (SPEC §6.2-6.3): runs `on_delegation_start` on a delegation edge,
which may reject the delegation, rewrite its prompt and step budget, or hand the
subagent request-context entries and thread metadata.

The supervisor routes through it only when the run has that hook or the agent has
`delegation` guards (SPEC §30, checked here after the hook), so an unset hook costs no
super-step.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from supervisor_graph.checkpointers.compat import read_channel
from supervisor_graph.nodes.delegation.hooks import DelegationStartContext, DelegationStartResult, run_delegation_hook
from supervisor_graph.nodes.delegation.result import failure_text
from supervisor_graph.nodes.guards.boundaries import GUARD_CHECKED, GUARD_HELD, guard_delegation, guard_delegation_held
from supervisor_graph.nodes.guards.core import guarded_at
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.options import RunContext
from supervisor_graph.nodes.scope.context import RUN_IDENTITY_KEYS, check_json
from supervisor_graph.nodes.scope.lookup import run_scope
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.turn.routing import SUPERVISOR_NODE, DelegationTask
from supervisor_graph.nodes.turn.supervisor import free_updates, iteration_of_run

__all__ = ["DEFAULT_REJECTION", "make_start_node"]

DEFAULT_REJECTION = "The supervisor's delegation policy declined this delegation."


def make_start_node(parent: AgentSpec, key: str, sub_id: str) -> Any:
    async def delegation_start(task: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        opts, handle = run_scope(parent, config, runtime)
        hook = opts.delegation.on_delegation_start
        call = task["call"]
        guarded = "delegation" in guarded_at(parent) and not task.get(GUARD_CHECKED)
        if task.get(GUARD_HELD):  # the subagent node's guard escalated: the person decides here (SPEC §30)
            stopped = await guard_delegation_held(parent, sub_id, task, handle, config, Emitter(runtime, handle))
            if stopped is not None:
                return Command(update={"messages": [stopped]}, goto=SUPERVISOR_NODE)
            let_through = {k: v for k, v in task.items() if k != GUARD_HELD}
            return Command(goto=Send(key, {**let_through, GUARD_CHECKED: True}))
        if hook is None and not guarded:  # options changed between the turn and this node: pass through
            return Command(goto=Send(key, task))
        if hook is None:  # only the agent's guards watch this edge (a checkpoint from before they ran in-node)
            prompt, stopped = await guard_delegation(parent, sub_id, call, task["prompt"], handle, config, Emitter(runtime, handle))
            if stopped is not None:
                return Command(update={"messages": [stopped]}, goto=SUPERVISOR_NODE)
            return Command(goto=Send(key, {**task, "prompt": prompt, GUARD_CHECKED: True}))
        tool_call_id = call["id"] or ""
        messages = read_channel(config, "messages") or []
        child = handle.request_context.fork(RUN_IDENTITY_KEYS)
        ctx = DelegationStartContext(
            primitive_id=sub_id,
            prompt=task["prompt"],
            iteration=iteration_of_run(messages, free_updates(parent, opts), parent.steps.free),
            request_context=child,
            tool_call_id=tool_call_id,
            run_id=handle.run_id,
        )
        throw = opts.delegation.hook_error_strategy == "throw"
        decision: DelegationStartResult
        decision, thrown = await run_delegation_hook(handle, throw, hook, ctx, DelegationStartResult, "on_delegation_start")
        if thrown is not None:
            failed = ToolMessage(content=failure_text(sub_id), tool_call_id=tool_call_id, name=call["name"], status="error")
            return Command(update={"messages": [failed]}, goto=SUPERVISOR_NODE)
        if not decision.proceed:
            reason = decision.rejection_reason or DEFAULT_REJECTION
            rejected = ToolMessage(content=f"[Delegation Rejected] {reason}", tool_call_id=tool_call_id, name=call["name"])
            return Command(update={"messages": [rejected]}, goto=SUPERVISOR_NODE)
        prompt = decision.modified_prompt if decision.modified_prompt is not None else task["prompt"]
        if guarded:  # the prompt as the subagent will get it, hook applied (SPEC §30)
            prompt, stopped = await guard_delegation(parent, sub_id, call, prompt, handle, config, Emitter(runtime, handle))
            if stopped is not None:
                return Command(update={"messages": [stopped]}, goto=SUPERVISOR_NODE)
        values = child.to_dict()
        if handle.durable:
            check_json(values, f"on_delegation_start for {sub_id!r}")
        forward: DelegationTask = {
            **task,
            "prompt": prompt,
            GUARD_CHECKED: guarded or bool(task.get(GUARD_CHECKED)),  # type: ignore[misc]
            "max_steps": decision.modified_max_steps or task.get("max_steps"),
            "budget": decision.modified_budget.model_dump(exclude_none=True) if decision.modified_budget else None,
            "request_context": values,
            "thread_metadata": decision.thread_metadata,
        }
        if decision.modified_output_schema is not None:
            # JSON in the checkpointed Send; the declared type rides in memory for this run
            forward["output_schema"] = decision.modified_output_schema.json_schema
            handle.output_schemas[tool_call_id] = decision.modified_output_schema
        return Command(goto=Send(key, forward))

    delegation_start.__name__ = f"{key}_start"
    return delegation_start
