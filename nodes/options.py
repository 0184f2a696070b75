"""Per-call options and the runtime context that carries them to every node.

Options never enter the graph state: callables must not be checkpointed, and one
compiled graph serves every call. `RunContext` is the graph's `context_schema`; its
public fields are JSON-schema-able and all optional (LangGraph Platform builds it from
`configurable` keys), while the validated `RunOptions` of a `generate()` call and the
in-memory `RunHandle` ride along as private attributes.

The options a capability brings (a budget, an output schema, the task-completion gate)
are validated by that capability: its module registers a parser with
`capability_option` when it is imported, so this module imports no capability (SPEC §32).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator

from supervisor_graph.checkpointers.naming import NS_JOIN
from supervisor_graph.nodes.scope.context import AbortSignal, RequestContext
from supervisor_graph.nodes.scope.versions import AgentOverride, VersionSelection

__all__ = [
    "CAPABILITY_OPTIONS",
    "DelegationOptions",
    "MemoryOptions",
    "RunContext",
    "RunHandle",
    "RunOptions",
    "capability_option",
    "merge_options",
    "parse_option",
]

_STRICT = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

# The per-call options a capability brings, each with the module that registers its
# parser: named in the error when that module was never imported.
CAPABILITY_OPTIONS: dict[str, str] = {
    "budget": "supervisor_graph.nodes.steps.budget",
    "output_schema": "supervisor_graph.nodes.steps.structured_output",
    "is_task_complete": "supervisor_graph.nodes.gates.scoring",
}
_PARSERS: dict[str, Callable[[Any, str], Any]] = {}


def capability_option(name: str, parse: Callable[[Any, str], Any]) -> None:
    """Validate the per-call option `name` with `parse(value, where)`: the value a node
    acts on, or a `ValueError` (a pydantic `ValidationError` too) naming `where`. Called by
    the capability's module when it is imported; None never reaches `parse`."""
    if name not in CAPABILITY_OPTIONS:
        raise ValueError(f"{name!r} is not a capability's option of RunOptions ({', '.join(CAPABILITY_OPTIONS)})")
    _PARSERS[name] = parse


def parse_option(name: str, value: Any, where: str | None = None) -> Any:
    """`value` of the capability option `name` validated by its capability (None: None)."""
    if value is None:
        return None
    parse = _PARSERS.get(name)
    if parse is None:
        # not bad input but a missing import: raised as is, never as the caller's error
        raise RuntimeError(
            f"the {name!r} option has no parser: import {CAPABILITY_OPTIONS.get(name, 'its capability module')} "
            "before validating options (`import supervisor_graph` does)"
        )
    return parse(value, where or name)


class DelegationOptions(BaseModel):
    """Hooks and switches that act on every delegation (SPEC §6)."""

    model_config = _STRICT

    on_delegation_start: Callable[..., Any] | None = None
    on_delegation_complete: Callable[..., Any] | None = None
    message_filter: Callable[..., Any] | None = None
    hook_error_strategy: Literal["warn", "throw"] = "warn"
    include_sub_agent_tool_results_in_model_context: bool = False
    """The supervisor model sees the delegation's whole outcome as JSON (nested tool
    results, thread ids); its `text` stays what the model sees without it (an
    `on_delegation_complete` `result_text`, a `result_preview_tokens` preview)."""
    enable_result_references: bool = False


class MemoryOptions(BaseModel):
    """`memory={"thread": ..., "resource": ...}`: which conversation a call continues;
    with `"checkpoint": ID` (from `agent.history`), it forks from that checkpoint (SPEC §34)."""

    model_config = ConfigDict(extra="forbid")

    thread: str = Field(min_length=1)
    resource: str | None = None
    checkpoint: str | None = Field(default=None, min_length=1)

    @field_validator("thread")
    @classmethod
    def _storable(cls, value: str) -> str:
        if NS_JOIN in value:
            raise ValueError(
                f"thread id {value!r} contains {NS_JOIN!r}, which this library uses to name delegation threads "
                f"(<thread>{NS_JOIN}<namespace>); use another separator"
            )
        return value


class RunOptions(BaseModel):
    """Every per-call option of SPEC §5 (also the shape of `default_options`)."""

    model_config = _STRICT

    # strict: `True` is not a step count (pydantic would read it as 1)
    max_steps: int = Field(default=5, ge=1, strict=True)
    delegation: DelegationOptions = Field(default_factory=DelegationOptions)
    on_iteration_complete: Callable[..., Any] | None = None
    is_task_complete: Any = None
    """The task-completion gate (SPEC §11): a `TaskCompleteOptions` once validated by
    nodes/gates/scoring.py."""
    request_context: RequestContext | None = None
    abort_signal: AbortSignal | asyncio.Event | None = None
    memory: MemoryOptions | None = None
    require_tool_approval: bool = Field(default=False, strict=True)
    versions: VersionSelection | None = None
    """Stored versions to run instead of code definitions (SPEC §13)."""
    pending: Literal["refuse", "decline"] = "refuse"
    """A new message while approvals wait: refused with `PendingApprovalError`, or
    `"decline"`: the waiting calls are declined first (they never run)."""
    on_busy: Literal["reject", "enqueue", "interrupt", "rollback"] = "reject"
    """A new message while a run holds the thread (SPEC §29, double texting): refused
    (`ThreadBusyError`), queued behind it, or run once it has stopped with its finished
    steps kept (`interrupt`) or discarded (`rollback`); see `supervisor_graph/run/busy.py`."""
    budget: Any = None
    """Limits for the whole call, every delegation included (SPEC §25): a `Budget` once
    validated by nodes/steps/budget.py."""
    output_schema: Any = None
    """The shape of the answer (SPEC §28): a pydantic model, a TypedDict or a JSON-schema
    dict; it wins over `Agent(output_schema=...)` and applies to this agent only. An
    `OutputSchema` once validated by nodes/steps/structured_output.py."""
    output_retries: int = Field(default=1, ge=0, strict=True)
    """How many times an answer that does not validate is sent back to the model."""

    @field_validator(*CAPABILITY_OPTIONS, mode="before")
    @classmethod
    def _capability(cls, value: Any, info: ValidationInfo) -> Any:
        assert info.field_name is not None
        return parse_option(info.field_name, value)

    @field_validator("request_context", mode="before")
    @classmethod
    def _wrap_dict(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return RequestContext(value)
        return value

    @field_validator("memory", mode="before")
    @classmethod
    def _memory_string(cls, value: Any) -> Any:
        return {"thread": value} if isinstance(value, str) else value


def merge_options(defaults: Mapping[str, Any] | None, call: Mapping[str, Any]) -> dict[str, Any]:
    """`default_options` overlaid with a call's options; `delegation` merges per key."""
    if not defaults:
        return dict(call)
    merged = {**defaults, **call}
    base, over = defaults.get("delegation"), call.get("delegation")
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        merged["delegation"] = {**base, **over}
    return merged


@dataclass(slots=True)
class RunHandle:
    """What one agent run knows in memory and never checkpoints.

    A subagent run gets its own handle (its own `agent_path`, request-context copy and
    the parent's messages as read-only model context) while sharing `run_id` and the
    abort signal with the top-level run.
    """

    run_id: str
    agent_path: tuple[str, ...]
    request_context: RequestContext = field(default_factory=RequestContext)
    abort_signal: AbortSignal | asyncio.Event | None = None
    context_messages: list[BaseMessage] = field(default_factory=list)
    thread_id: str | None = None
    resource_id: str | None = None
    # The top-level run's request context: hook failures at any depth are recorded there.
    root_context: RequestContext | None = None
    # Delegations of this run by tool call id (transcripts and errors stay in memory: the
    # parent's thread must never hold a subagent's messages).
    delegations: dict[str, Any] = field(default_factory=dict)
    # Result references of this run (SPEC §6.7): id -> text, and a counter per subagent.
    refs: dict[str, str] = field(default_factory=dict)
    ref_counts: dict[str, int] = field(default_factory=dict)
    # False when the caller reads no stream events (`generate()`): nodes skip building them.
    stream_events: bool = True
    # The run's checkpointer is durable (sqlite, Postgres): what is checkpointed must be JSON.
    durable: bool = False
    # Working memory of a run without a thread (SPEC §8), shared with its delegations.
    scratch: dict[str, Any] = field(default_factory=dict)
    # Tokens the run's guards spent asking their models (SPEC §30), by path
    # (`<agent path>/guard:<name>`), shared with its delegations: the result adds them
    # to its usage (they are in no message, so this is in memory only)
    guard_usage: dict[str, dict[str, int]] = field(default_factory=dict)
    # The model answers behind `guard_usage` (path, AIMessage), shared the same way: the
    # models that gave them price them when the result's cost is read (SPEC §33)
    guard_answers: list[tuple[str, Any]] = field(default_factory=list)
    # The run's version resolver (SPEC §13), shared with its delegations, and the version
    # in force for this agent (None: its code definition).
    versions: Any = None
    override: AgentOverride | None = None
    # Hosts background delegations (SPEC §12); None: they run inline.
    background: Any = None
    # The budgets this agent's run is under and their counters (SPEC §25): a `BudgetScope`
    # of nodes/steps/budget.py; None: no budget.
    budget: Any = None
    # What steps keep for this agent's run only (LangChain middleware's untracked state keys)
    step_state: dict[str, Any] = field(default_factory=dict)
    # `modified_output_schema` of this run's delegations by tool call id (the declared
    # type; the checkpointed Send has its JSON schema)
    output_schemas: dict[str, Any] = field(default_factory=dict)

    @property
    def root(self) -> RequestContext:
        return self.root_context if self.root_context is not None else self.request_context


class RunContext(BaseModel):
    """The compiled graph's `context_schema`.

    Plain `graph.ainvoke(...)` and LangGraph Studio may set the JSON fields below;
    `generate()` and delegation also attach validated options and a `RunHandle`.
    """

    model_config = ConfigDict(extra="ignore")

    max_steps: int | None = Field(default=None, ge=1, strict=True, description="Supervisor iterations allowed.")
    require_tool_approval: bool | None = Field(default=None, description="Ask before every tool call.")
    request_context: dict[str, Any] | None = Field(
        default=None,
        description="The run's request context (RequestContext values): tools, hooks, dynamic instructions and "
        "models read it; each delegation gets a copy.",
    )
    background_task: dict[str, Any] | None = Field(
        default=None,
        description="Set by supervisor-graph when a LangGraph server runs a background delegation as a run of its "
        "own: the run goes straight to that delegation and reports its outcome to the parent thread.",
    )
    versions: VersionSelection | None = Field(
        default=None,
        description='Stored agent versions to run instead of code definitions, e.g. {"agents": {"research-agent": '
        '{"status": "published"}}, "default_status": "published"}; read from the run\'s store.',
    )
    budget: dict[str, Any] | None = Field(
        default=None,
        description='Limits for the whole run, every delegation included: {"tokens": int, "seconds": float, '
        '"tool_calls": int}; at 100% an agent stops before its next model call (finish reason "budget").',
    )
    output_schema: dict[str, Any] | None = Field(
        default=None,
        description="A JSON schema for the top agent's final answer: the run's output state then has the validated "
        "object under structured_response.",
    )

    @field_validator("budget", mode="before")
    @classmethod
    def _budget(cls, value: Any) -> Any:
        # checked on arrival, as the options are; kept as JSON, parsed again by `effective`
        parsed = parse_option("budget", value)
        return parsed.model_dump(exclude_none=True) if isinstance(value, BaseModel) else value

    _options: RunOptions | None = PrivateAttr(default=None)
    _handle: RunHandle | None = PrivateAttr(default=None)

    def __bool__(self) -> bool:
        # LangGraph only replaces a parent's context with a truthy one.
        return True

    @classmethod
    def for_run(cls, options: RunOptions, handle: RunHandle) -> RunContext:
        ctx = cls()
        ctx._options = options
        ctx._handle = handle
        return ctx

    # Nodes read these several times a step: straight from pydantic's private dict, as
    # `self._handle` goes through `BaseModel.__getattr__` (about 1.4 us against 0.05).
    @property
    def options(self) -> RunOptions | None:
        return self.__pydantic_private__["_options"]  # type: ignore[index,no-any-return]

    @property
    def handle(self) -> RunHandle | None:
        return self.__pydantic_private__["_handle"]  # type: ignore[index,no-any-return]

    def effective(self, defaults: RunOptions) -> RunOptions:
        """The options a node acts on: attached ones, else defaults plus JSON fields."""
        opts = self.options or defaults
        if (
            self.max_steps is None
            and self.require_tool_approval is None
            and self.versions is None
            and self.budget is None
            and self.output_schema is None
        ):
            return opts
        update: dict[str, Any] = {}
        if self.max_steps is not None:
            update["max_steps"] = self.max_steps
        if self.require_tool_approval is not None:
            update["require_tool_approval"] = self.require_tool_approval
        if self.versions is not None and self._options is None:
            update["versions"] = self.versions
        if self.budget is not None and self._options is None:
            update["budget"] = parse_option("budget", self.budget)
        if self.output_schema is not None:
            update["output_schema"] = parse_option("output_schema", self.output_schema, "context output_schema")
        return opts.model_copy(update=update)
