"""What an MCP client hears while `ask_<agent id>` runs (SPEC §27 "MCP progress").

The tool reads the run's AG-UI events; `ProgressReporter.on_event` turns the ones that
mark the run advancing into one line each and sends it as

- `notifications/progress` when the `tools/call` carried `_meta.progressToken`: the
  progress is a counter (1, 2, ...) and the total is unknown (`None`: how many
  delegations a run makes is the model's choice), the line is its `message`;
- `notifications/message` (the `logging` capability), always: `info` for a delegation
  started or finished and for how the run ended, `warning` for a delegation that failed
  or was stopped, `error` for a run that failed.

Both go with the `tools/call`'s request id (`related_request_id`), which is what makes
them reach the client over stateless streamable HTTP: the server has no standalone
stream to a client there, only the SSE response of the request itself.

What counts as a delegation depends on the bridge's `subagent_visibility`: with
`"attributed"` every delegation at every depth is an AG-UI subagent invocation (and the
line names who delegated when it is not the supervisor); with `"hidden"` (the serve
command's default) the client sees only the supervisor's own `agent-<key>` calls, so the
lines cover the supervisor's delegations, not the ones a subagent makes in turn.

Sending never costs the run: a client that went away, or a stream that closed, stops the
notifications, not the run (its answer still goes to the memory thread).
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from ag_ui.core import (
    BaseEvent,
    RunErrorEvent,
    RunFinishedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from mcp.server.fastmcp import Context

__all__ = ["LOGGER_NAME", "ProgressReporter"]

LOGGER_NAME = "supervisor_graph"  # the `logger` of each notifications/message

Level = Literal["debug", "info", "warning", "error"]

log = logging.getLogger("supervisor_graph.mcp")


class ProgressReporter:
    """One `tools/call`'s notifications, from the run's AG-UI events."""

    def __init__(self, ctx: Context[Any, Any, Any], agent: Any, *, attributed: bool) -> None:
        self.ctx = ctx
        meta = ctx.request_context.meta
        self.token = meta.progressToken if meta is not None else None
        self.attributed = attributed
        # `agent-<key>` -> the subagent's id (what a hidden-mode delegation call is named)
        self.delegates = {f"agent-{key}": sub.id for key, sub in getattr(agent, "agents", {}).items()}
        self.names: dict[str, str] = {}  # subagent run id (attributed) or tool call id (hidden) -> subagent id
        self.sent = 0  # the progress counter: the number of progress notifications sent
        self.closed = False

    async def on_event(self, event: BaseEvent) -> None:
        line = self._line(event)
        if line is not None:
            await self.send(*line)

    def _line(self, event: BaseEvent) -> tuple[Level, str] | None:
        if self.attributed:
            if isinstance(event, SubagentStartedEvent):
                self.names[event.subagent_run_id] = event.name
                parent = self.names.get(event.parent_subagent_run_id or "")
                by = f" (by {parent})" if parent else ""
                return "info", f"Delegation to {event.name} started{by}."
            if isinstance(event, SubagentFinishedEvent):
                name = self.names.get(event.subagent_run_id, "a subagent")
                if event.outcome is not None and event.outcome.type == "suspended":
                    return "info", f"Delegation to {name} paused: it waits for a person's answer."
                return "info", f"Delegation to {name} finished."
            if isinstance(event, SubagentErrorEvent):
                name = self.names.get(event.subagent_run_id, "a subagent")
                what = "was stopped" if event.code == "CANCELLED" else f"failed ({event.code or 'SUBAGENT_ERROR'})"
                return "warning", f"Delegation to {name} {what}."
        else:
            if isinstance(event, ToolCallStartEvent) and event.tool_call_name in self.delegates:
                name = self.delegates[event.tool_call_name]
                self.names[event.tool_call_id] = name
                return "info", f"Delegation to {name} started."
            if isinstance(event, ToolCallResultEvent) and event.tool_call_id in self.names:
                return "info", f"Delegation to {self.names.pop(event.tool_call_id)} finished."
        if isinstance(event, RunErrorEvent):
            return "error", f"The run failed ({event.code or 'AGENT_ERROR'}): {event.message}"
        if isinstance(event, RunFinishedEvent):
            if event.outcome is not None and event.outcome.type == "interrupt":
                return "info", "The run paused: it waits for a person's answer."
            return "info", "The run finished."
        return None

    async def send(self, level: Level, message: str) -> None:
        """`message` as a log line and, with a progress token, as the next progress."""
        if self.closed:
            return
        try:
            await self.ctx.log(level, message, logger_name=LOGGER_NAME)
            if self.token is not None:
                self.sent += 1
                await self.ctx.report_progress(self.sent, None, message)
        except Exception as exc:  # noqa: BLE001 - the client left or its stream closed: the run goes on
            self.closed = True
            log.debug("MCP notifications stopped for request %s: %r", self.ctx.request_id, exc)
