"""One delegation's outcome (SPEC §6.5): the `DelegationRecord` a run builds in memory
while the delegation runs, the `DelegationResult` hooks and callers read, and what the
supervisor model sees of a failure.

It stays clear of the node machinery (it needs only the state's `Usage`) because
`nodes.background.tasks`, which `AgentSpec` imports, words a failed task's notice with
`failure_text`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict, Field

from supervisor_graph.nodes.guards.core import TripwireError
from supervisor_graph.nodes.observability.cost import RunCosts
from supervisor_graph.nodes.state import Usage
from supervisor_graph.nodes.steps.structured_output import StructuredOutputError

__all__ = ["DelegationAbortedError", "DelegationRecord", "DelegationResult", "abort_reason", "failure_text", "mark_aborted"]


class DelegationAbortedError(Exception):
    """The run was aborted (SPEC §10) before the delegation finished: `ctx.error` of
    `on_delegation_complete`. `reason` is what `controller.abort(reason)` was given (None
    when nothing was); the message is that reason as text, else `"aborted"`."""

    def __init__(self, reason: Any = None) -> None:
        super().__init__("aborted" if reason is None else str(reason))
        self.reason = reason


def abort_reason(signal: Any) -> Any:
    """The reason an abort signal was given (an `asyncio.Event` has none)."""
    return getattr(signal, "reason", None)


class DelegationResult(BaseModel):
    """One delegation's outcome, read by attribute: `ctx.result` in
    `on_delegation_complete` and each item of `GenerateResult.delegations` (SPEC §6.5).

    On a failed delegation `success` is false, `text` is the partial text (or `""`) and
    `error` names the exception's type (the exception itself is `ctx.error`). An aborted
    delegation (the run's `abort_signal` fired while it ran) is a failed one with
    `finish_reason "abort"` and the run's abort reason as `error` (`"aborted"` when
    the abort gave none).
    """

    model_config = ConfigDict(frozen=True)

    tool_call_id: str = ""
    agent_key: str = ""
    agent_id: str = ""
    prompt: str = ""
    success: bool = True
    text: str = ""
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str = "stop"
    sub_agent_tool_results: list[dict[str, Any]] = Field(default_factory=list)
    sub_agent_pending_tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    sub_agent_thread_id: str | None = None
    sub_agent_resource_id: str | None = None
    ref_id: str | None = None
    """`<subagent id>-<n>` when result references are on and the result got one."""
    error: str | None = None
    object: Any = None
    """The validated answer when the subagent has an output schema (SPEC §28): a model
    instance for a pydantic model, a dict otherwise; `text` is its JSON."""


@dataclass(slots=True)
class DelegationRecord:
    """One delegation's outcome as it is being built, kept in the run's memory for
    hooks, streams and `GenerateResult.delegations` (never checkpointed in the parent's
    thread)."""

    tool_call_id: str
    key: str
    agent_id: str
    prompt: str
    success: bool = True
    text: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    # `usage` split by agent, keyed by path from this subagent (its id first): it rides
    # in the delegation's artifact so the parent's `usage_by_agent` has the whole tree
    usage_by_agent: dict[str, dict[str, int]] = field(default_factory=dict)
    # the same calls by path and model (`usage_by_model_of_run`): in the artifact too, so
    # the parent prices the whole tree when its result's cost is read (SPEC §33)
    usage_by_model: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    finish_reason: str = "stop"
    sub_agent_tool_results: list[dict[str, Any]] = field(default_factory=list)
    sub_agent_pending_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    sub_agent_thread_id: str | None = None
    sub_agent_resource_id: str | None = None
    # the subagent checkpoint a `per_parent_thread` delegation ended at (`lineage`)
    sub_agent_checkpoint_id: str | None = None
    error: BaseException | None = None
    messages: list[BaseMessage] = field(default_factory=list)
    ref_id: str | None = None
    # what `on_delegation_complete` put in place of the text (may be "")
    result_text: str | None = None
    # the answer's JSON value when the subagent has an output schema, and that schema
    # (an `OutputSchema`), which gives callers the value as its model
    object: Any = None
    schema: Any = None

    def summary(self) -> dict[str, Any]:
        """The outcome as plain JSON values (stream payloads, tool-result context)."""
        return {
            "tool_call_id": self.tool_call_id,
            "agent_key": self.key,
            "agent_id": self.agent_id,
            "prompt": self.prompt,
            "success": self.success,
            "ref_id": self.ref_id,
            "error": _error_text(self.error),
            **self.outcome(),
        }

    def outcome(self) -> dict[str, Any]:
        """What the subagent produced (what `include_sub_agent_tool_results_in_model_context`
        shows, with the text the supervisor model would see in place of `text`)."""
        return {
            "text": self.text,
            "usage": self.usage,
            "finish_reason": self.finish_reason,
            "sub_agent_tool_results": self.sub_agent_tool_results,
            "sub_agent_pending_tool_calls": self.sub_agent_pending_tool_calls,
            "sub_agent_thread_id": self.sub_agent_thread_id,
            "sub_agent_resource_id": self.sub_agent_resource_id,
        }

    def to_result(self) -> DelegationResult:
        result = DelegationResult.model_validate(self.summary())
        result.usage.priced(self._cost)
        if self.object is None:
            return result
        value = self.schema.to_object(self.object) if self.schema is not None else self.object
        return result.model_copy(update={"object": value})

    def _cost(self) -> float | None:
        """USD of the delegation's model calls, its subagents' included (SPEC §33)."""
        by_agent = self.usage_by_agent or {self.agent_id: self.usage}  # a remote one has its total only
        return RunCosts(by_agent, self.usage_by_model).total()


def _error_text(error: BaseException | None) -> str | None:
    if error is None:
        return None
    if isinstance(error, DelegationAbortedError):  # why the run was aborted: the caller's own words
        return str(error)
    return type(error).__name__


def mark_aborted(record: DelegationRecord, reason: Any = None) -> None:
    """`record` as a delegation the run's abort cut short (SPEC §10): a failure whose
    finish reason is `"abort"`, its error the abort's reason. What it did before the abort
    (partial text, usage, tool results) stays."""
    record.success = False
    record.finish_reason = "abort"
    if not isinstance(record.error, DelegationAbortedError):
        record.error = DelegationAbortedError(reason)


def failure_text(agent_id: str, error: BaseException | None = None) -> str:
    """What the supervisor model sees of a failed delegation: never the raw error, but
    the field errors of an answer that did not match its output schema (our own words
    about the subagent's answer, which the supervisor can act on)."""
    if isinstance(error, DelegationAbortedError):  # as every call the abort left unfinished reads
        return f"[Aborted] The run was cancelled before {agent_id} finished this task."
    if isinstance(error, TripwireError):  # the guard's name, never the text it blocked (SPEC §30)
        return (
            f"[Delegation Failed] the guardrail {error.tripwire.guard!r} stopped {agent_id} at its "
            f"{error.tripwire.boundary} boundary. Try another approach or explain the failure."
        )
    text = f"[Delegation Failed] {agent_id} could not complete this task. Try another approach or explain the failure."
    if isinstance(error, StructuredOutputError):
        listed = "; ".join(f"{e.get('loc') or '(root)'}: {e.get('msg')}" for e in error.errors[:5])
        text += f" Its answer did not match the {error.schema} schema ({listed})."
    return text
