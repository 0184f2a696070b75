"""One run's full-stream chunks as AG-UI events.

`RunTranslator.on_chunk` maps each chunk as it arrives; `finish` / `fail` close
whatever is open (text, reasoning, subagent invocations, deepest first) and add the
run's single terminal event. Rules (AGUI.md): text and reasoning as `streams.py` keeps
them; a call that may wait for approval is held back until its outcome is known (never
a call without a result); a resumed run reopens the calls it continues.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
    SubagentStartedEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from supervisor_graph.agui.content import result_content
from supervisor_graph.agui.interrupts import OMIT, SUPERVISOR_GRAPH, Dialect, Pause
from supervisor_graph.agui.state import SharedState
from supervisor_graph.agui.state import delta as state_delta
from supervisor_graph.agui.streams import MessageStreams
from supervisor_graph.agui.subagents import Invocation, SubagentTracker, error_code, subagent_run_id
from supervisor_graph.agui.tree import AgentTree
from supervisor_graph.agui.usage import UsageMeter
from supervisor_graph.nodes.observability.cost import token_usage_cost
from supervisor_graph.nodes.steps.working_memory import WORKING_MEMORY_TOOL
from supervisor_graph.run.chunks import StreamChunk
from supervisor_graph.run.facade import GenerateResult
from supervisor_graph.run.partial import json_value

__all__ = ["Reopen", "RunSettings", "RunTranslator"]

Key = tuple[str, str]  # (namespace, tool call id)
NO_RESULT = "[no result: the run ended before this call finished]"


def _now() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class RunSettings:
    dialect: Dialect
    attributed: bool
    omit_subagent_results: bool
    parts: bool
    frontend_tools: frozenset[str]
    tree: AgentTree
    shared: SharedState | None = None


@dataclass(frozen=True, slots=True)
class Reopen:
    """A call a resumed run continues: `full` (approval, never streamed) gets its
    arguments again; otherwise the client has the call and gets START/END only."""

    full: bool
    tool_name: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    parent_message_id: str | None = None


@dataclass(slots=True)
class _Call:
    name: str
    args: dict[str, Any]
    message_id: str | None


class RunTranslator:
    def __init__(
        self,
        settings: RunSettings,
        thread_id: str,
        run_id: str,
        reopen: dict[Key, Reopen] | None = None,
        *,
        state: dict[str, Any] | None = None,
    ) -> None:
        self.s = settings
        # the client's shared state as last sent (None: the agent has no working memory)
        self.state = state
        self.thread_id = thread_id
        self.run_id = run_id  # RunAgentInput.run_id
        self.graph_run_id = ""  # the LangGraph run's id (stable across a resume)
        self.reopen = reopen or {}
        self.usage = UsageMeter()
        self.subagents = SubagentTracker()
        self.streams = MessageStreams(self._sub, None if self.s.dialect.camel else self.s.dialect.meta)
        self.calls: dict[Key, _Call] = {}
        self.held: dict[Key, _Call] = {}
        self.started: set[Key] = set()
        self.resulted: set[Key] = set()
        self.frontend: list[Key] = []
        self._ids: dict[Key, str] = {}
        self._used: set[str] = set()

    # -- helpers ----------------------------------------------------------------

    def _visible(self, ns: str) -> bool:
        return not ns or self.s.attributed

    def _sub(self, ns: str) -> str | None:
        return subagent_run_id(self.graph_run_id, ns) if ns and self.s.attributed else None

    def _call_id(self, key: Key) -> str:
        """The AG-UI id of a call: its own, unless another agent of this run used it."""
        got = self._ids.get(key)
        if got is None:
            got = key[1]
            if got in self._used:
                got = f"{key[1]}~{subagent_run_id(self.graph_run_id, key[0])[:8]}"
            self._used.add(got)
            self._ids[key] = got
        return got

    def _start_call(self, key: Key, call: _Call, *, args: bool) -> list[BaseEvent]:
        cid, sub = self._call_id(key), self._sub(key[0])
        events: list[BaseEvent] = [
            ToolCallStartEvent(
                tool_call_id=cid,
                tool_call_name=call.name,
                parent_message_id=call.message_id,
                subagent_run_id=sub,
                timestamp=_now(),
            )
        ]
        if args:
            delta = json.dumps(call.args, default=str)
            events.append(ToolCallArgsEvent(tool_call_id=cid, delta=delta, subagent_run_id=sub, timestamp=_now()))
        events.append(ToolCallEndEvent(tool_call_id=cid, subagent_run_id=sub, timestamp=_now()))
        self.started.add(key)
        return events

    def _result(self, key: Key, content: Any) -> list[BaseEvent]:
        self.resulted.add(key)
        return [
            ToolCallResultEvent(
                message_id=str(uuid.uuid4()),
                tool_call_id=self._call_id(key),
                content=content,
                role="tool",
                subagent_run_id=self._sub(key[0]),
                timestamp=_now(),
            )
        ]

    # -- chunks -----------------------------------------------------------------

    def on_chunk(self, chunk: StreamChunk) -> list[BaseEvent]:
        if not self.graph_run_id:
            self.graph_run_id = chunk.run_id
        handler: Callable[[StreamChunk], list[BaseEvent]] | None = getattr(self, "_on_" + chunk.type.replace("-", "_"), None)
        return handler(chunk) if handler is not None else []

    def _on_background_task(self, chunk: StreamChunk) -> list[BaseEvent]:
        """A background task started or ended (SPEC §12): a `CUSTOM` event named after the
        chunk (`supervisor_graph.background-task-started`, ...) with its payload, which the
        playground draws in the delegation tree."""
        return [CustomEvent(name=f"supervisor_graph.{chunk.type}", value=dict(chunk.payload), timestamp=_now())]

    def _on_guard(self, chunk: StreamChunk) -> list[BaseEvent]:
        """A guard's verdict, or the trip that stopped an agent (SPEC §30): a `CUSTOM` event
        (`supervisor_graph.guard` / `supervisor_graph.tripwire`, never the checked text)
        naming the agent's invocation, which the playground's timeline draws."""
        value = {**chunk.payload, "agent_path": list(chunk.agent_path)}
        if chunk.namespace and self.graph_run_id:
            value["subagent_run_id"] = subagent_run_id(self.graph_run_id, chunk.namespace)
        return [CustomEvent(name=f"supervisor_graph.{chunk.type}", value=value, timestamp=_now())]

    _on_tripwire = _on_guard

    def _on_background_task_started(self, chunk: StreamChunk) -> list[BaseEvent]:
        """A launch: the CUSTOM event, and (attributed) the end of the launching
        delegation's invocation, whose work is not streamed in this run (its outcome
        comes as a notice). The call's 'started' result is the `tool-result` chunk that
        follows."""
        events = self._on_background_task(chunk)
        if not self.s.attributed:
            return events
        task = chunk.payload
        call_id = self._call_id((chunk.namespace, str(task.get("tool_call_id") or "")))
        launched = [ns for ns, invocation in self.subagents.open.items() if invocation.tool_call_id == call_id]
        for ns in launched:
            events += self.streams.close(ns)
            events += [
                SubagentFinishedEvent(
                    subagent_run_id=invocation.subagent_run_id,
                    outcome=SubagentFinishedSuccessOutcome(),
                    metadata=self.s.dialect.meta(background_task_id=task.get("task_id")),
                    timestamp=_now(),
                )
                for invocation in self.subagents.close(ns)
            ]
        return events

    _on_background_task_completed = _on_background_task
    _on_background_task_failed = _on_background_task

    def _on_text_delta(self, chunk: StreamChunk) -> list[BaseEvent]:
        ns, delta = chunk.namespace, chunk.text
        if not self._visible(ns) or not delta:
            return []
        return self.streams.text_delta(ns, str(chunk.payload.get("message_id") or f"msg-{uuid.uuid4()}"), delta)

    def _on_reasoning_delta(self, chunk: StreamChunk) -> list[BaseEvent]:
        ns, delta = chunk.namespace, chunk.text
        if not self._visible(ns) or not delta:
            return []
        return self.streams.reasoning_delta(ns, str(chunk.payload.get("message_id") or uuid.uuid4()), delta)

    def _on_step_start(self, chunk: StreamChunk) -> list[BaseEvent]:
        ns = chunk.namespace
        if not self._visible(ns):
            return []
        where = f" ({self._sub(ns) or ''}"[:11] + ")" if ns else ""  # parallel delegations of one agent
        return self.streams.step_started(ns, f"{chunk.agent_path[-1]} step {chunk.payload.get('iteration')}{where}")

    def _on_step_finish(self, chunk: StreamChunk) -> list[BaseEvent]:
        ns, payload = chunk.namespace, chunk.payload
        self.usage.add(ns, payload, chunk.agent_path)
        if not self._visible(ns):
            return []
        return self.streams.step_finished(ns, payload)

    def _memory_update(self, chunk: StreamChunk) -> bool:
        """A working-memory update: the client sees its effect on the state, not the call."""
        return chunk.payload.get("tool_name") == WORKING_MEMORY_TOOL and self.s.tree.has_working_memory(chunk.agent_path)

    def _on_tool_call(self, chunk: StreamChunk) -> list[BaseEvent]:
        ns, p = chunk.namespace, chunk.payload
        if self._memory_update(chunk):
            return []
        key = (ns, str(p.get("tool_call_id") or ""))
        call = _Call(name=str(p.get("tool_name")), args=dict(p.get("args") or {}), message_id=p.get("message_id"))
        self.calls[key] = call
        if not self._visible(ns):
            return []
        events = self.streams.close_messages(ns)
        if not ns and call.name in self.s.frontend_tools:
            self.frontend.append(key)
        elif self.s.tree.needs_approval(chunk.agent_path, call.name):
            self.held[key] = call  # shown once its outcome is known
            return events
        return events + self._start_call(key, call, args=True)

    def _on_tool_result(self, chunk: StreamChunk) -> list[BaseEvent]:
        ns, p = chunk.namespace, chunk.payload
        if self._memory_update(chunk):
            written = p.get("working_memory")
            if ns or self.state is None or self.s.shared is None or not isinstance(written, dict):
                return []  # a subagent's own memory is not the client's state
            after = self.s.shared.view(written.get("value"))
            events, self.state = state_delta(self.state, after), after
            return events
        key = (ns, str(p.get("tool_call_id") or ""))
        if not self._visible(ns) or key in self.resulted:
            return []
        events = self._ensure_started(key, p)
        if ns and self.s.omit_subagent_results and chunk.type == "tool-result":
            content: Any = ""
        else:
            content = result_content(p.get("result"), parts=self.s.parts)
        return events + self._result(key, content)

    _on_tool_error = _on_tool_result

    def _ensure_started(self, key: Key, p: dict[str, Any]) -> list[BaseEvent]:
        if key in self.started:
            return []
        held = self.held.pop(key, None)
        if held is not None:
            return self._start_call(key, held, args=True)
        again = self.reopen.get(key, Reopen(full=False))
        call = _Call(
            name=str(p.get("tool_name") or again.tool_name),
            args=dict(p.get("args") or again.args),
            message_id=again.parent_message_id,
        )
        return self._start_call(key, call, args=again.full)

    def _on_delegation_start(self, chunk: StreamChunk) -> list[BaseEvent]:
        parent_ns, p = chunk.namespace, chunk.payload
        key = (parent_ns, str(p.get("tool_call_id") or ""))
        if not self._visible(parent_ns):
            return []
        events = self._ensure_started(key, {"tool_name": f"agent-{p.get('agent_key')}", "args": {}})
        if not self.s.attributed:
            return events
        ns = str(p.get("namespace") or "")
        parent = self.subagents.parent_of(parent_ns)
        name = str(p.get("agent_id"))
        invocation = Invocation(
            subagent_run_id=subagent_run_id(self.graph_run_id, ns),
            namespace=ns,
            name=name,
            tool_call_id=self._call_id(key),
            parent=parent.subagent_run_id if parent else None,
        )
        if self.subagents.start(invocation):
            call = self.calls.get(key)
            events.append(
                SubagentStartedEvent(
                    subagent_run_id=invocation.subagent_run_id,
                    name=name,
                    description=self.s.tree.descriptions.get(name),
                    parent_tool_call_id=invocation.tool_call_id,
                    parent_message_id=call.message_id if call else None,
                    parent_subagent_run_id=invocation.parent,
                    timestamp=_now(),
                )
            )
        return events

    def _on_delegation_complete(self, chunk: StreamChunk) -> list[BaseEvent]:
        if not self.s.attributed:
            return []
        p = chunk.payload
        ns = str(p.get("namespace") or "")
        events = self.streams.close(ns)
        for invocation in self.subagents.close(ns):
            if invocation.namespace != ns:
                events.append(self._cancelled(invocation))
            elif p.get("success"):
                within = self.usage.within(ns)
                meta: dict[str, Any] = {"usage": [u.model_dump(mode="json", by_alias=True) for u in within]}
                if self.s.dialect is SUPERVISOR_GRAPH:  # USD (SPEC §33); the Mastra dialect keeps its shape
                    meta["cost"] = token_usage_cost(within)
                events.append(
                    SubagentFinishedEvent(
                        subagent_run_id=invocation.subagent_run_id,
                        outcome=SubagentFinishedSuccessOutcome(),
                        result=p.get("text"),
                        metadata={self.s.dialect.key: meta},
                        timestamp=_now(),
                    )
                )
            else:
                code = error_code(p.get("error"), mastra=self.s.dialect.camel)
                what = "was blocked by a guardrail" if code in ("GUARDRAIL", "MASTRA_TRIPWIRE") else "failed"
                events.append(
                    SubagentErrorEvent(
                        subagent_run_id=invocation.subagent_run_id,
                        message=f"Subagent {invocation.name!r} {what}; the supervisor was told and goes on.",
                        code=code,
                        timestamp=_now(),
                    )
                )
        return events

    def _cancelled(self, invocation: Invocation) -> BaseEvent:
        return SubagentErrorEvent(
            subagent_run_id=invocation.subagent_run_id,
            message=f"Subagent {invocation.name!r} stopped: the run ended before it finished.",
            code="CANCELLED",
            timestamp=_now(),
        )

    # -- the end ----------------------------------------------------------------

    def _metadata(self, reason: str) -> dict[str, Any]:
        ours = self.s.dialect is SUPERVISOR_GRAPH
        by_agent = self.usage.by_agent() if ours else {}
        return self.s.dialect.meta(
            finish_reason=reason,
            # each agent's own calls of this run, shaped like `usage` (SPEC §24); left out of
            # the Mastra dialect, whose metadata keeps the reference bridge's exact shape
            usage_by_agent={path: [u.model_dump(mode="json", by_alias=True) for u in usage] for path, usage in by_agent.items()}
            if by_agent
            else OMIT,
            # what `usage` cost in USD, and each agent's share (SPEC §33): None when a model has no price
            cost=self.usage.cost() if ours else OMIT,
            cost_by_agent={path: token_usage_cost(usage) for path, usage in by_agent.items()} if by_agent else OMIT,
        )

    def finish(self, result: GenerateResult) -> list[BaseEvent]:
        """Close what is open and end the run: cancelled, interrupt or success."""
        events = self.streams.close()
        done: dict[str, Any] = {"thread_id": self.thread_id, "run_id": self.run_id, "timestamp": _now()}
        if result.finish_reason == "abort":
            events += [self._cancelled(inv) for inv in self.subagents.close_all()]
            return [*events, RunFinishedEvent(outcome=RunFinishedCancelledOutcome(), **done)]
        if result.tripwire is not None:  # a guard stopped the run (SPEC §30): its reason, never the blocked text
            trip, code = result.tripwire, "MASTRA_TRIPWIRE" if self.s.dialect.camel else "GUARDRAIL"
            return [*events, *self.fail(code, f"Blocked by the guardrail {trip.guard!r} at {trip.boundary}: {trip.reason}")]
        usage = self.usage.total()
        waiting = [item for item in result.suspended if item.is_interrupt]  # client tools end as pending_tool_call_ids
        if waiting:
            pauses = [Pause.of_item(item) for item in waiting]
            interrupts = [
                p.interrupt(
                    self.s.dialect,
                    attributed=self.s.attributed,
                    resume_schema=self.s.tree.resume_schema(p.agent_path, p.tool_name)
                    if p.kind == "suspend" and p.resume_schema is None
                    else None,
                )
                for p in pauses
            ]
            for invocation in self.subagents.close_all():
                own = [i.id for p, i in zip(pauses, interrupts, strict=True) if p.namespace == invocation.namespace]
                events.append(
                    SubagentFinishedEvent(
                        subagent_run_id=invocation.subagent_run_id,
                        outcome=SubagentFinishedSuspendedOutcome(interrupt_ids=own or None),
                        timestamp=_now(),
                    )
                )
            outcome: Any = RunFinishedInterruptOutcome(interrupts=interrupts)
            return [*events, RunFinishedEvent(outcome=outcome, usage=usage, metadata=self._metadata(result.finish_reason), **done)]
        for invocation in self.subagents.close_all():
            events.append(SubagentFinishedEvent(subagent_run_id=invocation.subagent_run_id, timestamp=_now()))
        for key in sorted(self.started - self.resulted - set(self.frontend)):
            events += self._result(key, NO_RESULT)
        pending = [self._call_id(k) for k in self.frontend if k not in self.resulted]
        if result.error is not None:  # an answer that never matched the output schema (SPEC §28)
            return [*events, *self.fail("STRUCTURED_OUTPUT_INVALID", str(result.error))]
        if result.object is not None:  # the typed answer, beside any state (SPEC §28)
            done["result"] = json_value(result.object)
        outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=pending or None)
        return [*events, RunFinishedEvent(outcome=outcome, usage=usage, metadata=self._metadata(result.finish_reason), **done)]

    def fail(self, code: str, message: str) -> list[BaseEvent]:
        """Close what is open and end the run with `RUN_ERROR`."""
        events = self.streams.close()
        events += [self._cancelled(inv) for inv in self.subagents.close_all()]
        return [*events, RunErrorEvent(message=message, code=code, usage=self.usage.total(), timestamp=_now())]
