"""Pauses as AG-UI interrupts, and `RunAgentInput.resume` back into answers.

An interrupt id encodes the paused run's id and the tool call id; the client only
round-trips the id, so a resume lists the thread's pending pauses, computes each one's
id the same way and matches. For a tool inside a subagent the run part is the
delegation's `subagent_run_id`, which keeps ids unique when two subagents reuse a tool
call id. `Dialect` holds the two shapes: this project's and `compat="mastra"`.

An approval's answer is one of the decisions of nodes/steps/decisions.py (approve, edit,
reject with a reason), checked there; its interrupt says which ones the tool allows and
the tool's input schema (this project's dialect: the Mastra shapes stay as they are).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ag_ui.core import Interrupt, ResumeEntry

from supervisor_graph.agui.subagents import subagent_run_id
from supervisor_graph.nodes.steps.decisions import ALL_DECISIONS, DecisionError, Reject, parse_decision
from supervisor_graph.nodes.turn.tools import CANCEL_SUSPENDED
from supervisor_graph.run.facade import PendingItem

__all__ = [
    "APPROVAL_SCHEMA",
    "MASTRA",
    "SUPERVISOR_GRAPH",
    "Dialect",
    "Pause",
    "ResumeError",
    "approval_schema",
    "plan_resume",
]

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
}


def approval_schema(allowed: tuple[str, ...], input_schema: dict[str, Any] | None) -> dict[str, Any]:
    """The answers an approval takes: `approved`, with `args` (the tool's input schema)
    when it may be edited and `message` (the reason) when it may be rejected."""
    properties: dict[str, Any] = {"approved": {"type": "boolean"}}
    if "edit" in allowed:
        properties["args"] = input_schema or {"type": "object"}
    if "reject" in allowed:
        properties["message"] = {"type": "string", "description": "Why it was rejected; the model sees it."}
    return {"type": "object", "properties": properties, "required": ["approved"], "additionalProperties": False}


@dataclass(frozen=True, slots=True)
class Dialect:
    """Names and shapes of interrupts, codes and metadata."""

    key: str
    approval_prefix: str
    approval_reason: str
    suspend_reason: str
    approval_type: str
    suspend_type: str
    invalid_approval_code: str
    camel: bool

    def meta(self, **fields: Any) -> dict[str, Any]:
        """`{key: fields}` without the fields set to `OMIT`, with camelCase names in the
        Mastra dialect."""
        kept = {(_camel(k) if self.camel else k): v for k, v in fields.items() if v is not OMIT}
        return {self.key: kept}


OMIT: Any = object()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _dialect(key: str, id_prefix: str, name_prefix: str, *, camel: bool) -> Dialect:
    """A dialect's names, each made from its key or its prefixes the same way in both:
    reasons `<key>:tool_approval`, types and codes under `name_prefix`."""
    return Dialect(
        key=key,
        approval_prefix=f"{id_prefix}-approval",
        approval_reason=f"{key}:tool_approval",
        suspend_reason=f"{key}:tool_suspend",
        approval_type=f"{name_prefix}tool_approval",
        suspend_type=f"{name_prefix}suspend",
        invalid_approval_code=f"{name_prefix.upper()}INVALID_TOOL_APPROVAL",
        camel=camel,
    )


# sg-approval ids, supervisor_graph:tool_approval, tool_approval / suspend, INVALID_TOOL_APPROVAL
SUPERVISOR_GRAPH = _dialect("supervisor_graph", "sg", "", camel=False)
# mastra-approval ids, mastra:tool_approval, mastra_tool_approval / mastra_suspend, MASTRA_INVALID_TOOL_APPROVAL
MASTRA = _dialect("mastra", "mastra", "mastra_", camel=True)


@dataclass(frozen=True, slots=True)
class Pause:
    """A pending approval or suspended tool, from a result or from the thread's state."""

    kind: str
    tool_call_id: str
    tool_name: str
    run_id: str
    namespace: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    agent_path: tuple[str, ...] = ()
    payload: Any = None
    langgraph_id: str = ""
    resume_schema: dict[str, Any] | None = None
    allowed_decisions: tuple[str, ...] = ALL_DECISIONS
    input_schema: dict[str, Any] | None = None
    description: str | None = None

    @classmethod
    def of_item(cls, item: PendingItem) -> Pause:
        return cls(
            kind=item.kind,
            tool_call_id=item.tool_call_id or "",
            tool_name=item.tool_name or "",
            run_id=item.run_id or "",
            namespace=item.namespace,
            args=dict(item.args),
            agent_path=tuple(item.agent_path),
            payload=item.payload if item.kind == "suspend" else None,
            langgraph_id=item.interrupt_id or "",
            resume_schema=item.resume_schema,
            allowed_decisions=tuple(item.allowed_decisions) or ALL_DECISIONS,
            input_schema=item.input_schema,
            description=item.description,
        )

    @classmethod
    def of_value(cls, langgraph_id: str, value: Any) -> Pause:
        value = value if isinstance(value, Mapping) else {}
        return cls(
            kind=str(value.get("kind", "approval")),
            tool_call_id=str(value.get("tool_call_id") or ""),
            tool_name=str(value.get("tool_name") or ""),
            run_id=str(value.get("run_id") or ""),
            namespace=str(value.get("namespace") or ""),
            args=dict(value.get("args") or {}),
            agent_path=tuple(value.get("agent_path") or ()),
            payload=value.get("payload"),
            langgraph_id=langgraph_id,
            resume_schema=value.get("resume_schema"),
            allowed_decisions=tuple(value.get("allowed_decisions") or ALL_DECISIONS),
            input_schema=value.get("input_schema"),
            description=value.get("description"),
        )

    @property
    def owner_run_id(self) -> str:
        """The paused run's id, or for a tool inside a subagent its delegation's id."""
        return subagent_run_id(self.run_id, self.namespace) if self.namespace else self.run_id

    def interrupt_id(self, dialect: Dialect) -> str:
        if self.kind == "approval":
            return f"{dialect.approval_prefix}::{self.owner_run_id}::{self.tool_call_id}"
        return f"{self.owner_run_id}::{self.tool_call_id}"

    def interrupt(self, dialect: Dialect, *, attributed: bool, resume_schema: dict[str, Any] | None = None) -> Interrupt:
        """The AG-UI interrupt; `subagent_run_id` only when subagents are attributed."""
        resume_schema = self.resume_schema or resume_schema
        sub = subagent_run_id(self.run_id, self.namespace) if attributed and self.namespace else None
        if self.kind == "approval":
            ours = not dialect.camel  # the Mastra dialect keeps the reference bridge's exact shapes
            return Interrupt(
                id=self.interrupt_id(dialect),
                reason=dialect.approval_reason,
                message=self.description if ours else None,
                tool_call_id=self.tool_call_id,
                response_schema=approval_schema(self.allowed_decisions, self.input_schema) if ours else APPROVAL_SCHEMA,
                metadata=dialect.meta(
                    type=dialect.approval_type,
                    tool_name=self.tool_name,
                    args=self.args,
                    run_id=self.owner_run_id,
                    agent_path=list(self.agent_path) if ours else OMIT,
                    allowed_decisions=list(self.allowed_decisions) if ours else OMIT,
                    input_schema=self.input_schema if ours else OMIT,
                ),
                subagent_run_id=sub,
            )
        message = self.payload.get("message") if isinstance(self.payload, Mapping) else None
        return Interrupt(
            id=self.interrupt_id(dialect),
            reason=dialect.suspend_reason,
            message=message if isinstance(message, str) else None,
            tool_call_id=self.tool_call_id,
            response_schema=resume_schema,
            metadata=dialect.meta(
                type=dialect.suspend_type,
                tool_name=self.tool_name,
                suspend_payload=self.payload,
                args=self.args,
                resume_schema=resume_schema if dialect.camel else OMIT,
                run_id=self.owner_run_id,
            ),
            subagent_run_id=sub,
        )


class ResumeError(Exception):
    """A resume request that cannot be carried out; nothing was resumed."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _decision(entry: ResumeEntry, pause: Pause, dialect: Dialect) -> dict[str, Any]:
    """The approval's answer: `cancelled` rejects (with the payload's `message`, if
    any); `resolved` takes `true` or one of the decisions the tool allows."""
    payload = entry.payload
    if entry.status == "cancelled":
        message = payload.get("message") if isinstance(payload, Mapping) else None
        payload = Reject(message=message if isinstance(message, str) else None).payload()
    try:
        return parse_decision({"approved": True} if payload is True else payload, allowed=pause.allowed_decisions).payload()
    except DecisionError as exc:
        raise ResumeError(
            dialect.invalid_approval_code,
            f"Interrupt {entry.interrupt_id!r}: {exc}. Nothing was resumed and the approval is still pending.",
        ) from None


def plan_resume(entries: Sequence[ResumeEntry], pending: Sequence[Pause], dialect: Dialect) -> tuple[dict[str, Any], list[Pause]]:
    """The answers for `Command(resume={langgraph interrupt id: value})`, and the pauses
    they answer. Every entry is checked before anything is resumed.

    Raises:
        ResumeError: an entry names no pending interrupt (`INTERRUPT_NOT_PENDING`), or
            answers an approval with anything but `true` or a decision it allows (the
            edited args are checked against the tool's input schema by the resume itself).
    """
    by_id = {pause.interrupt_id(dialect): pause for pause in pending}
    answers: dict[str, Any] = {}
    chosen: list[Pause] = []
    for entry in entries:
        pause = by_id.get(entry.interrupt_id)
        if pause is None:
            raise ResumeError(
                "INTERRUPT_NOT_PENDING",
                f"Interrupt {entry.interrupt_id!r} is not pending on this thread (it was answered already, or never existed).",
            )
        if pause.kind == "approval":
            answers[pause.langgraph_id] = answer = _decision(entry, pause, dialect)
            if "args" in answer:  # the held-back call is shown with the arguments it runs with
                pause = replace(pause, args=dict(answer["args"]))
        else:
            answers[pause.langgraph_id] = dict(CANCEL_SUSPENDED) if entry.status == "cancelled" else entry.payload
        chosen.append(pause)
    return answers, chosen
