"""Delegation control (SPEC §6.2-6.7): the hook nodes on a delegation edge, the message
filter, hook-error handling and what the supervisor model sees of a result.

`<key>.start` runs `on_delegation_start`; `<key>.complete` runs `on_delegation_complete`.
The supervisor routes through them only when the run has that hook, so an unset hook
costs no super-step. The message filter runs inside the subagent node (it shapes the
subagent's model context, which is rebuilt whenever that node runs, also on resume).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Command, Send
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from supervisor_graph.checkpointers.compat import read_channel
from supervisor_graph.nodes.context import DELEGATION_HOOK_ERRORS, RequestContext
from supervisor_graph.nodes.events import Emitter
from supervisor_graph.nodes.options import RunContext, RunHandle, RunOptions
from supervisor_graph.nodes.prefix_cache import PrefixCache
from supervisor_graph.nodes.references import assign_ref, ref_line
from supervisor_graph.nodes.routing import SUPERVISOR_NODE, DelegationTask, complete_node, last_turn, unanswered
from supervisor_graph.nodes.scope import run_scope
from supervisor_graph.nodes.spec import AgentSpec, maybe_await
from supervisor_graph.nodes.state import Usage, run_start, usage_of_run
from supervisor_graph.nodes.supervisor import free_updates, iteration_of_run
from supervisor_graph.nodes.text import text_of

__all__ = [
    "DELEGATION_HOOK_ERRORS",
    "RUN_ID_KEY",
    "RESOURCE_ID_KEY",
    "THREAD_ID_KEY",
    "RUN_IDENTITY_KEYS",
    "DelegationCompleteContext",
    "DelegationCompleteResult",
    "DelegationRecord",
    "DelegationResult",
    "DelegationStartContext",
    "DelegationStartResult",
    "HookFailed",
    "apply_message_filter",
    "complete_hook",
    "finish_delegation",
    "record_answer",
    "record_transcript",
    "failure_text",
    "make_complete_node",
    "make_start_node",
    "model_view",
    "record_hook_error",
    "run_hook",
    "validate_hook_result",
]

log = logging.getLogger("supervisor_graph")

# Where every hook failure of a run is recorded, in the top-level run's request context.
# Run-level identity keys in a request context; never copied to a delegation's context.
RUN_ID_KEY = "__supervisor_graph_run_id"
THREAD_ID_KEY = "__supervisor_graph_thread_id"
RESOURCE_ID_KEY = "__supervisor_graph_resource_id"
RUN_IDENTITY_KEYS = frozenset({RUN_ID_KEY, THREAD_ID_KEY, RESOURCE_ID_KEY, DELEGATION_HOOK_ERRORS})

DEFAULT_REJECTION = "The supervisor's delegation policy declined this delegation."



# -- hook contexts and results ------------------------------------------------------


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


class DelegationResult(BaseModel):
    """One delegation's outcome, read by attribute: `ctx.result` in
    `on_delegation_complete` and each item of `GenerateResult.delegations` (SPEC §6.5).

    On a failed delegation `success` is false, `text` is the partial text (or `""`) and
    `error` names the exception's type (the exception itself is `ctx.error`).
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
    finish_reason: str = "stop"
    sub_agent_tool_results: list[dict[str, Any]] = field(default_factory=list)
    sub_agent_pending_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    sub_agent_thread_id: str | None = None
    sub_agent_resource_id: str | None = None
    error: BaseException | None = None
    messages: list[BaseMessage] = field(default_factory=list)
    ref_id: str | None = None
    # what `on_delegation_complete` put in place of the text (may be "")
    result_text: str | None = None

    def summary(self) -> dict[str, Any]:
        """The outcome as plain JSON values (stream payloads, tool-result context)."""
        return {
            "tool_call_id": self.tool_call_id,
            "agent_key": self.key,
            "agent_id": self.agent_id,
            "prompt": self.prompt,
            "success": self.success,
            "ref_id": self.ref_id,
            "error": type(self.error).__name__ if self.error is not None else None,
            **self.outcome(),
        }

    def outcome(self) -> dict[str, Any]:
        """What the subagent produced (what `include_sub_agent_tool_results_in_model_context` shows)."""
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
        return DelegationResult.model_validate(self.summary())


# -- running hooks --------------------------------------------------------------


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


def failure_text(agent_id: str) -> str:
    """What the supervisor model sees of a failed delegation: never the raw error."""
    return f"[Delegation Failed] {agent_id} could not complete this task. Try another approach or explain the failure."


# -- the subagent's view of the parent's conversation ---------------------------------


# each conversation's view so far: a delegation late in a long conversation then only
# looks at the messages since the previous one
_VIEWS: PrefixCache[list[BaseMessage]] = PrefixCache()


def model_view(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The parent's conversation as model context for a subagent (SPEC §8): tool calls,
    tool results and empty messages are dropped."""
    hit = _VIEWS.get(messages)
    start, done = hit if hit is not None else (0, [])
    out = [*done, *_view(messages[start:])]
    _VIEWS.put(messages, len(messages), out)
    return list(out)


def _view(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            continue
        if isinstance(message, AIMessage):
            text = text_of(message)
            if not text:
                continue
            if message.tool_calls:
                message = AIMessage(content=text, id=message.id, name=message.name)
            out.append(message)
        elif message.content:
            out.append(message)
    return out


async def apply_message_filter(
    opts: RunOptions, handle: RunHandle, messages: list[BaseMessage], primitive_id: str, prompt: str, tool_call_id: str
) -> list[BaseMessage]:
    """The parent's messages the subagent receives: `message_filter`'s choice, or all.

    Raises:
        HookFailed: the filter failed and the strategy is `throw`.
    """
    message_filter = opts.delegation.message_filter
    if message_filter is None:
        return messages
    try:
        chosen = await maybe_await(message_filter(messages=list(messages), primitive_id=primitive_id, prompt=prompt))
        if not isinstance(chosen, list) or not all(isinstance(m, BaseMessage) for m in chosen):
            raise TypeError(f"message_filter must return a list of messages, not {type(chosen).__name__}")
        return chosen
    except Exception as exc:  # noqa: BLE001
        failure = HookFailed("message_filter", exc)
        throw = opts.delegation.hook_error_strategy == "throw"
        record_hook_error(handle, failure, primitive_id, tool_call_id, warn=not throw)
        if throw:
            raise failure from exc
        return messages


def check_json(values: dict[str, Any], where: str) -> None:
    """Request-context values must survive a durable checkpointer: JSON or a clear error."""
    for key, value in values.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise TypeError(
                f"{where}: request context entry {key!r} holds a {type(value).__name__}, which is not "
                "JSON-serialisable; with a durable checkpointer (sqlite, Postgres) request-context "
                "values must be JSON values"
            ) from None


# -- the hook nodes -------------------------------------------------------------------


def make_start_node(parent: AgentSpec, key: str, sub_id: str) -> Any:
    async def delegation_start(task: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        opts, handle = run_scope(parent, config, runtime)
        hook = opts.delegation.on_delegation_start
        call = task["call"]
        if hook is None:  # options changed between the turn and this node: pass through
            return Command(goto=Send(key, task))
        tool_call_id = call["id"] or ""
        messages = read_channel(config, "messages") or []
        child = handle.request_context.fork(RUN_IDENTITY_KEYS)
        ctx = DelegationStartContext(
            primitive_id=sub_id,
            prompt=task["prompt"],
            iteration=iteration_of_run(messages, free_updates(parent, opts)),
            request_context=child,
            tool_call_id=tool_call_id,
            run_id=handle.run_id,
        )
        throw = opts.delegation.hook_error_strategy == "throw"
        try:
            decision: DelegationStartResult = await run_hook(hook, ctx, DelegationStartResult, "on_delegation_start")
        except HookFailed as failure:
            record_hook_error(handle, failure, sub_id, tool_call_id, warn=not throw)
            if throw:
                failed = ToolMessage(
                    content=failure_text(sub_id), tool_call_id=tool_call_id, name=call["name"], status="error"
                )
                return Command(update={"messages": [failed]}, goto=SUPERVISOR_NODE)
            decision = DelegationStartResult()
        if not decision.proceed:
            reason = decision.rejection_reason or DEFAULT_REJECTION
            rejected = ToolMessage(content=f"[Delegation Rejected] {reason}", tool_call_id=tool_call_id, name=call["name"])
            return Command(update={"messages": [rejected]}, goto=SUPERVISOR_NODE)
        values = child.to_dict()
        if handle.durable:
            check_json(values, f"on_delegation_start for {sub_id!r}")
        forward: DelegationTask = {
            **task,
            "prompt": decision.modified_prompt if decision.modified_prompt is not None else task["prompt"],
            "max_steps": decision.modified_max_steps or task.get("max_steps"),
            "request_context": values,
            "thread_metadata": decision.thread_metadata,
        }
        return Command(goto=Send(key, forward))

    delegation_start.__name__ = f"{key}_start"
    return delegation_start


def result_message(
    opts: RunOptions, handle: RunHandle, record: DelegationRecord, call: dict[str, Any], artifact: dict[str, Any]
) -> ToolMessage:
    """The tool result the supervisor model sees for a finished delegation."""
    replaced = record.result_text is not None
    if not record.success:
        return ToolMessage(
            content=record.result_text if replaced else failure_text(record.agent_id),  # type: ignore[arg-type]
            tool_call_id=record.tool_call_id,
            name=call["name"],
            artifact=artifact,
            status="error",
        )
    content = record.result_text if replaced else record.text
    assert content is not None
    if opts.delegation.enable_result_references and content:
        record.ref_id = assign_ref(handle, record.agent_id, content)
        artifact["ref_id"] = record.ref_id
    if opts.delegation.include_sub_agent_tool_results_in_model_context:
        content = json.dumps({**record.outcome(), "agent_id": record.agent_id}, default=str)
    if record.sub_agent_pending_tool_calls:
        never_ran = ", ".join(
            f"{c['tool_name']}({json.dumps(c['args'], default=str)})" for c in record.sub_agent_pending_tool_calls
        )
        content += (
            f"\n\n[{record.agent_id} stopped at tools only the caller can run; these never ran: {never_ran}]"
        )
    if record.ref_id:
        content += ref_line(record.ref_id)
    return ToolMessage(content=content, tool_call_id=record.tool_call_id, name=call["name"], artifact=artifact)


async def complete_hook(
    opts: RunOptions, handle: RunHandle, record: DelegationRecord, sub_id: str
) -> tuple[DelegationCompleteResult | None, bool]:
    """Run `on_delegation_complete` on a finished delegation (None: the run has no such
    hook), and whether it bailed. Its `result_text` lands in `record.result_text`; with
    `hook_error_strategy="throw"` a failing hook turns a success into a failure."""
    hook = opts.delegation.on_delegation_complete
    if hook is None:
        return None, False
    tool_call_id = record.tool_call_id
    ctx = DelegationCompleteContext(
        primitive_id=sub_id,
        result=record.to_result(),
        success=record.success,
        error=record.error,
        messages=list(record.messages),
        tool_call_id=tool_call_id,
        run_id=handle.run_id,
    )
    throw = opts.delegation.hook_error_strategy == "throw"
    try:
        outcome: DelegationCompleteResult = await run_hook(hook, ctx, DelegationCompleteResult, "on_delegation_complete")
    except HookFailed as failure:
        record_hook_error(handle, failure, sub_id, tool_call_id, warn=not throw)
        outcome = DelegationCompleteResult()
        if throw and record.success:
            # the delegation becomes a failure; a failed one keeps its own error
            record.success, record.error, record.text = False, failure.cause, ""
    if outcome.result_text is not None:
        record.result_text = outcome.result_text
    return outcome, ctx.bailed


def finish_delegation(
    opts: RunOptions,
    handle: RunHandle,
    record: DelegationRecord,
    call: dict[str, Any],
    key: str,
    artifact: dict[str, Any],
    emit: Emitter,
    namespace: str,
) -> Command[Any]:
    """What a subagent node returns once its subagent (local or remote) has run: on to
    `<key>.complete` when the run has that hook, else the tool result for the supervisor
    (a caller's cancel inside the delegation stops the parent too)."""
    if emit.active:
        emit("delegation-complete", {**record.summary(), "namespace": namespace})
    if opts.delegation.on_delegation_complete is not None:
        payload = {"call": call, "artifact": artifact, "text": record.text, "prompt": record.prompt}
        return Command(goto=Send(complete_node(key), payload))
    message = result_message(opts, handle, record, call, artifact)
    if emit.active:
        emit(
            "tool-result" if record.success else "tool-error",
            {"tool_name": call["name"], "result": message.content, **record.summary()},
        )
    update: dict[str, Any] = {"messages": [message]}
    if artifact.get("cancelled"):
        update["bail"] = True
    return Command(update=update, goto=SUPERVISOR_NODE)


def make_complete_node(parent: AgentSpec, key: str, sub_id: str) -> Any:
    async def delegation_complete(payload: Any, config: RunnableConfig, runtime: Runtime[RunContext]) -> Any:
        opts, handle = run_scope(parent, config, runtime)
        call = payload["call"]
        artifact: dict[str, Any] = dict(payload["artifact"])
        tool_call_id = call["id"] or ""
        record: DelegationRecord | None = handle.delegations.get(tool_call_id)
        if record is None:  # resumed in a new process: rebuild what the checkpoint has
            record = DelegationRecord(
                tool_call_id=tool_call_id,
                key=key,
                agent_id=sub_id,
                prompt=payload.get("prompt", ""),
                success=artifact.get("success", True),
                text=payload.get("text", ""),
                usage=artifact.get("usage") or {},
                finish_reason=artifact.get("finish_reason", "stop"),
                sub_agent_thread_id=artifact.get("sub_agent_thread_id"),
                sub_agent_resource_id=artifact.get("sub_agent_resource_id"),
            )
            handle.delegations[tool_call_id] = record
        update: dict[str, Any] = {}
        outcome, bailed = await complete_hook(opts, handle, record, sub_id)
        if outcome is not None:
            if not record.success:
                artifact["success"] = False
            if outcome.feedback:
                update["feedback"] = [outcome.feedback]
            if bailed:
                update["bail"] = True
        message = result_message(opts, handle, record, call, artifact)
        emit = Emitter(runtime, handle)
        if emit.active:
            emit(
                "tool-result" if record.success else "tool-error",
                {"tool_name": call["name"], "result": message.content, **record.summary()},
            )
        update["messages"] = [message]
        if artifact.get("cancelled"):  # the caller cancelled a suspended call in the subagent
            update["bail"] = True
        return Command(update=update, goto=SUPERVISOR_NODE)

    delegation_complete.__name__ = f"{key}_complete"
    return delegation_complete


# -- a delegation's record from its subagent's state -------------------------------------


def record_transcript(record: DelegationRecord, latest: dict[str, Any]) -> None:
    """A delegation's transcript, usage and tool results from its subagent's last state
    (a failed run keeps its partial transcript)."""
    messages = latest.get("messages") or []
    start = run_start(messages)
    record.messages = list(messages[start:])
    record.usage = usage_of_run(messages, start)
    record.sub_agent_tool_results = _tool_results(record.messages)


def record_answer(record: DelegationRecord, latest: dict[str, Any]) -> None:
    """A finished delegation's text and finish reason (after `record_transcript`)."""
    _, last = last_turn(record.messages)
    record.text = text_of(last) if last is not None and not last.tool_calls else ""
    record.finish_reason = latest.get("finish_reason") or "stop"
    if record.finish_reason == "tool-calls":
        record.sub_agent_pending_tool_calls = [
            {"tool_call_id": call["id"], "tool_name": call["name"], "args": call["args"]}
            for call in unanswered(record.messages)
        ]
        if last is not None:
            record.text = text_of(last)
        log.warning(
            "subagent %r called client tools it cannot run (%s); they never ran",
            record.agent_id,
            ", ".join(c["tool_name"] for c in record.sub_agent_pending_tool_calls),
        )


def _tool_results(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    calls: dict[str, dict[str, Any]] = {}
    out = []
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                calls[call["id"] or ""] = dict(call)
        elif isinstance(message, ToolMessage):
            made = calls.get(message.tool_call_id, {})
            out.append(
                {
                    "tool_call_id": message.tool_call_id,
                    "tool_name": message.name or made.get("name"),
                    "args": made.get("args", {}),
                    "result": message.content,
                    "status": message.status,
                }
            )
    return out
