"""The end of a delegation (SPEC §6.5-6.7): the `<key>.complete` node that runs
`on_delegation_complete`, the same hook for a delegation that finished elsewhere (a
background task), and the tool result the supervisor model sees.

Every way to run (a leaf's loop, a subgraph, a remote server, A2A) ends in
`finish_delegation`, which goes through `<key>.complete` only when the run has that hook
(or guards results and must ask a person), so an unset hook costs no super-step.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from supervisor_graph.nodes.delegation.hooks import (
    DelegationCompleteContext,
    DelegationCompleteResult,
    run_delegation_hook,
)
from supervisor_graph.nodes.delegation.opening import Delegation
from supervisor_graph.nodes.delegation.references import assign_ref, ref_line
from supervisor_graph.nodes.delegation.result import DelegationRecord, abort_reason, failure_text, mark_aborted
from supervisor_graph.nodes.guards.boundaries import announce_result, guard_result
from supervisor_graph.nodes.guards.core import guarded_at
from supervisor_graph.nodes.observability.cost import USAGE_BY_MODEL_KEY
from supervisor_graph.nodes.observability.events import Emitter
from supervisor_graph.nodes.observability.tracing import announce
from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions
from supervisor_graph.nodes.scope.lookup import run_scope
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.state import USAGE_BY_AGENT_KEY
from supervisor_graph.nodes.turn.routing import SUPERVISOR_NODE, complete_node
from supervisor_graph.nodes.turn.tools import ended_by_cancel

__all__ = ["abort_delegation", "complete_hook", "finish_delegation", "make_complete_node", "result_message"]

log = logging.getLogger("supervisor_graph")

# how long `on_delegation_complete` may take on a delegation an abort cut short: the
# abort waits for it, and an abort stops the run at once (SPEC §10)
ABORT_HOOK_GRACE_S = 2.0


def result_message(
    opts: RunOptions,
    handle: RunHandle,
    record: DelegationRecord,
    call: dict[str, Any],
    artifact: dict[str, Any],
    preview: int | None = None,
) -> ToolMessage:
    """The tool result the supervisor model sees for a finished delegation. `preview`:
    the subagent's `result_preview_tokens`; a longer answer is cut to about that many
    tokens (4 characters a token) and gets a reference to the whole (SPEC §25). With
    `include_sub_agent_tool_results_in_model_context` it is the whole outcome as JSON,
    whose `text` is still the hook's `result_text` or the preview, never the raw answer."""
    replaced = record.result_text is not None
    if not record.success:
        return ToolMessage(
            content=record.result_text if replaced else failure_text(record.agent_id, record.error),  # type: ignore[arg-type]
            tool_call_id=record.tool_call_id,
            name=call["name"],
            artifact=artifact,
            status="error",
        )
    content = record.result_text if replaced else record.text
    assert content is not None
    cut = preview is not None and len(content) > preview * 4
    if (opts.delegation.enable_result_references or cut) and content:
        record.ref_id = assign_ref(handle, record.agent_id, content)
        artifact["ref_id"] = record.ref_id
    if cut:
        assert preview is not None
        content = preview_text(content, preview * 4, record.ref_id or "")
    if opts.delegation.include_sub_agent_tool_results_in_model_context:
        # the full result, with the text the model would see without the flag (a hook's
        # `result_text`, a preview) in place of the subagent's own: a redaction holds
        content = json.dumps({**record.outcome(), "text": content, "agent_id": record.agent_id}, default=str)
    if record.sub_agent_pending_tool_calls:
        never_ran = ", ".join(
            f"{c['tool_name']}({json.dumps(c['args'], default=str)})" for c in record.sub_agent_pending_tool_calls
        )
        content += (
            f"\n\n[{record.agent_id} stopped at tools only the caller can run; these never ran: {never_ran}]"
        )
    if record.ref_id:
        content += ref_line(record.ref_id)
    return ToolMessage(content=content, tool_call_id=record.tool_call_id, name=call["name"], artifact=artifact)


async def complete_hook(
    opts: RunOptions, handle: RunHandle, record: DelegationRecord, sub_id: str
) -> tuple[DelegationCompleteResult | None, bool]:
    """Run `on_delegation_complete` on a finished delegation (None: the run has no such
    hook), and whether it bailed. Its `result_text` lands in `record.result_text`; with
    `hook_error_strategy="throw"` a failing hook turns a success into a failure."""
    hook = opts.delegation.on_delegation_complete
    if hook is None:
        return None, False
    ctx = DelegationCompleteContext(
        primitive_id=sub_id,
        result=record.to_result(),
        success=record.success,
        error=record.error,
        messages=list(record.messages),
        tool_call_id=record.tool_call_id,
        run_id=handle.run_id,
    )
    throw = opts.delegation.hook_error_strategy == "throw"
    outcome: DelegationCompleteResult
    outcome, thrown = await run_delegation_hook(handle, throw, hook, ctx, DelegationCompleteResult, "on_delegation_complete")
    if thrown is not None and record.success:
        # the delegation becomes a failure; a failed one keeps its own error
        record.success, record.error, record.text = False, thrown.cause, ""
    if outcome.result_text is not None:
        record.result_text = outcome.result_text
    return outcome, ctx.bailed


async def abort_delegation(opts: RunOptions, handle: RunHandle, record: DelegationRecord, sub_id: str) -> None:
    """The run was aborted while this delegation ran (its node is being cancelled): the
    delegation is a failure with the abort's reason, and `on_delegation_complete` is told
    so. What the hook returns no longer matters: the run is over, and the facade gives
    the call its `[Aborted]` result."""
    mark_aborted(record, abort_reason(handle.abort_signal))
    if opts.delegation.on_delegation_complete is None:
        return
    try:
        async with asyncio.timeout(ABORT_HOOK_GRACE_S):
            await complete_hook(opts, handle, record, sub_id)
    except TimeoutError:
        log.warning("on_delegation_complete for %r took over %.0f s after the abort; not waited for", sub_id, ABORT_HOOK_GRACE_S)


async def finish_delegation(delegation: Delegation) -> Command[Any]:
    """What a subagent node returns once its subagent (local or remote) has run: on to
    `<key>.complete` when the run has that hook or the parent guards results (a guard's
    retry runs the delegation's task again, where it can be), else the tool result for
    the supervisor (a caller's cancel inside the delegation stops the parent too)."""
    config, handle, record, emit = delegation.config, delegation.handle, delegation.record, delegation.emit
    parent, key, call, namespace = delegation.parent, delegation.key, delegation.call, delegation.namespace
    guarded = "result" in guarded_at(parent)
    artifact = delegation.artifact()
    if ended_by_cancel(record.messages):  # the caller cancelled a suspended call: stop here too
        artifact["cancelled"] = True
    if record.usage_by_agent:
        # checkpointed with the tool message, so the parent's usage by agent survives a
        # pause, a resume and a new process exactly as its usage does
        artifact[USAGE_BY_AGENT_KEY] = record.usage_by_agent
    if record.usage_by_model:  # the same calls by model: the parent's result prices them when read (SPEC §33)
        artifact[USAGE_BY_MODEL_KEY] = record.usage_by_model
    hooked = delegation.opts.delegation.on_delegation_complete is not None
    payload: dict[str, Any] = {"call": call, "artifact": artifact, "text": record.text, "prompt": record.prompt}
    if guarded:  # a guard's retry runs the delegation again (SPEC §30)
        payload["task"] = delegation.task if delegation.rerunnable else None
        payload["namespace"] = namespace
    if guarded and not hooked:  # its guards decide here (SPEC §30)
        if record.success:
            again = await guard_result(parent, key, record.agent_id, payload, artifact, record, handle, config, emit, in_node=True)
            if again is not None:
                return again  # run again with the guard's feedback, or to `<key>.complete` for a person
        await announce_result(config, handle, record, namespace, emit)
    elif not guarded:  # else once its guards have decided, in `<key>.complete`
        summary = {**record.summary(), "namespace": namespace}
        if emit.active:
            emit("delegation-complete", summary)
        await announce(config, "delegation-complete", summary, handle.agent_path)
    if hooked:
        return Command(goto=Send(complete_node(key), payload))
    message = result_message(delegation.opts, handle, record, call, artifact, parent.preview_tokens.get(key))
    if emit.active:
        emit(
            "tool-result" if record.success else "tool-error",
            {"tool_name": call["name"], "result": message.content, **record.summary()},
        )
    update: dict[str, Any] = {"messages": [message]}
    if artifact.get("cancelled"):
        update["bail"] = True
    return Command(update=update, goto=SUPERVISOR_NODE)


def make_complete_node(parent: AgentSpec, key: str, sub_id: str) -> Any:
    async def delegation_complete(payload: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        opts, handle = run_scope(parent, config, runtime)
        call = payload["call"]
        artifact: dict[str, Any] = dict(payload["artifact"])
        tool_call_id = call["id"] or ""
        record: DelegationRecord | None = handle.delegations.get(tool_call_id)
        if record is None:  # resumed in a new process: rebuild what the checkpoint has
            record = DelegationRecord(
                tool_call_id=tool_call_id,
                key=key,
                agent_id=sub_id,
                prompt=payload.get("prompt", ""),
                success=artifact.get("success", True),
                text=payload.get("text", ""),
                usage=artifact.get("usage") or {},
                finish_reason=artifact.get("finish_reason", "stop"),
                sub_agent_thread_id=artifact.get("sub_agent_thread_id"),
                sub_agent_resource_id=artifact.get("sub_agent_resource_id"),
            )
            handle.delegations[tool_call_id] = record
        update: dict[str, Any] = {}
        if "result" in guarded_at(parent):  # before the hook, the model and the refs see it (SPEC §30)
            emit = Emitter(runtime, handle)
            if record.success:
                again = await guard_result(parent, key, sub_id, payload, artifact, record, handle, config, emit)
                if again is not None:
                    return again  # sent back: the delegation runs again with the guard's feedback
            await announce_result(config, handle, record, payload.get("namespace", ""), emit)
        outcome, bailed = await complete_hook(opts, handle, record, sub_id)
        if outcome is not None:
            if not record.success:
                artifact["success"] = False
            if outcome.feedback:
                update["feedback"] = [outcome.feedback]
            if bailed:
                update["bail"] = True
        message = result_message(opts, handle, record, call, artifact, parent.preview_tokens.get(key))
        emit = Emitter(runtime, handle)
        if emit.active:
            emit(
                "tool-result" if record.success else "tool-error",
                {"tool_name": call["name"], "result": message.content, **record.summary()},
            )
        update["messages"] = [message]
        if artifact.get("cancelled"):  # the caller cancelled a suspended call in the subagent
            update["bail"] = True
        return Command(update=update, goto=SUPERVISOR_NODE)

    delegation_complete.__name__ = f"{key}_complete"
    return delegation_complete


def preview_text(text: str, limit: int, ref_id: str) -> str:
    """The first `limit` characters of `text` (cut at a word), saying how to get the rest."""
    head = text[:limit]
    if " " in head[limit // 2 :]:
        head = head[: head.rindex(" ")]
    return (
        f"{head.rstrip()} …\n\n[Preview: the full answer is about {len(text) // 4} tokens. To use all of it, pass "
        f'context_from_refs=["{ref_id}"] to a delegation.]'
    )
