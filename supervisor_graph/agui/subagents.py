"""Subagent invocations as AG-UI sees them (`subagent_visibility="attributed"`).

Each delegation is one invocation, identified by a `subagent_run_id` derived from the
LangGraph run that started it and the delegation's checkpoint namespace. Both survive a
pause and resume (a resumed run keeps its run id, and LangGraph re-runs the paused task
under the same namespace), so a resumed run announces the same id again, while two
delegations of one run never share one (their tasks differ even when tool call ids
repeat across steps).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

__all__ = ["Invocation", "SubagentTracker", "error_code", "subagent_run_id"]

_IDS = uuid.UUID("6f1c3a52-9d0e-4b8e-a3f4-5a7c2e9b1d60")


def subagent_run_id(run_id: str, namespace: str) -> str:
    """The stable id of the delegation stored under `namespace` in run `run_id`."""
    return str(uuid.uuid5(_IDS, f"{run_id}|{namespace}"))


def error_code(error_type: str | None, *, mastra: bool = False) -> str:
    """`SUBAGENT_ERROR` (its model or a tool failed) or `GUARDRAIL` (a guardrail or
    tripwire blocked it), from the failed delegation's exception type name."""
    name = (error_type or "").lower()
    if "guardrail" in name or "tripwire" in name:
        return "MASTRA_TRIPWIRE" if mastra else "GUARDRAIL"
    return "MASTRA_SUBAGENT_ERROR" if mastra else "SUBAGENT_ERROR"


@dataclass(slots=True)
class Invocation:
    """One open delegation."""

    subagent_run_id: str
    namespace: str
    name: str
    tool_call_id: str
    parent: str | None = None
    interrupt_ids: list[str] = field(default_factory=list)


class SubagentTracker:
    """Open invocations by namespace, closed deepest first."""

    def __init__(self) -> None:
        self.open: dict[str, Invocation] = {}
        self.finished: set[str] = set()

    def start(self, invocation: Invocation) -> bool:
        """Register an invocation; False when it is already open or done in this run."""
        if invocation.namespace in self.open or invocation.subagent_run_id in self.finished:
            return False
        self.open[invocation.namespace] = invocation
        return True

    def parent_of(self, namespace: str) -> Invocation | None:
        """The open invocation the graph at `namespace` runs in (None: the top level)."""
        return self.open.get(namespace) if namespace else None

    def close(self, namespace: str) -> list[Invocation]:
        """The invocation at `namespace` and every open one inside it, deepest first."""
        inside = [ns for ns in self.open if ns == namespace or ns.startswith(namespace + "|")]
        inside.sort(key=lambda ns: ns.count("|"), reverse=True)
        closed = [self.open.pop(ns) for ns in inside]
        self.finished.update(inv.subagent_run_id for inv in closed)
        return closed

    def close_all(self) -> list[Invocation]:
        """Every open invocation, deepest first."""
        ordered = sorted(self.open, key=lambda ns: ns.count("|"), reverse=True)
        closed = [self.open.pop(ns) for ns in ordered]
        self.finished.update(inv.subagent_run_id for inv in closed)
        return closed
