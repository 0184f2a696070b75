"""Per-call options and the runtime context that carries them to every node.

Options never enter the graph state: callables must not be checkpointed, and one
compiled graph serves every call. `RunContext` is the graph's `context_schema`; its
public fields are JSON-schema-able and all optional (LangGraph Platform builds it from
`configurable` keys), while the validated `RunOptions` of a `generate()` call and the
in-memory `RunHandle` ride along as private attributes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from supervisor_graph.checkpointers.naming import NS_JOIN
from supervisor_graph.nodes.gates.scoring import TaskCompleteOptions
from supervisor_graph.nodes.scope.context import AbortSignal, RequestContext
from supervisor_graph.nodes.scope.versions import AgentOverride, VersionSelection
from supervisor_graph.nodes.steps.budget import Budget, BudgetScope
from supervisor_graph.nodes.steps.structured_output import OutputSchema, output_schema_of

__all__ = [
    "DelegationOptions",
    "MemoryOptions",
    "RunContext",
    "RunHandle",
    "RunOptions",
    "merge_options",
]

_STRICT = ConfigDict(arbitrary_types_allowed=True, extra="forbid")


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
    """`memory={"thread": ..., "resource": ...}`: which conversation a call continues."""

    model_config = ConfigDict(extra="forbid")

    thread: str = Field(min_length=1)
    resource: str | None = None

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
    is_task_complete: Any = None  # a TaskCompleteOptions once validated (`_task_complete`)
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
    budget: Budget | None = None
    """Limits for the whole call, every delegation included (SPEC §25; nodes/steps/budget.py)."""
    output_schema: OutputSchema | None = None
    """The shape of the answer (SPEC §28): a pydantic model, a TypedDict or a JSON-schema
    dict; it wins over `Agent(output_schema=...)` and applies to this agent only."""
    output_retries: int = Field(default=1, ge=0, strict=True)
    """How many times an answer that does not validate is sent back to the model."""

    @field_validator("output_schema", mode="before")
    @classmethod
    def _output_schema(cls, value: Any) -> Any:
        return output_schema_of(value)

    @field_validator("request_context", mode="before")
    @classmethod
    def _wrap_dict(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return RequestContext(value)
        return value

    @field_validator("is_task_complete", mode="before")
    @classmethod
    def _task_complete(cls, value: Any) -> Any:
        if value is None:
            return None
        return TaskCompleteOptions.model_validate(value) if not isinstance(value, TaskCompleteOptions) else value

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
    # The run's version resolver (SPEC §13), shared with its delegations, and the version
    # in force for this agent (None: its code definition).
    versions: Any = None
    override: AgentOverride | None = None
    # Hosts background delegations (SPEC §12); None: they run inline.
    background: Any = None
    # The budgets this agent's run is under and their counters (SPEC §25); None: no budget.
    budget: BudgetScope | None = None
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
    budget: Budget | None = Field(
        default=None,
        description='Limits for the whole run, every delegation included: {"tokens": int, "seconds": float, '
        '"tool_calls": int}; at 100% an agent stops before its next model call (finish reason "budget").',
    )
    output_schema: dict[str, Any] | None = Field(
        default=None,
        description="A JSON schema for the top agent's final answer: the run's output state then has the validated "
        "object under structured_response.",
    )

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
            update["budget"] = self.budget
        if self.output_schema is not None:
            update["output_schema"] = output_schema_of(self.output_schema, "context output_schema")
        return opts.model_copy(update=update)
