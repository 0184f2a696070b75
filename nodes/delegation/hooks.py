"""The delegation hooks' contracts (SPEC §6.2, §6.5-6.6): what `on_delegation_start` and
`on_delegation_complete` receive and may return, and how any hook is run, its result
validated and its failure recorded in the run's `DELEGATION_HOOK_ERRORS`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from supervisor_graph.nodes.delegation.result import DelegationResult
from supervisor_graph.nodes.options import RunHandle
from supervisor_graph.nodes.scope.context import DELEGATION_HOOK_ERRORS, RequestContext
from supervisor_graph.nodes.spec import maybe_await
from supervisor_graph.nodes.steps.budget import Budget
from supervisor_graph.nodes.steps.structured_output import output_schema_of

__all__ = [
    "DelegationCompleteContext",
    "DelegationCompleteResult",
    "DelegationStartContext",
    "DelegationStartResult",
    "HookFailed",
    "record_hook_error",
    "run_delegation_hook",
    "run_hook",
    "validate_hook_result",
]

log = logging.getLogger("supervisor_graph")


class DelegationStartContext(BaseModel):
    """What `on_delegation_start` receives. Set entries on `request_context` to pass
    values down to the subagent; the parent's context is never changed."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    primitive_id: str
    prompt: str
    iteration: int
    request_context: RequestContext
    tool_call_id: str = ""
    run_id: str = ""


class DelegationStartResult(BaseModel):
    """What `on_delegation_start` may return (a dict with these keys works too)."""

    model_config = ConfigDict(extra="forbid")

    proceed: bool = True
    rejection_reason: str | None = None
    modified_prompt: str | None = None
    modified_max_steps: int | None = Field(default=None, ge=1, strict=True)
    modified_budget: Budget | None = None
    modified_output_schema: Any = None
    """The shape of this delegation's answer (SPEC §28): a pydantic model, a TypedDict or
    a JSON-schema dict, in place of the subagent's own `output_schema`."""

    @field_validator("modified_output_schema", mode="before")
    @classmethod
    def _output_schema(cls, value: Any) -> Any:
        return output_schema_of(value, "modified_output_schema")
    """Replaces the subagent's own budget for this delegation (SPEC §25); the call's still applies."""
    thread_metadata: dict[str, Any] | None = None


class DelegationCompleteContext(BaseModel):
    """What `on_delegation_complete` receives; call `bail()` to stop the parent loop."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    primitive_id: str
    result: DelegationResult
    success: bool
    error: Any = None
    messages: list[BaseMessage] = Field(default_factory=list)
    tool_call_id: str = ""
    run_id: str = ""
    bailed: bool = False

    def bail(self) -> None:
        """Stop the parent's loop after this delegation (finish reason `bail`)."""
        self.bailed = True


class DelegationCompleteResult(BaseModel):
    """What `on_delegation_complete` may return (a dict with these keys works too)."""

    model_config = ConfigDict(extra="forbid")

    feedback: str | None = None
    result_text: str | None = None


class HookFailed(Exception):
    """A hook raised or returned a value of the wrong shape (wrapped, with its name)."""

    def __init__(self, hook: str, cause: BaseException) -> None:
        super().__init__(f"{hook} failed: {type(cause).__name__}: {cause}")
        self.hook = hook
        self.cause = cause


def validate_hook_result(model: type[BaseModel], value: Any, hook: str) -> Any:
    """`value` as `model`: None means defaults; a dict is validated; anything else is an
    error naming the hook and the offending fields."""
    if value is None:
        return model()
    if isinstance(value, model):
        return value
    if not isinstance(value, dict):
        raise TypeError(f"{hook} must return None, a dict or {model.__name__}; it returned {type(value).__name__}")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        fields = ", ".join(".".join(str(p) for p in e["loc"]) or "value" for e in exc.errors())
        raise ValueError(f"{hook} returned an invalid value for {fields}: {exc.errors()[0]['msg']}") from None


async def run_hook(hook: Callable[..., Any], context: Any, model: type[BaseModel], name: str) -> Any:
    """Call a sync or async hook and validate what it returns; any failure is `HookFailed`."""
    try:
        return validate_hook_result(model, await maybe_await(hook(context)), name)
    except Exception as exc:  # noqa: BLE001 - hook failures follow the hook-error strategy
        raise HookFailed(name, exc) from exc


async def run_delegation_hook(
    handle: RunHandle, throw: bool, hook: Callable[..., Any], context: Any, model: type[BaseModel], name: str
) -> tuple[Any, HookFailed | None]:
    """Run `on_delegation_start` or `on_delegation_complete` under the run's hook-error
    strategy (SPEC §6.6): its result, else (it failed, and the failure is recorded) the
    default `model()`, with the failure when the strategy is `throw` (`throw`), for the
    caller to fail the delegation with."""
    try:
        return await run_hook(hook, context, model, name), None
    except HookFailed as failure:
        record_hook_error(handle, failure, context.primitive_id, context.tool_call_id, warn=not throw)
        return model(), failure if throw else None


def record_hook_error(handle: RunHandle, failure: HookFailed, primitive_id: str, tool_call_id: str, warn: bool) -> None:
    """Add a failure to the run's `DELEGATION_HOOK_ERRORS` list (under either strategy)."""
    root = handle.root
    records = root.get(DELEGATION_HOOK_ERRORS)
    if not isinstance(records, list):
        records = []
        root.set(DELEGATION_HOOK_ERRORS, records)
    records.append(
        {
            "hook": failure.hook,
            "primitive_id": primitive_id,
            "tool_call_id": tool_call_id,
            "run_id": handle.run_id,
            "name": type(failure.cause).__name__,
            "message": str(failure.cause),
        }
    )
    if warn:
        log.warning("%s for %r failed (%s); continuing as if it were not set", failure.hook, primitive_id, failure)
