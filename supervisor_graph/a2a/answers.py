"""What waits on an `input-required` task, and the follow-up message that answers it.

The convention (docs/mcp-and-a2a.md, "A2A"): send a message on the same task (its
`task_id`; its `context_id` may be left out) holding either

- a data part holding a decision (SPEC §29): `{"approved": true}`, `{"approved": true,
  "args": {...}}` (run it with these arguments) or `{"approved": false, "message":
  "..."}` (reject it; the agent sees the reason), with `"interruptId"` to answer one
  approval of several (without it the answer goes to every waiting one), or
- the text `approve` (also `approved`, `yes`, `y`, `ok`) or `decline` (also `declined`,
  `deny`, `reject`, `no`, `n`), case and surrounding punctuation ignored.

A tool waiting in `suspend()` takes a data part `{"resume": {...}}` (the payload its
resume schema describes); `decline` cancels it. Anything else leaves the task
`input-required` and says again what it waits for.

The keys of our data parts are camelCase, as all of A2A 1.0's JSON is (the test kit's
DM-SERIAL-001): `interruptId`, `toolName`, `inputSchema`, `responseSchema`,
`allowedDecisions`. An answer's `interrupt_id`, the snake_case key sent before, is
still read for one release (until 0.2.0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ag_ui.core import Interrupt, ResumeEntry

__all__ = ["APPROVE_WORDS", "DECLINE_WORDS", "INTERRUPT_ID_KEYS", "describe", "plan_answers", "waiting_data"]

APPROVE_WORDS = frozenset({"approve", "approved", "yes", "y", "ok"})
DECLINE_WORDS = frozenset({"decline", "declined", "deny", "reject", "no", "n"})
# the key naming the approval an answer is for: camelCase, and the snake_case one sent
# before A2A 1.0's naming was followed (read for one more release, never sent)
INTERRUPT_ID_KEYS = ("interruptId", "interrupt_id")
HOW = (
    'Answer on this task with the text "approve" or "decline", or a data part {"approved": true}, '
    '{"approved": true, "args": {...}} (run it with these arguments) or {"approved": false, "message": "..."} '
    "(reject it, saying why)."
)


def _meta(interrupt: Interrupt) -> Mapping[str, Any]:
    meta = interrupt.metadata if isinstance(interrupt.metadata, Mapping) else {}
    inner = meta.get("supervisor_graph") or meta.get("mastra") or {}
    return inner if isinstance(inner, Mapping) else {}


def _field(meta: Mapping[str, Any], name: str) -> Any:
    """A field of the interrupt's metadata: snake_case, or camelCase in the Mastra dialect."""
    head, *rest = name.split("_")
    return meta.get(name, meta.get(head + "".join(part.title() for part in rest)))


def _is_approval(interrupt: Interrupt) -> bool:
    return interrupt.reason.endswith("tool_approval")


def describe(interrupts: Sequence[Interrupt]) -> str:
    """A sentence per waiting item, then how to answer."""
    lines = []
    for item in interrupts:
        meta = _meta(item)
        name = _field(meta, "tool_name") or "a tool"
        if _is_approval(item):
            lines.append(f"Waiting for approval: {name} with {meta.get('args') or {}}.")
        else:
            lines.append(f"Waiting for input to {name}: {item.message or 'see the data part'}.")
    lines.append(
        HOW if any(_is_approval(i) for i in interrupts) else 'Answer with a data part {"resume": {...}} or "decline".'
    )
    return " ".join(lines)


def waiting_data(interrupts: Sequence[Interrupt]) -> dict[str, Any]:
    """The data part of an `input-required` status: each waiting item and its id, with
    camelCase keys (A2A 1.0 JSON; `args` and the schemas are the tool's own, as they are)."""
    items = []
    for item in interrupts:
        meta = _meta(item)
        entry: dict[str, Any] = {
            "interruptId": item.id,
            "kind": "approval" if _is_approval(item) else "suspend",
            "toolName": _field(meta, "tool_name"),
            "args": meta.get("args") or {},
            "message": item.message,
            "responseSchema": item.response_schema,
        }
        if _is_approval(item):
            entry["allowedDecisions"] = _field(meta, "allowed_decisions")
            entry["inputSchema"] = _field(meta, "input_schema")
        items.append(entry)
    return {"interrupts": items}


def _answer_id(answer: Mapping[str, Any]) -> Any:
    """The approval an answer names (None: every waiting one)."""
    return next((answer[key] for key in INTERRUPT_ID_KEYS if answer.get(key) is not None), None)


def _word(texts: Sequence[str]) -> bool | None:
    said = " ".join(texts).strip().strip(".!").strip().lower()
    if said in APPROVE_WORDS:
        return True
    if said in DECLINE_WORDS:
        return False
    return None


def plan_answers(
    interrupts: Sequence[Interrupt], texts: Sequence[str], data: Sequence[Any]
) -> list[ResumeEntry] | None:
    """The resume entries a follow-up message means (None: it answers nothing)."""
    entries: list[ResumeEntry] = []
    word = _word(texts)
    for item in interrupts:
        chosen = [d for d in data if isinstance(d, Mapping) and _answer_id(d) in (None, item.id)]
        answer = chosen[-1] if chosen else None
        if _is_approval(item):
            if answer is not None and isinstance(answer.get("approved"), bool):
                # the decision as sent (checked by the bridge, which refuses it whole if wrong)
                decision = {k: v for k, v in answer.items() if k not in INTERRUPT_ID_KEYS}
                entries.append(ResumeEntry(interrupt_id=item.id, status="resolved", payload=decision))
            elif answer is None and word is not None:
                entries.append(
                    ResumeEntry(
                        interrupt_id=item.id, status="resolved" if word else "cancelled", payload={"approved": word}
                    )
                )
        elif answer is not None and "resume" in answer:
            entries.append(ResumeEntry(interrupt_id=item.id, status="resolved", payload=answer["resume"]))
        elif word is False or (answer is not None and answer.get("approved") is False):
            entries.append(ResumeEntry(interrupt_id=item.id, status="cancelled"))
    return entries or None
