"""The approval journal (SPEC §19): an approved tool call is recorded in the run's
LangGraph store before its side effect, so that an approval is consumed once. After a
crash inside the tool, the call ends as "outcome unknown" instead of running again
(`Approvals`, nodes/steps/decisions.py), and the repair of a stopped run tells a call
that started from one still waiting (supervisor_graph/run/repair.py).
"""

from __future__ import annotations

import json
from typing import Any

from langgraph.store.base import BaseStore

from supervisor_graph.nodes.steps.protocol import ToolRequest

__all__ = ["INTERRUPTED_TOOL_TEXT", "TOOL_RUNS_NAMESPACE", "approval_consumed", "consume_approval", "tool_run_key"]

INTERRUPTED_TOOL_TEXT = "[Interrupted] outcome unknown: the process stopped while this tool was running"

# where, in the run's store, an approved call is recorded once it has started
TOOL_RUNS_NAMESPACE = ("supervisor_graph", "tool_runs")


def tool_run_key(thread_id: Any, namespace: str, tool_call_id: str) -> str:
    """The journal key of one call: its thread, the namespace of the graph that made it
    (a delegation's, or "" for the top-level agent) and its id."""
    return json.dumps([str(thread_id), namespace, tool_call_id])


async def approval_consumed(store: BaseStore | None, thread_id: Any, namespace: str, tool_call_id: str) -> bool:
    """True when an approved call has already started (a crash may have cut it short)."""
    if store is None:
        return False
    return await store.aget(TOOL_RUNS_NAMESPACE, tool_run_key(thread_id, namespace, tool_call_id)) is not None


async def consume_approval(request: ToolRequest) -> bool:
    """Record that the approved call starts, before its side effect: True when it had
    started already (its outcome is unknown; it must not run again). A run without a
    store keeps no journal."""
    store: BaseStore | None = getattr(request.runtime, "store", None)
    if store is None:
        return False
    call = request.tool_call
    call_id = call["id"] or ""
    thread_id = (request.config.get("configurable") or {}).get("thread_id")
    if await approval_consumed(store, thread_id, request.namespace, call_id):
        return True
    value = {"tool_name": call["name"], "run_id": request.handle.run_id}
    await store.aput(TOOL_RUNS_NAMESPACE, tool_run_key(thread_id, request.namespace, call_id), value, index=False)
    return False
