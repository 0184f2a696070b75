"""Background tasks as the memory's store keeps them: one record per task under
`BACKGROUND_NAMESPACE`, the control requests (cancel / update) addressed to a task
under `requests_namespace(task_id)` (one item per request, so two processes never
overwrite each other's), and the view `Memory.list_background_tasks` gives of them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from supervisor_graph.nodes.background.tasks import FINAL_STATUSES

__all__ = ["BACKGROUND_NAMESPACE", "REQUESTS_NAMESPACE", "BackgroundTask", "requests_namespace", "task_view"]

BACKGROUND_NAMESPACE = ("supervisor_graph", "background_tasks")
REQUESTS_NAMESPACE = ("supervisor_graph", "background_requests")


def requests_namespace(task_id: str) -> tuple[str, ...]:
    """Where the control requests of one task are stored (read by the process running it)."""
    return (*REQUESTS_NAMESPACE, task_id)


class BackgroundTask(BaseModel):
    """One background task of a thread (`memory.list_background_tasks`)."""

    task_id: str
    agent_key: str
    agent_id: str
    tool_call_id: str
    status: str
    tries: int = 0
    result_text: str | None = None
    waiting: list[dict[str, Any]] = []
    """Approvals (or suspended tools) a running task waits for."""
    object: Any = None
    """The subagent's typed answer (JSON) when it has an output schema (SPEC §28)."""


def task_view(told: dict[str, Any], record: dict[str, Any] | None) -> BackgroundTask:
    """A task as the parent's state records it, with the store's progress when it is newer."""
    merged = {**told, **(record or {})} if told.get("status") not in FINAL_STATUSES else {**(record or {}), **told}
    return BackgroundTask(
        task_id=merged["task_id"],
        agent_key=merged.get("agent_key", ""),
        agent_id=merged.get("agent_id", ""),
        tool_call_id=merged.get("tool_call_id", ""),
        status=merged.get("status", "running"),
        tries=merged.get("tries", 0),
        result_text=merged.get("result_text"),
        waiting=merged.get("waiting") or [],
        object=merged.get("object"),
    )
