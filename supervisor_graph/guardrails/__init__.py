"""Guardrails (SPEC §30): guards at the boundaries of the delegation tree.

    from supervisor_graph.guardrails import guardrail, redact, block
    Agent(..., guardrails=[guardrail(my_check, at=["input", "tool_result"])])

The protocol (contexts, verdicts, declarations) lives in `supervisor_graph.nodes.guards`,
which the graph's nodes run; this package is what users import. It imports `nodes` (the
protocol) and `declaration` (model strings, for the guards that ask a model); nothing
above it.
"""

from __future__ import annotations

from supervisor_graph.nodes.guards import (
    BOUNDARIES,
    Allow,
    Block,
    Boundary,
    Escalate,
    GuardContext,
    GuardError,
    Guardrail,
    Redact,
    Retry,
    Tripwire,
    TripwireError,
    Verdict,
    allow,
    block,
    escalate,
    guardrail,
    redact,
    retry,
)

__all__ = [
    "BOUNDARIES",
    "Allow",
    "Block",
    "Boundary",
    "Escalate",
    "GuardContext",
    "GuardError",
    "Guardrail",
    "Redact",
    "Retry",
    "Tripwire",
    "TripwireError",
    "Verdict",
    "allow",
    "block",
    "escalate",
    "guardrail",
    "redact",
    "retry",
]
