"""Delivering background outcomes to the parent thread (SPEC §12): a notice per task that
ended and that the thread has not been told of (followed by the feedback its
`on_delegation_complete` gave, one message per try that gave some), and the re-run (or
failure) of a task whose process died."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from supervisor_graph.background.runner import runner
from supervisor_graph.declaration.errors import ThreadBusyError
from supervisor_graph.memory.lease import ThreadLease
from supervisor_graph.nodes.background.tasks import FINAL_STATUSES, notice
from supervisor_graph.nodes.delegation.control import model_view
from supervisor_graph.nodes.state import feedback_message

if TYPE_CHECKING:
    from supervisor_graph.background.host import RunBackground

__all__ = ["outcomes"]

log = logging.getLogger("supervisor_graph")

STOPPED_TEXT = "The process running it stopped before it finished, and it has no tries left."


async def outcomes(background: RunBackground, state_tasks: dict[str, Any], messages: Sequence[BaseMessage]) -> tuple[
    list[HumanMessage], dict[str, Any]
]:
    """Notices for the parent thread's tasks that ended and that it has not been told of
    (each followed by its hooks' feedback, saved to the thread as a foreground
    delegation's is), and the records' final state (`bail` when a hook bailed: the run
    answering them ends once it has); re-runs (or fails) tasks whose process died."""
    notices: list[HumanMessage] = []
    update: dict[str, Any] = {}
    for task_id, told in state_tasks.items():
        if told.get("status") in FINAL_STATUSES:
            continue
        record = await background.load(task_id)
        if record is None or (record["status"] not in FINAL_STATUSES and not runner.live(task_id)):
            record = await _orphan(background, task_id, record, told, messages)
        if record is None or record["status"] not in FINAL_STATUSES:
            continue
        notices.append(
            notice(task_id, record["agent_key"], record["status"], record.get("result_text") or "", record.get("object"))
        )
        notices.extend(feedback_message(text, "hook") for text in record.get("feedback") or [])
        update[task_id] = {"status": record["status"], "tries": record["tries"], "result_text": record.get("result_text")}
        if record.get("object") is not None:
            update[task_id]["object"] = record["object"]
        if record.get("bail"):
            update[task_id]["bail"] = True
    return notices, update


async def _orphan(
    background: RunBackground,
    task_id: str,
    record: dict[str, Any] | None,
    told: dict[str, Any],
    messages: Sequence[BaseMessage],
) -> dict[str, Any] | None:
    """A task not running in this process: leave it to the process that runs it, or (its
    process died) run it again here, or fail it when it has no tries left."""
    if record is not None and record.get("waiting"):
        return record  # paused on approvals: it waits for an answer, not for a process
    lease = ThreadLease(background.storage.leases, f"bg:{task_id}")
    try:
        await lease.acquire()
    except ThreadBusyError:
        return record  # alive in another process
    try:
        if record is None:  # the process died before the task wrote anything
            record = {
                "task_id": task_id,
                "thread_id": background.thread_id,
                "resource_id": background.resource_id,
                "agent_key": told["agent_key"],
                "agent_id": told["agent_id"],
                "tool_call_id": told["tool_call_id"],
                "prompt": _prompt_of(messages, told["tool_call_id"]),
                "request_context": {},
                "status": "running",
                "tries": 0,
                "result_text": None,
                "waiting": [],
            }
        settings = background.agent.background_setting_for(record["agent_key"])
        retries = settings.retries if settings is not None else 0
        if record["tries"] > retries:
            record["status"], record["result_text"] = "failed", STOPPED_TEXT
            await background.save(record)
            return record
        await background.save(record)
    finally:
        await lease.release()
    launch = background.relaunch(record, model_view(_context_before(messages, record["tool_call_id"])))
    await background.launch(launch)
    log.warning("background task %s was running in a process that stopped; running it again", task_id)
    return record


def _prompt_of(messages: Sequence[BaseMessage], tool_call_id: str) -> str:
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call["id"] == tool_call_id:
                    return str(call["args"].get("prompt", ""))
    return ""


def _context_before(messages: Sequence[BaseMessage], tool_call_id: str) -> list[BaseMessage]:
    for i, message in enumerate(messages):
        if isinstance(message, AIMessage) and any(call["id"] == tool_call_id for call in message.tool_calls):
            return list(messages[: i + 1])
    return list(messages)
