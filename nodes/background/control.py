"""The background control plane (SPEC §12): tools a supervisor with background
subagents is offered to look after its tasks, as deepagents' async subagents have.

`check_background_task(task_id)`, `list_background_tasks()`,
`cancel_background_task(task_id)` and `update_background_task(task_id, instructions)`
are answered in the supervisor's own step, like working-memory updates: by the run's
host when it has one (the run facade's, whose records hold every try), else from the
task records checkpointed in the thread (reading works everywhere; cancelling and
updating need the host that runs the task). A bad id is a tool error the model sees.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.messages import ToolCall, ToolMessage

from supervisor_graph.nodes.steps.protocol import Answered, ModelRequest, Step

if TYPE_CHECKING:
    from supervisor_graph.nodes.background.tasks import BackgroundSettings
    from supervisor_graph.nodes.spec import AgentSpec

__all__ = [
    "background_of",
    "CONTROL_SCHEMAS",
    "ControlTools",
    "CONTROL_TOOLS",
    "BackgroundControl",
    "ControlError",
    "answer_control_calls",
    "control_schemas",
    "describe_task",
]

CHECK, LIST, CANCEL, UPDATE = (
    "check_background_task",
    "list_background_tasks",
    "cancel_background_task",
    "update_background_task",
)
CONTROL_TOOLS = frozenset({CHECK, LIST, CANCEL, UPDATE})

_TASK_ID = {"task_id": {"type": "string", "description": "The id from the 'Background task started' result."}}


def control_schemas() -> list[dict[str, Any]]:
    """The four tools as the supervisor model sees them."""

    def tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
        parameters = {"type": "object", "properties": properties, "required": required}
        return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}

    return [
        tool(CHECK, "Status of a background task (running, completed, failed, timed_out, cancelled), its tries, and its "
             "result once it has ended.", _TASK_ID, ["task_id"]),
        tool(LIST, "The background tasks of this conversation, one line each.", {}, []),
        tool(CANCEL, "Cancel a running background task; you will be notified that it was cancelled.", _TASK_ID, ["task_id"]),
        tool(
            UPDATE,
            "Give a running background task new instructions: it goes on with them as its next input.",
            {**_TASK_ID, "instructions": {"type": "string", "description": "What the task should do now."}},
            ["task_id", "instructions"],
        ),
    ]


# built once: every agent with background subagents binds these
CONTROL_SCHEMAS = control_schemas()


class ControlError(ValueError):
    """A control call that cannot be answered (unknown id, nothing hosts the task): the
    model sees the message as a tool error."""


class BackgroundControl(Protocol):
    """What a host answers (`supervisor_graph.background.RunBackground`)."""

    async def task_records(self) -> list[dict[str, Any]]: ...

    async def cancel_task(self, task_id: str) -> str: ...

    async def update_task(self, task_id: str, instructions: str) -> str: ...


def describe_task(record: Mapping[str, Any], *, full: bool) -> str:
    """One task as a line (`full`: with its result text when it has ended)."""
    line = f"{record.get('task_id')} (agent-{record.get('agent_key')}): {record.get('status')}, tries {record.get('tries', 0)}"
    if record.get("waiting"):
        line += ", waiting for an approval"
    if full and record.get("result_text"):
        line += f"\n{record['result_text']}"
    return line


def _find(records: list[dict[str, Any]], task_id: Any) -> dict[str, Any]:
    for record in records:
        if record.get("task_id") == task_id:
            return record
    known = ", ".join(str(r.get("task_id")) for r in records) or "none"
    raise ControlError(f"there is no background task {task_id!r} in this conversation (tasks: {known})")


async def _answer(
    call: ToolCall, host: BackgroundControl | None, state_records: Mapping[str, Any], launching: list[str]
) -> str:
    args = call.get("args") or {}
    records = await host.task_records() if host is not None else [dict(r, task_id=k) for k, r in state_records.items()]
    name = call["name"]
    if name == LIST:
        lines = [describe_task(r, full=False) for r in records]
        # a launch beside this call gets its task id when its own call answers (its record
        # is stored then): it is named here so the list never leaves it out
        lines += [f"(starting now) {tool}: its task id is in that call's result" for tool in launching]
        return "\n".join(lines) or "No background tasks in this conversation."
    task_id = args.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        raise ControlError(f"{name} needs a task_id (a string)")
    record = _find(records, task_id)
    if name == CHECK:
        return describe_task(record, full=True)
    if host is None:
        raise ControlError(f"{name}: nothing hosts background tasks where this graph runs; the task goes on as it is")
    if name == CANCEL:
        return await host.cancel_task(task_id)
    instructions = args.get("instructions")
    if not isinstance(instructions, str) or not instructions.strip():
        raise ControlError("update_background_task needs instructions (a non-empty string)")
    return await host.update_task(task_id, instructions)


async def answer_control_calls(
    calls: list[ToolCall],
    host: BackgroundControl | None,
    state_records: Mapping[str, Any],
    launching: list[str] | None = None,
) -> list[ToolMessage]:
    """A result for each control call of a turn, in call order (`launching`: the
    background delegations the same turn starts, by tool name)."""
    out = []
    for call in calls:
        try:
            text, status = await _answer(call, host, state_records, launching or []), "success"
        except ControlError as exc:
            text, status = f"Error: {exc}", "error"
        out.append(ToolMessage(content=text, tool_call_id=call["id"] or "", name=call["name"], status=status))
    return out


class ControlTools(Step):
    """Background tasks as a step of the supervisor's turn (SPEC §12): the control tools
    (check, list, cancel, update) offered, and their calls answered in the turn by the
    run's host of background tasks, or by the LangGraph server hosting them."""

    name = "background_control"
    tools = tuple(CONTROL_SCHEMAS)
    answers = CONTROL_TOOLS

    def __init__(
        self,
        settings: BackgroundSettings,
        delegation_tools: Mapping[str, str],
        server_host_for: Callable[[Any], Any] | None = None,
    ) -> None:
        self.settings, self.delegation_tools, self.server_host_for = settings, delegation_tools, server_host_for

    async def aanswer_calls(self, request: ModelRequest, response: Any) -> Answered:
        control = [c for c in response.tool_calls if c["name"] in CONTROL_TOOLS]
        tasks: Mapping[str, Any] = request.state.get("background_tasks") or {}
        handle = request.handle
        host = handle.background
        if host is None and self.server_host_for is not None:
            server = self.server_host_for(request.config)  # the server hosts the tasks of this thread
            host = server.control(handle.thread_id or "", dict(tasks)) if server is not None else None
        launching = [
            c["name"]
            for c in response.tool_calls
            if (key := self.delegation_tools.get(c["name"])) is not None and self.settings.for_key(key) is not None
        ]
        return Answered(results=await answer_control_calls(control, host, tasks, launching))


def background_of(spec: AgentSpec) -> BackgroundSettings | None:
    """Which of the agent's delegations run as background tasks (SPEC §12), if any do."""
    step = spec.steps.find(ControlTools)
    return step.settings if step is not None else None
