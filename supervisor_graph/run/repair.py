"""Keeping a thread's transcript valid (SPEC §19): every tool call gets exactly one
result, whatever stopped the run that made it (an abort, a failure, a crashed process,
an approval dropped with `pending="decline"`), so a provider that checks transcripts
accepts the thread's next call."""

from __future__ import annotations

import logging
from collections.abc import Callable, Container
from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.types import Interrupt

from supervisor_graph.checkpointers.compat import INTERRUPT_WRITE
from supervisor_graph.checkpointers.leases import Lease
from supervisor_graph.declaration.errors import PendingApprovalError, StorageUnavailableError
from supervisor_graph.nodes.turn.routing import SUPERVISOR_NODE, last_turn
from supervisor_graph.nodes.turn.tools import ABORTED_TOOL_TEXT, DECLINED_TEXT, INTERRUPTED_TOOL_TEXT, approval_consumed
from supervisor_graph.run.busy import discard_last_run
from supervisor_graph.run.results import client_tools, pending_items

if TYPE_CHECKING:
    from supervisor_graph.run.call import Run

__all__ = [
    "ABORTED_TOOL_TEXT",
    "DROPPED_TOOL_TEXT",
    "INTERRUPTED_TOOL_TEXT",
    "close_unanswered",
    "repair_after",
    "settle_thread",
    "waiting_interrupts",
]

log = logging.getLogger("supervisor_graph")

DROPPED_TOOL_TEXT = (
    "[Interrupted] A new message arrived while this call waited for an answer "
    '(pending="decline"); it did not run.'
)


async def close_unanswered(
    graph: Any,
    config: RunnableConfig,
    text: Callable[[ToolCall], str],
    reason: str,
    *,
    keep: Container[str] = (),
) -> dict[str, Any]:
    """Give every unanswered call of the thread's last turn a result `text(call)` (tools
    named in `keep`, client tools the caller answers, stay open); the thread's values."""
    snapshot = await graph.aget_state(config)
    values = dict(snapshot.values)
    messages = values.get("messages") or []
    index, ai = last_turn(messages)
    answered = {m.tool_call_id for m in messages[index + 1 :] if isinstance(m, ToolMessage)}
    missing = [
        ToolMessage(content=text(call), tool_call_id=call["id"] or "", name=call["name"], status="error")
        for call in (ai.tool_calls if ai is not None else ())
        if call["id"] not in answered and call["name"] not in keep
    ]
    if missing or snapshot.tasks:
        # The snapshot's values include what the stopped step's finished tasks wrote (the
        # supervisor's tool calls, some delegations' results), but those writes are only
        # pending on the saved checkpoint, and an update as a node starts from the saved
        # checkpoint without them: the results would be stored without their calls, or
        # the calls lost. So first commit them (LangGraph's "(None, END)" update applies
        # finished tasks' writes and drops the rest), then add the missing results.
        # (two updates on `config`, not one bulk update: a bulk update's second step
        # starts from the first's returned config, which drops the run's metadata, and
        # with it the thread's owner)
        if snapshot.tasks:
            await graph.aupdate_state(config, None, as_node=END)
        if missing:
            await graph.aupdate_state(config, {"messages": missing, "finish_reason": reason}, as_node=SUPERVISOR_NODE)
        values = dict((await graph.aget_state(config)).values)
    return values


async def waiting_interrupts(graph: Any, saver: Any, config: RunnableConfig) -> tuple[list[Interrupt], list[Interrupt]]:
    """The interrupts on a thread: those still waiting for an answer, and approvals
    already consumed by a call that started and was cut short (a crash inside the tool),
    which are never offered again. One cheap read when there are none."""
    latest = await saver.aget_tuple(config)
    if latest is None or not any(write[1] == INTERRUPT_WRITE for write in latest.pending_writes or ()):
        return [], []
    waiting: list[Interrupt] = []
    consumed: list[Interrupt] = []
    thread_id = (config.get("configurable") or {}).get("thread_id")
    for item in (await graph.aget_state(config)).interrupts:
        value = item.value if isinstance(item.value, dict) else {}
        started = value.get("kind") == "approval" and await approval_consumed(
            graph.store, thread_id, value.get("namespace") or "", value.get("tool_call_id") or ""
        )
        (consumed if started else waiting).append(item)
    return waiting, consumed


async def settle_thread(run: Run, lease: Lease) -> None:
    """Before new input runs on a thread: close what a crashed run left unanswered, and
    refuse (or decline) approvals still waiting (SPEC §17, §19). The lease row says
    whether either can be the case, so a thread with neither is not read here."""
    if lease.repair:  # the previous run's process died mid-run
        await close_unanswered(
            run.graph, run.config, lambda call: INTERRUPTED_TOOL_TEXT, "error", keep=client_tools(run.agent)
        )
    if not (lease.waiting or lease.repair):
        return
    waiting, consumed = await waiting_interrupts(run.graph, run.saver, run.config)
    if consumed and not waiting:  # approved calls cut short by a crash: they end as unknown
        await close_unanswered(run.graph, run.config, lambda call: INTERRUPTED_TOOL_TEXT, "error")
        return
    if not waiting:
        return
    if run.options.on_busy == "rollback":  # the paused run is discarded, approvals included (SPEC §29)
        await discard_last_run(run.graph, run.saver, run.config)
        return
    if run.options.pending == "decline":
        declined = {item.value.get("tool_call_id") for item in waiting if isinstance(item.value, dict)}
        await close_unanswered(
            run.graph, run.config, lambda call: DECLINED_TEXT if call["id"] in declined else DROPPED_TOOL_TEXT, "stop"
        )
        return
    items = pending_items(run, waiting)
    names = ", ".join(f"{item.tool_name} ({item.kind}, interrupt {item.interrupt_id})" for item in items)
    raise PendingApprovalError(
        f"thread {run.thread_id!r} waits for answers before it takes a new message: {names}; answer them "
        '(approve_tool_call / decline_tool_call / resume_generate) or pass pending="decline" to decline them',
        items,
    )


async def repair_after(run: Run, exc: Exception) -> None:
    """`run.repair("error")` after the run failed with `exc`, unless the database is what
    failed: the repair could not be saved either, so the thread's lease is given back
    flagged for repair (or lapses, which flags it too) and its next run repairs it. A
    repair that fails is logged, so the run's own error is the one its caller sees."""
    try:
        if isinstance(exc, StorageUnavailableError):
            raise exc
        await run.repair("error")
    except StorageUnavailableError as error:
        if run.lease is not None:
            run.lease.owes_repair = True
        if error is not exc:
            log.warning("run %s: its thread could not be repaired now (%s); its next run repairs it", run.run_id, error)
