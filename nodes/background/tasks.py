"""Background delegations (SPEC §12) as nodes see them.

A delegation to a subagent declared in `background_tasks` does not run in the subagent
node when the run can host background work (a run facade with a thread): the node
(`nodes/delegation/in_background.py`) hands a `BackgroundLaunch` to the run's launcher,
which stores the task's record (`running`) before it returns, answers the supervisor at
once with the "started" text and records the task, `running`, in the parent's
checkpointed state (`background_tasks`). The task's outcome comes back later as a notice
message (a `HumanMessage`) that the next run on the thread carries in, with the record's
final status in the same checkpoint, so it is reported exactly once.

Where nothing can host it (LangGraph Studio, Aegra, a plain `ainvoke`), the delegation
runs inline like any other.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Protocol

from langchain_core.messages import HumanMessage
from pydantic import BaseModel, ConfigDict, Field

from supervisor_graph.nodes.delegation.result import DelegationRecord, failure_text
from supervisor_graph.nodes.state import SupervisorInput, SupervisorState
from supervisor_graph.nodes.steps.working_memory import WorkingMemoryInput, WorkingMemoryState

__all__ = [
    "BACKGROUND_KWARG",
    "FINAL_STATUSES",
    "BackgroundLaunch",
    "BackgroundLauncher",
    "BackgroundSettings",
    "BackgroundTaskConfig",
    "background_setting",
    "input_schema",
    "notice",
    "outcome_text",
    "started_text",
    "state_schema",
    "task_id_of",
]

TaskStatus = Literal["running", "completed", "failed", "timed_out", "cancelled"]
FINAL_STATUSES = frozenset({"completed", "failed", "timed_out", "cancelled"})
# `additional_kwargs` key of an outcome notice
BACKGROUND_KWARG = "background_task"


class BackgroundTaskConfig(BaseModel):
    """One subagent's background setting: `{"enabled": True, "timeout_ms": ..., "retries": 0}`."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    timeout_ms: int | None = Field(default=None, ge=1, strict=True)
    retries: int = Field(default=0, ge=0, strict=True)

    @classmethod
    def of(cls, value: Any) -> BackgroundTaskConfig | None:
        """A declared setting: `True` (the defaults), a mapping, a config; None for
        `None` / `False`.

        Raises:
            pydantic.ValidationError: the mapping is not a valid setting.
        """
        if value is None or value is False:
            return None
        if isinstance(value, cls):
            return value
        return cls() if value is True else cls.model_validate(value)


class BackgroundSettings(BaseModel):
    """`Agent(background_tasks={"tools": {subagent key: {...}}})`."""

    model_config = ConfigDict(extra="forbid")

    tools: dict[str, BackgroundTaskConfig] = Field(default_factory=dict)

    def for_key(self, key: str) -> BackgroundTaskConfig | None:
        config = self.tools.get(key)
        return config if config is not None and config.enabled else None


def background_setting(tool: Any) -> BackgroundTaskConfig | None:
    """The background setting a tool declares (`create_tool(background=...)`, or
    `metadata={"background": {...}}` on any LangChain tool), when enabled: a subagent
    holding such a tool runs in the background (seed 000, "inherit from the subagent")."""
    setting = BackgroundTaskConfig.of((getattr(tool, "metadata", None) or {}).get("background"))
    return setting if setting is not None and setting.enabled else None


def _merge_tasks(current: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any]:
    merged = dict(current or {})
    for task_id, record in (new or {}).items():
        merged[task_id] = {**merged.get(task_id, {}), **record}
    return merged


class BackgroundState(SupervisorState, total=False):
    background_tasks: Annotated[dict[str, Any], _merge_tasks]


class BackgroundInput(SupervisorInput, total=False):
    background_tasks: Annotated[dict[str, Any], _merge_tasks]
    # 1 when a run answers outcomes whose `on_delegation_complete` bailed: it stops after
    # its first turn (SPEC §12; the channel is SupervisorState's)
    stop_at: int | None


class FullState(WorkingMemoryState, BackgroundState, total=False):
    pass


class FullInput(WorkingMemoryInput, BackgroundInput, total=False):
    pass


def state_schema(working_memory: bool, background: bool) -> type:
    """The graph state of an agent: extra channels only for the features it uses."""
    if working_memory and background:
        return FullState
    if background:
        return BackgroundState
    return WorkingMemoryState if working_memory else SupervisorState


def input_schema(working_memory: bool, background: bool) -> type:
    if working_memory and background:
        return FullInput
    if background:
        return BackgroundInput
    return WorkingMemoryInput if working_memory else SupervisorInput


def task_id_of(thread_id: str | None, namespace: str, tool_call_id: str) -> str:
    """A task's id: the same when the node that starts it runs again (retry, resume)."""
    digest = hashlib.sha256(f"{thread_id}|{namespace}|{tool_call_id}".encode()).hexdigest()
    return f"bg_{digest[:20]}"


def started_text(task_id: str, tool_name: str) -> str:
    return (
        f"Background task started. Task ID: {task_id}. The tool \"{tool_name}\" is running in the background. "
        "You will be notified when it completes."
    )


def notice(task_id: str, agent_key: str, status: str, text: str, value: Any = None) -> HumanMessage:
    """The message that brings a finished task's outcome into the parent's thread (with
    the subagent's typed answer, `value`, when it has an output schema)."""
    word = {"timed_out": "timed out"}.get(status, status)
    about: dict[str, Any] = {"task_id": task_id, "agent_key": agent_key, "status": status}
    if value is not None:
        about["object"] = value
    return HumanMessage(content=f"[Background task {task_id} {word}]\n{text}", additional_kwargs={BACKGROUND_KWARG: about})


@dataclass(slots=True)
class BackgroundLaunch:
    """Everything a launcher needs to run one background delegation."""

    task_id: str
    key: str
    agent_id: str
    tool_call_id: str
    tool_name: str
    prompt: str
    graph: Any  # the subagent's compiled graph
    config: Any  # its RunnableConfig (metadata), without a thread yet
    context: Any  # its RunContext (options, run handle)
    settings: BackgroundTaskConfig
    parent_options: Any  # the parent's RunOptions (on_delegation_complete)
    parent_handle: Any  # the parent's RunHandle
    extra: dict[str, Any] = field(default_factory=dict)


class BackgroundLauncher(Protocol):
    async def launch(self, launch: BackgroundLaunch) -> None:
        """Start the task; its record (`running`) is stored when this returns, before the
        launching tool answers (SPEC §12)."""


def outcome_text(status: str, delegation: DelegationRecord, timeout_ms: int | None) -> str:
    """What a notice says of a task that ended with `status`: `on_delegation_complete`'s
    `result_text` when it gave one, the answer, or a generic reason (never the provider's
    error text)."""
    if delegation.result_text is not None:
        return str(delegation.result_text)  # on_delegation_complete's result_text replaces the answer
    if status == "completed":
        return str(delegation.text)
    if status == "timed_out":
        return f"The subagent {delegation.agent_id!r} ran longer than {timeout_ms} ms and was stopped."
    if status == "cancelled":
        return f"The subagent {delegation.agent_id!r} was cancelled: the run was aborted."
    return failure_text(delegation.agent_id)
