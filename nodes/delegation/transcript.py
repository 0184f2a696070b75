"""A delegation's record filled in from its subagent's last state: the transcript,
usage and tool results, then the answer and how the subagent finished.

The subagent node, the direct path and the background host each read a delegation's
outcome through these, so all of them report it alike.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from supervisor_graph.nodes.delegation.result import DelegationRecord, abort_reason, mark_aborted
from supervisor_graph.nodes.observability.cost import usage_by_model_of_run
from supervisor_graph.nodes.state import run_start, usage_by_agent_of_run, usage_total
from supervisor_graph.nodes.steps.structured_output import OutputSchema, StructuredOutputError
from supervisor_graph.nodes.text import text_of
from supervisor_graph.nodes.turn.routing import last_turn, unanswered

__all__ = ["record_answer", "record_transcript"]

log = logging.getLogger("supervisor_graph")


def record_transcript(record: DelegationRecord, latest: dict[str, Any]) -> None:
    """A delegation's transcript, usage and tool results from its subagent's last state
    (a failed run keeps its partial transcript)."""
    messages = latest.get("messages") or []
    start = run_start(messages)
    record.messages = list(messages[start:])
    record.usage_by_agent = usage_by_agent_of_run(record.messages, 0, record.agent_id)
    record.usage_by_model = usage_by_model_of_run(record.messages, 0, record.agent_id)
    record.usage = usage_total(record.usage_by_agent)
    record.sub_agent_tool_results = _tool_results(record.messages)


def record_answer(record: DelegationRecord, latest: dict[str, Any], abort_signal: Any = None) -> None:
    """A finished delegation's text and finish reason (after `record_transcript`). A
    subagent that stopped at the run's abort signal (`abort_signal`, for its reason)
    ended, but did not do its task: a failed delegation (SPEC §10)."""
    _, last = last_turn(record.messages)
    record.text = text_of(last) if last is not None and not last.tool_calls else ""
    record.finish_reason = latest.get("finish_reason") or "stop"
    if record.finish_reason == "abort":
        mark_aborted(record, abort_reason(abort_signal))
        return
    invalid = latest.get("structured_output_error")
    if invalid:  # the subagent's answer never matched its schema: a failed delegation (SPEC §28)
        raise StructuredOutputError.from_dict(invalid)
    value = latest.get("structured_response")
    if value is not None and record.finish_reason != "tool-calls":
        record.object = value
        record.text = OutputSchema.dumps(value)
    if record.finish_reason == "tool-calls":
        record.sub_agent_pending_tool_calls = [
            {"tool_call_id": call["id"], "tool_name": call["name"], "args": call["args"]}
            for call in unanswered(record.messages)
        ]
        if last is not None:
            record.text = text_of(last)
        log.warning(
            "subagent %r called client tools it cannot run (%s); they never ran",
            record.agent_id,
            ", ".join(c["tool_name"] for c in record.sub_agent_pending_tool_calls),
        )


def _tool_results(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    calls: dict[str, dict[str, Any]] = {}
    out = []
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                calls[call["id"] or ""] = dict(call)
        elif isinstance(message, ToolMessage):
            made = calls.get(message.tool_call_id, {})
            out.append(
                {
                    "tool_call_id": message.tool_call_id,
                    "tool_name": message.name or made.get("name"),
                    "args": made.get("args", {}),
                    "result": message.content,
                    "status": message.status,
                }
            )
    return out
