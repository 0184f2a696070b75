"""What a run returns: its result and the items it waits for (SPEC §5)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, Field

from supervisor_graph.declaration.tools import is_client_tool
from supervisor_graph.nodes.delegation.control import (
    DelegationResult,
)
from supervisor_graph.nodes.guards.core import Tripwire
from supervisor_graph.nodes.observability.cost import RunCosts, usage_by_model_of_run
from supervisor_graph.nodes.state import add_usage, run_start, usage_by_agent_of_run, usage_total, zero_usage
from supervisor_graph.nodes.steps.decisions import ALL_DECISIONS
from supervisor_graph.nodes.steps.structured_output import OutputSchema, StructuredOutputError
from supervisor_graph.nodes.text import text_of
from supervisor_graph.nodes.turn.routing import last_turn, unanswered
from supervisor_graph.run.chunks import Usage

if TYPE_CHECKING:
    from supervisor_graph.agent import Agent
    from supervisor_graph.run.call import Run

__all__ = [
    "GenerateResult",
    "PendingItem",
    "background_pending",
    "build_result",
    "client_tools",
    "decision_fields",
    "pending_items",
    "run_schema",
]


class PendingItem(BaseModel):
    """Something the run waits for: an approval, a suspended tool, or a client tool."""

    kind: str
    interrupt_id: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    agent_path: tuple[str, ...] = ()
    run_id: str | None = None
    payload: Any = None
    resume_schema: dict[str, Any] | None = None
    """JSON schema the resume data must match (a suspended tool with a `resume_schema`)."""
    namespace: str = ""
    """Checkpoint namespace of the graph whose tool paused (`""` for the top-level agent;
    a delegation's namespace otherwise, which tells concurrent delegations apart)."""
    allowed_decisions: list[str] = Field(default_factory=list)
    """For an approval, what the person may decide (SPEC §29): `approve`, `edit` (answer
    `{"approved": true, "args": {...}}`), `reject` (`{"approved": false, "message": ...}`)."""
    input_schema: dict[str, Any] | None = None
    """For an approval, the JSON schema of the tool's arguments: what an edit must match."""
    description: str | None = None
    """For an approval, the text its tool declared to show the person deciding."""

    @property
    def is_interrupt(self) -> bool:
        """An approval or a suspended tool, answered by resuming the run; a `client_tool`
        item is answered instead with a `ToolMessage` as the next call's prompt."""
        return self.kind != "client_tool"


class GenerateResult(BaseModel):
    """The outcome of a run."""

    model_config = {"arbitrary_types_allowed": True}

    text: str
    messages: list[BaseMessage]
    usage: Usage
    finish_reason: str
    run_id: str
    thread_id: str | None = None
    suspended: list[PendingItem] = Field(default_factory=list)
    delegations: list[DelegationResult] = Field(default_factory=list)
    """This run's delegations by the top-level agent, in the order they finished (the
    `DelegationResult` that `on_delegation_complete` sees as `ctx.result`; kept in
    memory, never in the parent's thread)."""
    object: Any = None
    """The validated answer when the run has an output schema (SPEC §28): a model
    instance for a pydantic model, a dict otherwise; `text` is then its JSON."""
    error: StructuredOutputError | None = None
    """Why a run ended `finish_reason "error"`: an answer that never matched the output
    schema (the schema, the field errors and the raw text)."""
    tripwire: Tripwire | None = None
    """Which guard stopped the run, where and why, when it ended `finish_reason
    "tripwire"` (SPEC §30); nothing of the run is then stored in the thread."""
    usage_by_agent: dict[str, Usage] = Field(default_factory=dict)
    """`usage` split by agent: each agent's own model calls under its path (agent ids
    from the top agent down, joined by `/`, e.g. `"parent/research-agent"`); the entries
    sum to `usage`. Derived from the checkpointed messages as `usage` is, so it stays
    right across a pause and resume."""

    @property
    def cost(self) -> float | None:
        """What the run's model calls cost in USD (SPEC §33): `usage.cost`, the sum of the
        `cost` of each `usage_by_agent` entry. Priced from pydantic's `genai-prices` table
        by the model that answered each call, when first read (so no field of a dump);
        None when a model among them has no price there (one warning per model), never 0."""
        return self.usage.cost


def _new_messages(run: Run, messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], int]:
    """This run's messages after its input, and the index its input starts at."""
    if run.first_input_id is not None:
        for i in range(len(messages) - 1, -1, -1):
            if messages[i].id == run.first_input_id:
                return list(messages[i + run.input_count :]), i
    start = run_start(messages)
    return list(messages[start + 1 :]), start


def pending_items(run: Run, interrupts: Sequence[Any]) -> list[PendingItem]:
    items = []
    for item in interrupts:
        value = item.value if isinstance(item.value, dict) else {"payload": item.value}
        items.append(
            PendingItem(
                kind=value.get("kind", "approval"),
                interrupt_id=item.id,
                tool_call_id=value.get("tool_call_id"),
                tool_name=value.get("tool_name"),
                args=value.get("args") or {},
                agent_path=tuple(value.get("agent_path") or (run.agent.id,)),
                run_id=run.run_id,
                payload=value.get("payload", value),
                namespace=value.get("namespace") or "",
                resume_schema=value.get("resume_schema"),
                **decision_fields(value),
            )
        )
    return items


def decision_fields(value: Any) -> dict[str, Any]:
    """A pending approval's allowed decisions, input schema and description, from its
    interrupt value (all three decisions for a pause recorded before they existed)."""
    if not isinstance(value, dict) or value.get("kind", "approval") != "approval":
        return {}
    return {
        "allowed_decisions": list(value.get("allowed_decisions") or ALL_DECISIONS),
        "input_schema": value.get("input_schema"),
        "description": value.get("description"),
    }


def client_tools(agent: Agent) -> set[str]:
    """Names of the agent's tools that the caller runs (no `execute`)."""
    return {name for name, tool in agent.tools.items() if is_client_tool(tool)}


def _client_calls(run: Run, messages: Sequence[BaseMessage]) -> list[PendingItem]:
    """The top-level agent's client-tool calls its run ended on, for the caller to answer."""
    client = client_tools(run.agent)
    return [
        PendingItem(
            kind="client_tool",
            tool_call_id=call["id"],
            tool_name=call["name"],
            args=call["args"],
            agent_path=(run.agent.id,),
            run_id=run.run_id,
        )
        for call in unanswered(messages)
        if call["name"] in client
    ]


def build_result(run: Run, values: dict[str, Any] | None, aborted: bool) -> GenerateResult:
    values = values or {}
    messages = values.get("messages") or []
    new, start = _new_messages(run, messages)
    interrupts = values.get("__interrupt__") or ()
    _, last = last_turn(messages)
    if aborted:
        reason = "abort"
    elif interrupts:
        reason = "suspended"
    else:
        reason = values.get("finish_reason") or "stop"
    text = text_of(last) if last is not None and (not last.tool_calls or reason == "stop") and not aborted else ""
    tripwire = Tripwire.model_validate(values["tripwire"]) if reason == "tripwire" and values.get("tripwire") else None
    if reason == "tripwire":  # the run's messages were taken out of the thread: none is this run's
        new, start, text = [], len(messages), ""
    value, error = values.get("structured_response"), values.get("structured_output_error")
    schema = run_schema(run) if value is not None else None
    if schema is not None and not aborted and not interrupts:
        text = OutputSchema.dumps(value)
    by_agent = usage_by_agent_of_run(messages, start, run.agent.id)
    handle = run.context.handle
    # guards' model calls, and the answers a guard kept out of the thread, are in no message (SPEC §30)
    if handle is not None and handle.guard_usage:
        for path, counts in handle.guard_usage.items():
            add_usage(by_agent.setdefault(path, zero_usage()), counts)
    usage = usage_total(by_agent)
    # priced only when read (SPEC §33: unused is free)
    costs = RunCosts(
        by_agent,
        partial(usage_by_model_of_run, messages, start, run.agent.id),
        list(handle.guard_answers) if handle is not None else (),
    )
    return GenerateResult(
        # a hard stop (SPEC §7) ends on a turn whose tool calls never ran: its text is the answer
        text=text,
        object=schema.to_object(value) if schema is not None and not aborted and not interrupts else None,
        error=StructuredOutputError.from_dict(error) if error and reason == "error" else None,
        messages=new,
        usage=Usage(**usage).priced(costs.total),
        usage_by_agent={path: Usage(**counts).priced(partial(costs.of, path)) for path, counts in by_agent.items()},
        finish_reason=reason,
        tripwire=tripwire,
        run_id=run.run_id,
        thread_id=run.thread_id,
        suspended=pending_items(run, interrupts) or (_client_calls(run, messages) if reason == "tool-calls" else []),
        delegations=[record.to_result() for record in run.context.handle.delegations.values()]  # type: ignore[union-attr]
        if run.context.handle is not None
        else [],
    )


def run_schema(run: Run) -> OutputSchema | None:
    """The output schema of a run's top agent: the call's, else the agent's."""
    return run.options.output_schema or run.agent.output_schema


def background_pending(records: Sequence[dict[str, Any]], run_id: str) -> list[PendingItem]:
    """The approvals (and suspended tools) paused background tasks wait for."""
    items = []
    for record in records:
        for item in record.get("waiting") or ():
            items.append(
                PendingItem(
                    kind=item["kind"],
                    interrupt_id=item["interrupt_id"],
                    tool_call_id=item.get("tool_call_id"),
                    tool_name=item.get("tool_name"),
                    args=item.get("args") or {},
                    agent_path=tuple(item.get("agent_path") or ()),
                    run_id=run_id,
                    payload=item.get("payload"),
                    resume_schema=item.get("resume_schema"),
                    namespace=item.get("namespace") or "",
                    **decision_fields(item),
                )
            )
    return items
