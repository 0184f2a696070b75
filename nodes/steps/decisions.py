"""Decisions on a pending approval (SPEC §9, §29): approve, edit, reject with a reason,
and the step that asks for them.

One typed union (`Approve | Edit | Reject`), parsed and checked here for every driver:
the `Approvals` step (a raw `Command(resume=...)`), the facade's resume (before anything
is resumed), the AG-UI bridge and, through it, A2A. The answer has one shape everywhere:
`{"approved": true}`, `{"approved": true, "args": {...}}`, `{"approved": false,
"message": "..."}`. A tool limits what it takes with `create_tool(require_approval=
{"allowed_decisions": [...], "description": ...})`; `True` allows all three.

`Approvals` is the capability as a step (`awrap_tool_call`, nodes/steps/protocol.py),
outermost of a tool call's steps: the call waits for a person before any side effect
and before the other steps see it (the `tool_args` guard checks the arguments as the
person approved them); an invalid answer is asked again with a fresh `interrupt()`, so
it never consumes the pending approval; a rejected call never reaches the tool, and an
edited one runs with the person's arguments, its result saying so first (`EditNote`).
The approval is consumed durably in the run's store (nodes/steps/approval_journal.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from supervisor_graph.nodes.steps.approval_journal import INTERRUPTED_TOOL_TEXT, consume_approval
from supervisor_graph.nodes.steps.protocol import Step, ToolHandler, ToolRequest, as_tool_message

__all__ = [
    "ALL_DECISIONS",
    "APPROVALS",
    "EDIT_NOTE",
    "ApprovalPolicy",
    "Approvals",
    "Approve",
    "Decision",
    "DecisionError",
    "DecisionKind",
    "Edit",
    "EditNote",
    "Reject",
    "approval_fields",
    "approval_policy",
    "asks_approval",
    "decision_payload",
    "declined_text",
    "edited_result",
    "input_schema_of",
    "parse_decision",
    "pause_payload",
]

DecisionKind = Literal["approve", "edit", "reject"]
ALL_DECISIONS: tuple[DecisionKind, ...] = ("approve", "edit", "reject")
DECLINED_TEXT = "The user declined this tool call; it did not run."


class DecisionError(ValueError):
    """A decision that cannot be carried out (wrong shape, not allowed, invalid edited
    arguments); nothing was resumed and the approval is still pending."""


class ApprovalPolicy(BaseModel):
    """What a tool's approval takes: `create_tool(require_approval={...})`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allowed_decisions: tuple[DecisionKind, ...] = ALL_DECISIONS
    """The decisions a person may make: `approve`, `edit` (run it with other arguments),
    `reject` (with a reason the model sees)."""
    description: str | None = None
    """Shown to the person deciding (the pending item's `description`)."""

    @field_validator("allowed_decisions")
    @classmethod
    def _no_repeats(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("allowed_decisions needs at least one decision")
        if len(set(value)) != len(value):
            raise ValueError("allowed_decisions lists a decision twice")
        return value

    @classmethod
    def of(cls, value: Any) -> ApprovalPolicy | None:
        """The policy `require_approval=` declares: None for False/None, all three for
        True, else the validated dict (raises `ValueError` naming the bad field)."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, ApprovalPolicy):
            return value
        if not isinstance(value, Mapping):
            raise ValueError(
                'require_approval must be True, False or {"allowed_decisions": [...], "description": ...}, '
                f"not {type(value).__name__}"
            )
        try:
            return cls.model_validate(dict(value))
        except ValidationError as exc:
            raise ValueError(
                f"invalid require_approval ({_field_errors(exc)}); allowed_decisions takes a non-empty list of "
                f"{', '.join(map(repr, ALL_DECISIONS))}"
            ) from None


class Approve(BaseModel):
    """Run the call as the model made it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["approve"] = "approve"

    def payload(self) -> dict[str, Any]:
        return {"approved": True}


class Edit(BaseModel):
    """Run the call with these arguments instead (validated against the tool's input schema)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["edit"] = "edit"
    args: dict[str, Any]

    def payload(self) -> dict[str, Any]:
        return {"approved": True, "args": self.args}


class Reject(BaseModel):
    """Do not run the call; the model sees `message` as the reason."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["reject"] = "reject"
    message: str | None = None

    def payload(self) -> dict[str, Any]:
        return {"approved": False, **({"message": self.message} if self.message is not None else {})}


Decision = Approve | Edit | Reject

_SHAPES = '{"approved": true}, {"approved": true, "args": {...}} or {"approved": false, "message": "..."}'


def _field_errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors())


def parse_decision(
    value: Any, *, allowed: Sequence[str] | None = None, tool: BaseTool | None = None
) -> Decision:
    """The decision `value` carries, checked against `allowed` (all three when None) and,
    for an edit, against `tool`'s input schema when the tool is known.

    Raises:
        DecisionError: not one of the three shapes, a decision not in `allowed`, or
            edited arguments the tool's input schema refuses (each field's error named).
    """
    if not (isinstance(value, Mapping) and isinstance(value.get("approved"), bool)):
        raise DecisionError(f"an approval answer must be {_SHAPES} (approved a boolean), not {value!r}")
    extra = sorted(set(value) - {"approved", "args", "message"})
    if extra:
        raise DecisionError(f"an approval answer takes approved, args and message only, not {', '.join(map(repr, extra))}")
    decision: Decision
    if value["approved"]:
        if value.get("message") is not None:
            raise DecisionError('"message" is the reason of a rejection ({"approved": false, "message": ...})')
        args = value.get("args")
        if args is None:
            decision = Approve()
        elif not isinstance(args, Mapping):
            raise DecisionError(f"edited args must be an object of the tool's arguments, not {type(args).__name__}")
        else:
            decision = Edit(args=dict(args))
    else:
        if value.get("args") is not None:
            raise DecisionError('"args" goes with an approval ({"approved": true, "args": {...}}), not a rejection')
        message = value.get("message")
        if message is not None and not isinstance(message, str):
            raise DecisionError(f"a rejection's message must be a string, not {type(message).__name__}")
        decision = Reject(message=message)
    permitted = tuple(allowed) if allowed else ALL_DECISIONS
    if decision.kind not in permitted:
        raise DecisionError(f"{decision.kind!r} is not allowed for this tool call (allowed: {', '.join(permitted)})")
    if isinstance(decision, Edit) and tool is not None:
        _check_args(tool, decision.args)
    return decision


def _check_args(tool: BaseTool, args: dict[str, Any]) -> None:
    schema = tool.tool_call_schema
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        own = tool.args_schema  # the declared model keeps its validators; use it when nothing is injected
        if isinstance(own, type) and issubclass(own, BaseModel) and set(own.model_fields) == set(schema.model_fields):
            schema = own
        try:
            schema.model_validate(args)
        except ValidationError as exc:
            raise DecisionError(f"edited args do not match {tool.name}'s input schema: {_field_errors(exc)}") from None
    elif isinstance(schema, Mapping):
        from jsonschema import Draft202012Validator

        errors = sorted(Draft202012Validator(dict(schema)).iter_errors(args), key=lambda e: list(e.path))
        if errors:
            found = "; ".join(f"{'.'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors)
            raise DecisionError(f"edited args do not match {tool.name}'s input schema: {found}")


def approval_policy(tool: BaseTool | None) -> ApprovalPolicy:
    """The policy of `tool`'s approval: its own declaration, else all three decisions
    (a tool asked about because approval is required agent-wide)."""
    declared = (tool.metadata or {}).get("require_approval") if tool is not None else None
    try:
        policy = ApprovalPolicy.of(declared)
    except ValueError:
        policy = None
    return policy or ApprovalPolicy()


def input_schema_of(tool: BaseTool | None) -> dict[str, Any] | None:
    """The JSON schema of the arguments the model gives `tool` (what an edit must match)."""
    if tool is None:
        return None
    schema = tool.tool_call_schema
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    return dict(schema) if isinstance(schema, Mapping) else None


def approval_fields(tool: BaseTool | None) -> dict[str, Any]:
    """What a pending approval tells the client it may do: its allowed decisions, the
    tool's input schema and the declared description (in the interrupt's value)."""
    policy = approval_policy(tool)
    fields: dict[str, Any] = {"allowed_decisions": list(policy.allowed_decisions), "input_schema": input_schema_of(tool)}
    if policy.description is not None:
        fields["description"] = policy.description
    return fields


def decision_payload(approved: bool, args: Mapping[str, Any] | None = None, message: str | None = None) -> dict[str, Any]:
    """The resume value `approve_tool_call(args=...)` / `decline_tool_call(message=...)`
    send (checked by `parse_decision` like any other answer)."""
    value: dict[str, Any] = {"approved": approved}
    if args is not None:
        value["args"] = args
    if message is not None:
        value["message"] = message
    return value


def declined_text(message: str | None) -> str:
    """The result the model sees for a rejected call: the refusal and the person's reason."""
    return f"{DECLINED_TEXT} Their reason: {message}" if message and message.strip() else DECLINED_TEXT


def edited_result(result: ToolMessage, args: Mapping[str, Any]) -> ToolMessage:
    """The result of a call that ran with edited arguments, saying so first: the model's
    own message still holds the arguments it proposed."""
    note = f"[The user edited the arguments before this call ran: {json.dumps(args, ensure_ascii=False, default=str)}]"
    content: Any = result.content
    if isinstance(content, str):
        content = f"{note}\n{content}"
    else:
        content = [{"type": "text", "text": note}, *content]
    return result.model_copy(update={"content": content})


# -- the step ------------------------------------------------------------------------------


def asks_approval(tool: BaseTool, approve_all: bool) -> bool:
    """True when a call of `tool` must wait for a decision before it runs (SPEC §9): the
    tool declares `require_approval`, or the run asks before every tool call."""
    return approve_all or bool((tool.metadata or {}).get("require_approval"))


def pause_payload(kind: str, call: Mapping[str, Any], handle: Any, **extra: Any) -> dict[str, Any]:
    """What a pause of a tool call reports (an approval, a `suspend()`). `namespace` (in
    `extra`) is the checkpoint namespace of the graph whose tool pauses: it tells
    concurrent delegations to one subagent apart."""
    return {
        "kind": kind,
        "tool_call_id": call["id"],
        "tool_name": call["name"],
        "args": call["args"],
        "agent_path": list(handle.agent_path),
        "run_id": handle.run_id,
        **extra,
    }


# where `Approvals` tells `EditNote` the arguments a person edited (the request's notes)
_EDITED = "edited_args"


class Approvals(Step):
    """Decisions on the agent's tool calls: a call that needs one waits for a person
    (`interrupt()`, asked again while the answer is no valid decision), then its approval
    is consumed durably before the side effect; a rejection answers without running it.

    The compiler gives it to every agent with tools it runs, first (outermost): approval
    may be asked for by the run (`require_tool_approval`), which the compiler cannot see,
    and a per-run step would be appended innermost (`Steps.plus`), inside the guards; a
    call that needs no decision costs one metadata lookup here."""

    name = "approvals"

    async def awrap_tool_call(self, request: ToolRequest, handler: ToolHandler) -> Any:
        if not asks_approval(request.tool, request.approve_all):
            return await handler(request)
        decision = _decide(request)
        call = request.tool_call
        if isinstance(decision, Reject):
            text = declined_text(decision.message)
            return ToolMessage(content=text, tool_call_id=call["id"] or "", name=call["name"], status="error")
        if isinstance(decision, Edit):
            request = request.override(tool_call={**call, "args": decision.args})
            request.notes[_EDITED] = decision.args
        if await consume_approval(request):
            return ToolMessage(content=INTERRUPTED_TOOL_TEXT, tool_call_id=call["id"] or "", name=call["name"], status="error")
        return await handler(request)


def _decide(request: ToolRequest) -> Decision:
    """A person's decision on the call, asked again while an answer is none."""
    tool = request.tool
    asking = pause_payload("approval", request.tool_call, request.handle, namespace=request.namespace, **approval_fields(tool))
    while True:
        value = interrupt(asking)
        request.answered(1)
        try:
            return parse_decision(value, allowed=asking["allowed_decisions"], tool=tool)
        except DecisionError as exc:  # asked again: the approval stays pending and answerable
            asking = {**asking, "error": str(exc)}


class EditNote(Step):
    """The result of a call a person edited says so first (`edited_result`). The compiler
    puts it innermost of the agent's steps, under the guards: the note is part of what
    the call answered, so the `tool_result` guard checks it like the rest (it holds the
    person's arguments), and a call a guard refused before it ran gets none."""

    name = "edit_note"

    async def awrap_tool_call(self, request: ToolRequest, handler: ToolHandler) -> Any:
        output = await handler(request)
        edited = request.notes.get(_EDITED)
        return output if edited is None else edited_result(as_tool_message(output, request.tool_call), edited)


APPROVALS = Approvals()
EDIT_NOTE = EditNote()
