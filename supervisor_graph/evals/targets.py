"""What a case runs against: an `Agent` through the facade, or its compiled graph
(`graph.ainvoke` and `Command(resume=...)`), each giving back a `Transcript` read from
what the run stored (`remote.py` does the same over AG-UI)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from supervisor_graph.agent import Agent
from supervisor_graph.evals.cases import Case, Decision, DelegationExpect
from supervisor_graph.evals.trajectory import AgentRun, read_tree
from supervisor_graph.memory.memory import Memory
from supervisor_graph.nodes.observability.cost import RunCosts, sum_costs, usage_by_model_of_run
from supervisor_graph.nodes.scope.context import RequestContext
from supervisor_graph.nodes.state import usage_by_agent_of_run, usage_of_run
from supervisor_graph.nodes.text import text_of

__all__ = ["AgentTarget", "GraphTarget", "HarnessError", "Transcript", "decision_payload_of", "thread_for"]


class HarnessError(RuntimeError):
    """The harness cannot run the cases at all (exit status 2): a bad target, a graph
    without a checkpointer, a scorer that does not import, a subagent key the agent lacks."""


@dataclass
class Transcript:
    """What one run of a case left: its answer, how it ended, what it cost, its tree."""

    text: str = ""
    object: Any = None
    finish_reason: str = "stop"
    tokens: int = 0
    cost: float | None = 0.0
    """USD (SPEC §33); None when a model has no price."""
    tree: AgentRun = field(default_factory=lambda: AgentRun(agent_id="agent"))
    messages: list[BaseMessage] = field(default_factory=list)
    waiting: str | None = None
    """Why the run still waits (its approvals ran out, a suspended tool): the case fails."""
    unused_decisions: int = 0


def thread_for(case: Case) -> str:
    """The case's thread: the one it names, else a fresh one for each run of it."""
    return case.memory.thread or f"eval-{case.id}-{uuid.uuid4().hex[:8]}"


def decision_payload_of(decision: Decision) -> dict[str, Any]:
    """The one resume payload of SPEC §29."""
    if decision.decision == "reject":
        return {"approved": False, **({"message": decision.message} if decision.message else {})}
    if decision.decision == "edit":
        return {"approved": True, "args": decision.args}
    return {"approved": True}


def _waiting(kind: str, tool: str | None, path: Any) -> str:
    where = "/".join(path) if path else ""
    if kind == "approval":
        return f"waiting for an approval of {tool} ({where}): the case gave no decision for it"
    return f"waiting for {'a suspended tool' if kind == 'suspend' else 'a client tool'} {tool} ({where}): a case can only answer approvals"


class AgentTarget:
    """A declared agent, run through `generate` / `approve_tool_call` / `decline_tool_call`.
    An agent without memory runs on an in-process one, so its delegation threads can be read."""

    def __init__(self, agent: Agent) -> None:
        self.name = agent.id
        self.agent = agent if agent.memory is not None else agent.model_copy(update={"memory": Memory(":memory:")})

    def check(self, case: Case, file: str) -> None:
        if self.agent.agents_factory is None:
            _check_keys(self.agent, case.expect.delegations or [], "expect.delegations", case, file)

    async def run(self, case: Case) -> Transcript:
        agent, out = self.agent, Transcript()
        memory = {"thread": thread_for(case), "resource": case.memory.resource}
        options: dict[str, Any] = {"memory": memory, "request_context": RequestContext(dict(case.request_context))}
        if case.versions is not None:
            options["versions"] = case.versions
        if case.max_steps is not None:
            options["max_steps"] = case.max_steps
        decisions = iter(case.approvals)
        records: dict[str, Any] = {}
        result = None
        for turn in case.turns:
            result = await agent.generate(turn, **options)
            while result.finish_reason == "suspended" and result.suspended:
                records.update({d.tool_call_id: d for d in result.delegations})
                item = result.suspended[0]
                decision = next(decisions, None) if item.kind == "approval" else None
                if decision is None:
                    out.waiting = _waiting(item.kind, item.tool_name, item.agent_path)
                    break
                target: dict[str, Any] = {"interrupt_id": item.interrupt_id, "memory": memory, "run_id": result.run_id}
                if decision.decision == "reject":
                    result = await agent.decline_tool_call(**target, message=decision.message)
                else:
                    result = await agent.approve_tool_call(**target, args=decision.args)
            records.update({d.tool_call_id: d for d in result.delegations})
            out.tokens += result.usage.total_tokens
            out.cost = sum_costs((out.cost, result.cost))
            if out.waiting:
                break
        assert result is not None
        out.text, out.object, out.finish_reason = result.text, result.object, result.finish_reason
        out.unused_decisions = sum(1 for _ in decisions)
        stored = await agent.memory.get_messages(memory["thread"])  # type: ignore[union-attr]
        out.messages = list(result.messages)
        out.tree = await read_tree(agent.id, stored, agent.memory, records)
        return out


def _check_keys(agent: Any, expected: list[DelegationExpect], field_: str, case: Case, file: str) -> None:
    from supervisor_graph.evals.loading import EvalFileError

    subagents = getattr(agent, "agents", None)
    if not isinstance(subagents, dict) or getattr(agent, "agents_factory", None) is not None:
        return
    for index, item in enumerate(expected):
        where = f"{field_}[{index}].agent"
        if item.agent not in subagents:
            known = ", ".join(sorted(subagents)) or "none"
            raise EvalFileError(
                f"{getattr(agent, 'id', '?')!r} has no subagent {item.agent!r} (its subagents: {known})",
                file=file,
                case=case.id,
                field=where,
            )
        _check_keys(subagents[item.agent], item.delegations or [], f"{field_}[{index}].delegations", case, file)


class GraphTarget:
    """A compiled graph (`agent.compile(checkpointer=...)`, `compile_agent`): run with
    `ainvoke`, answered with `Command(resume=...)`, its threads read with the graph's own
    checkpointer."""

    def __init__(self, graph: Any) -> None:
        saver = getattr(graph, "checkpointer", None)
        if saver is None or isinstance(saver, bool):
            raise HarnessError(
                "the compiled graph has no checkpointer, so its delegation threads cannot be read: "
                "compile it with one (agent.compile(checkpointer=InMemorySaver())) or pass the Agent"
            )
        self.graph, self.name = graph, str(getattr(graph, "name", None) or "agent")
        self.memory = Memory(saver)

    def check(self, case: Case, file: str) -> None:
        return None

    async def run(self, case: Case) -> Transcript:
        from langgraph.types import Command

        config: Any = {"configurable": {"thread_id": thread_for(case)}}
        context: dict[str, Any] = {"request_context": dict(case.request_context)}
        if case.versions is not None:
            context["versions"] = case.versions
        if case.max_steps is not None:
            context["max_steps"] = case.max_steps
        decisions: Iterator[Decision] = iter(case.approvals)
        out, values = Transcript(), {}
        for turn in case.turns:
            values = await self.graph.ainvoke({"messages": [HumanMessage(turn)]}, config, context=context)
            start = _last_human(values.get("messages") or [])
            while values.get("__interrupt__"):
                pending = values["__interrupt__"][0]
                value = pending.value if isinstance(pending.value, dict) else {}
                decision = next(decisions, None) if value.get("kind", "approval") == "approval" else None
                if decision is None:
                    out.waiting = _waiting(value.get("kind", "approval"), value.get("tool_name"), value.get("agent_path"))
                    break
                answer: Any = Command(resume={pending.id: decision_payload_of(decision)})
                values = await self.graph.ainvoke(answer, config, context=context)
            messages = values.get("messages") or []
            out.tokens += usage_of_run(messages, start)["total_tokens"]
            out.cost = sum_costs((out.cost, _cost_of_run(messages, start, self.name)))
            if out.waiting:
                break
        messages = values.get("messages") or []
        last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        out.text = text_of(last) if last is not None and not last.tool_calls else ""
        out.object = values.get("structured_response")
        out.finish_reason = "suspended" if values.get("__interrupt__") else values.get("finish_reason") or "stop"
        out.unused_decisions = sum(1 for _ in decisions)
        out.messages = messages[_last_human(messages) + 1 :]
        out.tree = await read_tree(self.name, messages, self.memory)
        return out


def _cost_of_run(messages: list[Any], start: int, agent_id: str) -> float | None:
    """USD of the model calls since `start`, subagents' included (SPEC §33)."""
    by_agent = usage_by_agent_of_run(messages, start, agent_id)
    return RunCosts(by_agent, usage_by_model_of_run(messages, start, agent_id)).total()


def _last_human(messages: list[Any]) -> int:
    return max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=0)
