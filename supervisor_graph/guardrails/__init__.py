"""Guardrails (SPEC §30): guards at the boundaries of the delegation tree.

    from supervisor_graph.guardrails import guardrail, pii, prompt_injection
    Agent(..., guardrails=[pii(at=["input", "output"]), prompt_injection(model="openai/gpt-5-mini"),
                           guardrail(my_check, at="tool_result")])

The protocol (contexts, verdicts, declarations) lives in `supervisor_graph.nodes.guards.core`,
which the graph's nodes run; this package is what users import, with the built-in guards:
`pii` (deterministic detectors, `detectors.py`; presidio as an extra, `presidio.py`) and
the judges `prompt_injection`, `moderation` and `topic` (`judges.py`). It imports `nodes`
(the protocol) and `declaration` (model strings, for the guards that ask a model);
nothing above it.
"""

from __future__ import annotations

from supervisor_graph.guardrails.detectors import PII_KINDS, PIIMatch, detect_pii
from supervisor_graph.guardrails.judges import GuardJudgeError, GuardJudgement, moderation, prompt_injection, topic
from supervisor_graph.guardrails.pii import pii
from supervisor_graph.nodes.guards.core import (
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
    "PII_KINDS",
    "Allow",
    "Block",
    "Boundary",
    "Escalate",
    "GuardContext",
    "GuardError",
    "GuardJudgeError",
    "GuardJudgement",
    "Guardrail",
    "PIIMatch",
    "Redact",
    "Retry",
    "Tripwire",
    "TripwireError",
    "Verdict",
    "allow",
    "block",
    "detect_pii",
    "escalate",
    "guardrail",
    "moderation",
    "pii",
    "prompt_injection",
    "redact",
    "retry",
    "topic",
]
