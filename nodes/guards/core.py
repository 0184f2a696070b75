"""Guardrails (SPEC §30): one guard protocol for the six boundaries text crosses in a
delegation tree.

A guard is a function (sync or async) or an object with a `check` method, given a
`GuardContext` and returning a verdict: `allow()`, `redact(text)`, `retry(feedback)`,
`escalate(reason)` or `block(reason)`. It is declared on an agent with the boundaries
it watches (`Guardrail`, or `guardrail(fn, at=...)`). This module holds the contract
and `check_boundary`, which runs an agent's guards at one boundary and folds their
verdicts into one `GuardOutcome`; the nodes decide what an outcome does where they are.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from supervisor_graph.nodes.scope.context import RequestContext
from supervisor_graph.nodes.steps.protocol import Step

if TYPE_CHECKING:
    from supervisor_graph.nodes.spec import AgentSpec

__all__ = [
    "BOUNDARIES",
    "CHARS_PER_TOKEN",
    "Allow",
    "Block",
    "Boundary",
    "Escalate",
    "GuardContext",
    "GuardError",
    "GuardOutcome",
    "Guards",
    "Guardrail",
    "Redact",
    "Retry",
    "Tripwire",
    "TripwireError",
    "Verdict",
    "allow",
    "block",
    "check_boundary",
    "escalate",
    "guardrail",
    "guarded_at",
    "guards_at",
    "guards_of",
    "redact",
    "retry",
    "stream_hold",
]

log = logging.getLogger("supervisor_graph")

Boundary = Literal["input", "delegation", "result", "tool_args", "tool_result", "output"]
BOUNDARIES: tuple[str, ...] = ("input", "delegation", "result", "tool_args", "tool_result", "output")
"""The six boundaries a guard can watch (`Guardrail.at`), in the order text meets them."""
CHARS_PER_TOKEN = 4  # a streaming guard's windows and overlaps are counted in tokens of about 4 characters


# -- verdicts --------------------------------------------------------------------------


class Allow(BaseModel):
    """Let the text cross as it is."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["allow"] = "allow"


class Redact(BaseModel):
    """Let `text` cross in place of what was checked (for `tool_args`, the arguments as JSON)."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["redact"] = "redact"
    text: str


class Retry(BaseModel):
    """The agent that produced the text tries again with `feedback` (at most the guard's `max_retries`)."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["retry"] = "retry"
    feedback: str


class Escalate(BaseModel):
    """A person decides, through the approval machinery: approve lets it through, reject blocks."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["escalate"] = "escalate"
    reason: str


class Block(BaseModel):
    """A tripwire: the agent whose boundary tripped stops."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["block"] = "block"
    reason: str


Verdict = Annotated[Allow | Redact | Retry | Escalate | Block, Field(discriminator="kind")]
_VERDICTS = (Allow, Redact, Retry, Escalate, Block)


def allow() -> Allow:
    """Let the text cross as it is."""
    return Allow()


def redact(text: str) -> Redact:
    """Let `text` cross instead (for `tool_args`, the arguments as JSON)."""
    return Redact(text=text)


def retry(feedback: str) -> Retry:
    """Send the text back: the agent that produced it tries again with `feedback`."""
    return Retry(feedback=feedback)


def escalate(reason: str) -> Escalate:
    """Pause for a person (approve lets the text through, reject blocks it)."""
    return Escalate(reason=reason)


def block(reason: str) -> Block:
    """Trip the wire: the agent whose boundary it is stops, with `reason`."""
    return Block(reason=reason)


# -- what a guard is given -------------------------------------------------------------


class GuardContext(BaseModel):
    """What a guard checks: the boundary, the text crossing it (or the tool call, for
    `tool_args`), who is on either side, and the run's request context."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    boundary: Boundary
    text: str = ""
    """The text crossing: the user's message, the delegation's prompt, the subagent's
    result, the tool's arguments as JSON or its result, the agent's answer."""
    tool_call: dict[str, Any] | None = None
    """For `tool_args` / `tool_result`: `{"name", "args", "id"}`."""
    agent_path: tuple[str, ...] = ()
    """The agent whose boundary it is, from the top agent down."""
    subagent: str | None = None
    """For `delegation` / `result`: the subagent's id."""
    request_context: RequestContext = Field(default_factory=RequestContext)
    guard: str = ""
    """The name of the guard being run."""
    attempt: int = 0
    """How many times this boundary's text was already sent back (`retry`)."""
    before: str = ""
    """A streamed window (`mode="streaming"`): the end of the answer already sent, as
    context only (it went out, and is not rewritten)."""
    held_from: int | None = None
    """A streamed window while more of the answer may follow: where in `text` the end the
    stream holds back starts. That end is context, checked again with what follows: it
    must come back unchanged (a guard that rewrites it holds the whole window back)."""
    record_usage: Callable[[str, dict[str, int]], None] | None = None
    """Set by the node: a guard that calls a model reports each call's tokens here,
    `record_usage(guard_name, {"input_tokens", "output_tokens", "total_tokens"})`, so they
    count in `usage_by_agent` (under the guard's name) and against the run's budgets."""
    record_answer: Callable[[str, Any], None] | None = None
    """Set by the node: a guard that calls a chat model may hand each answer (the
    `AIMessage`) here instead of `record_usage`, `record_answer(guard_name, answer)`: its
    tokens count alike, and the model that gave it prices it (SPEC §33)."""


# -- declaring a guard ------------------------------------------------------------------


class Guardrail(BaseModel):
    """A guard and where it watches: `Agent(guardrails=[Guardrail(check=fn, at="output")])`."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True, extra="forbid")

    check: Any = Field(description="fn(ctx) -> verdict (sync or async), or an object with such a `check` method.")
    at: frozenset[Boundary]
    name: str = ""
    mode: Literal["blocking", "parallel", "streaming"] = "blocking"
    """`parallel` (input only): the model call starts at once and is cancelled on a trip;
    `streaming` (output only): the answer is checked each `window_tokens` of new text as it
    streams, and only what no later text can change goes out (`stream_hold`)."""
    window_tokens: int = Field(default=200, ge=8)
    overlap_tokens: int = Field(default=20, ge=0)
    """For a streaming guard that cannot tell what to hold back (no `hold_from` on its
    check): the longest span it must see whole; the end of the answer this long is held
    back and checked again with what follows. `pii` holds exactly what it needs instead."""
    max_retries: int = Field(default=1, ge=0)
    on_error: Literal["block", "allow"] = "block"
    """A guard that raises is a tripwire (fail closed); `"allow"` lets the text through, logged."""

    @field_validator("at", mode="before")
    @classmethod
    def _boundaries(cls, value: Any) -> Any:
        names = [value] if isinstance(value, str) else list(value or ())
        unknown = [n for n in names if n not in BOUNDARIES]
        if unknown or not names:
            raise ValueError(f"at= must name one or more of {', '.join(BOUNDARIES)}; got {unknown or names!r}")
        return frozenset(names)

    @model_validator(mode="after")
    def _fits(self) -> Guardrail:
        check = self.check
        if not callable(check) and not callable(getattr(check, "check", None)):
            raise ValueError(f"a guard must be a function of a GuardContext or have a check(ctx) method, not {check!r:.80}")
        if self.mode == "parallel" and self.at != {"input"}:
            raise ValueError("mode='parallel' is for input guards only (at='input')")
        if self.mode == "streaming" and self.at != {"output"}:
            raise ValueError("mode='streaming' is for output guards only (at='output')")
        if self.overlap_tokens >= self.window_tokens:
            raise ValueError("overlap_tokens must be smaller than window_tokens")
        if self.mode == "streaming" and self.overlap_tokens == 0 and not callable(getattr(check, "hold_from", None)):
            raise ValueError(
                "mode='streaming' with overlap_tokens=0: a span cut by a window's edge would reach the client "
                "without being checked whole. Give overlap_tokens the length of the longest span the guard must "
                "see whole (in tokens of about 4 characters), or give its check a hold_from(text, end) "
                "method that says where a streamed text may be cut (as pii's does)"
            )
        if not self.name:
            named = getattr(check, "name", None) or getattr(check, "__name__", None) or type(check).__name__
            object.__setattr__(self, "name", str(named))
        return self

    async def verdict(self, ctx: GuardContext) -> Any:
        fn = self.check if callable(self.check) and not hasattr(self.check, "check") else self.check.check
        value = fn(ctx)
        if inspect.isawaitable(value):
            value = await value
        return value


def guardrail(check: Any, *, at: str | Iterable[str], **settings: Any) -> Guardrail:
    """`check` (a function of a `GuardContext`, or an object with `check`) declared at
    the boundaries `at`; `settings` are `Guardrail`'s (name, mode, max_retries, ...)."""
    return Guardrail(check=check, at=at, **settings)  # type: ignore[arg-type]


def guards_at(guards: Sequence[Guardrail], boundary: str) -> list[Guardrail]:
    return [g for g in guards if boundary in g.at]


def stream_hold(guard: Guardrail, text: str, end: int) -> int:
    """Where, at or before `end`, a streamed `text` may be cut for `guard`: its check's
    `hold_from(text, end)` when it has one (it knows the shapes it matches: no match of
    any continuation reaches across the cut), else `overlap_tokens` before the end of the
    text (the longest span the guard was declared to need whole)."""
    hold = getattr(guard.check, "hold_from", None)
    if callable(hold):
        return max(0, min(end, int(hold(text, end))))
    return max(0, min(end, len(text) - guard.overlap_tokens * CHARS_PER_TOKEN))


# -- running the guards of one boundary ---------------------------------------------------


class GuardError(TypeError):
    """A guard returned something that is not a verdict."""


class Tripwire(BaseModel):
    """Which guard stopped the run, where, and why (`GenerateResult.tripwire`)."""

    model_config = ConfigDict(frozen=True)

    guard: str
    boundary: Boundary
    agent_path: tuple[str, ...]
    reason: str


class TripwireError(Exception):
    """Raised where a tripwire must stop an agent from inside a node (a delegation's
    agent: the delegation fails with a generic text naming the guard)."""

    def __init__(self, tripwire: Tripwire) -> None:
        self.tripwire = tripwire
        super().__init__(f"guardrail {tripwire.guard!r} blocked at {tripwire.boundary}")


class GuardOutcome(BaseModel):
    """The guards of one boundary, folded in declaration order: the text as it may cross
    (redactions applied), or the first retry, escalation or block."""

    model_config = ConfigDict(frozen=True)

    text: str
    redacted: bool = False
    retry: Retry | None = None
    retry_guard: str | None = None
    escalate: Escalate | None = None
    escalate_guard: str | None = None
    tripwire: Tripwire | None = None
    checked: tuple[tuple[str, str], ...] = ()
    """(guard name, verdict kind) of each guard that ran, for spans and events."""


def _as_verdict(value: Any, guard: Guardrail) -> Any:
    if value is None or value is True:
        return Allow()
    if isinstance(value, _VERDICTS):
        return value
    if isinstance(value, dict) and value.get("kind") in ("allow", "redact", "retry", "escalate", "block"):
        for cls in _VERDICTS:
            if cls.model_fields["kind"].default == value["kind"]:
                return cls.model_validate(value)
    raise GuardError(
        f"guard {guard.name!r} returned {type(value).__name__} ({value!r:.80}); return allow(), redact(text), "
        "retry(feedback), escalate(reason) or block(reason) from supervisor_graph.guardrails"
    )


async def check_boundary(
    guards: Sequence[Guardrail],
    boundary: str,
    text: str,
    *,
    agent_path: tuple[str, ...],
    request_context: RequestContext | None = None,
    tool_call: dict[str, Any] | None = None,
    subagent: str | None = None,
    attempt: int = 0,
    on_verdict: Callable[[Guardrail, str, Any], None] | None = None,
    record_usage: Callable[[str, dict[str, int]], None] | None = None,
    record_answer: Callable[[str, Any], None] | None = None,
    before: str = "",
    held_from: int | None = None,
) -> GuardOutcome:
    """Run the guards declared at `boundary` on `text`, in order; a redaction is what the
    next guard sees. Stops at the first retry (while `attempt` is under that guard's
    `max_retries`; past it, a retry is a block), escalation or block."""
    current, redacted = text, False
    checked: list[tuple[str, str]] = []
    context = request_context if request_context is not None else RequestContext()
    for guard in guards_at(guards, boundary):
        ctx = GuardContext(
            boundary=boundary,  # type: ignore[arg-type]
            text=current,
            tool_call=tool_call,
            agent_path=agent_path,
            subagent=subagent,
            request_context=context,
            guard=guard.name,
            attempt=attempt,
            record_usage=record_usage,
            record_answer=record_answer,
            before=before,
            held_from=held_from,
        )
        try:
            verdict = _as_verdict(await guard.verdict(ctx), guard)
        except GuardError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing guard fails closed unless it opts out
            if guard.on_error == "allow":
                log.warning("guard %r failed at %s (%s); on_error='allow' lets the text through", guard.name, boundary, type(exc).__name__)
                checked.append((guard.name, "error"))
                continue
            verdict = Block(reason=f"the guard failed ({type(exc).__name__})")
        if on_verdict is not None:
            on_verdict(guard, boundary, verdict)
        checked.append((guard.name, verdict.kind))
        if isinstance(verdict, Redact):
            current, redacted = verdict.text, True
        elif isinstance(verdict, Retry):
            if attempt < guard.max_retries:
                return GuardOutcome(text=current, redacted=redacted, retry=verdict, retry_guard=guard.name, checked=tuple(checked))
            verdict = Block(reason=f"still failing after {guard.max_retries} retries: {verdict.feedback}")
        if isinstance(verdict, Escalate):
            return GuardOutcome(text=current, redacted=redacted, escalate=verdict, escalate_guard=guard.name, checked=tuple(checked))
        if isinstance(verdict, Block):
            trip = Tripwire(guard=guard.name, boundary=boundary, agent_path=agent_path, reason=verdict.reason)  # type: ignore[arg-type]
            return GuardOutcome(text=current, redacted=redacted, tripwire=trip, checked=tuple(checked))
    return GuardOutcome(text=current, redacted=redacted, checked=tuple(checked))


class Guards(Step):
    """An agent's guards as a step (`Agent(guardrails=...)`, else its parent's, SPEC §30)
    and the boundaries they watch: where a boundary no guard watches costs one set
    lookup. The turn and the delegation lifecycle call them at each boundary."""

    name = "guards"

    def __init__(self, guards: Sequence[Guardrail]) -> None:
        self.guards = tuple(guards)
        self.at = frozenset(boundary for guard in self.guards for boundary in guard.at)


_NONE: frozenset[str] = frozenset()


def guards_of(spec: AgentSpec) -> tuple[Guardrail, ...]:
    step = spec.steps.find(Guards)
    return step.guards if step is not None else ()


def guarded_at(spec: AgentSpec) -> frozenset[str]:
    """The boundaries some guard of the agent watches (empty: it has no guards)."""
    step = spec.steps.find(Guards)
    return step.at if step is not None else _NONE
