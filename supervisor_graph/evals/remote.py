"""Cases against a served agent over AG-UI (`supervisor-graph eval --url`): the run's
server-sent events give its answer, finish reason, usage and, when the server shows
subagents (`serve --subagents attributed`), the delegation tree: each `SUBAGENT_STARTED`
ties a subagent run to the `agent-<key>` call that started it, and every tool call
carries the subagent run that made it. A hidden server shows the top agent's calls only.
Approvals are answered with `RunAgentInput.resume`; the case's request context travels
as `forwardedProps.request_context`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from supervisor_graph.evals.cases import Case, Decision
from supervisor_graph.evals.targets import Transcript, _waiting, decision_payload_of, thread_for
from supervisor_graph.evals.trajectory import DELEGATION_PREFIX, AgentRun, ToolUse
from supervisor_graph.nodes.observability.cost import sum_costs, token_usage_cost

__all__ = ["RemoteTarget", "tree_of_events"]


def _get(event: dict[str, Any], snake: str) -> Any:
    head, *rest = snake.split("_")
    camel = head + "".join(part.title() for part in rest)
    return event.get(camel, event.get(snake))


@dataclass
class _Call:
    id: str
    name: str
    sub: str | None
    message: str | None
    args: str = ""


@dataclass
class _Events:
    calls: list[_Call] = field(default_factory=list)
    subagents: dict[str, str] = field(default_factory=dict)  # subagent run -> the call that started it
    names: dict[str, str] = field(default_factory=dict)  # subagent run -> agent id
    text: dict[str, str] = field(default_factory=dict)  # top-level message id -> text
    finished: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    def add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "TOOL_CALL_START":
            self.calls.append(_Call(_get(event, "tool_call_id"), _get(event, "tool_call_name"), _get(event, "subagent_run_id"), _get(event, "parent_message_id")))
        elif kind == "TOOL_CALL_ARGS":
            for call in reversed(self.calls):
                if call.id == _get(event, "tool_call_id"):
                    call.args += event.get("delta") or ""
                    break
        elif kind == "SUBAGENT_STARTED":
            run = _get(event, "subagent_run_id")
            self.subagents[run], self.names[run] = _get(event, "parent_tool_call_id"), event.get("name") or ""
        elif kind == "TEXT_MESSAGE_CONTENT" and not _get(event, "subagent_run_id"):
            message = _get(event, "message_id") or ""
            self.text[message] = self.text.get(message, "") + (event.get("delta") or "")
        elif kind == "RUN_FINISHED":
            self.finished = event
        elif kind == "RUN_ERROR":
            self.error = event


def tree_of_events(agent_id: str, calls: list[_Call], subagents: dict[str, str], names: dict[str, str]) -> AgentRun:
    """The delegation tree that a run's tool-call and subagent events describe."""
    root = AgentRun(agent_id=agent_id)
    by_call: dict[str, AgentRun] = {}
    turns: dict[int, dict[str | None, int]] = {}
    seen: set[str] = set()
    for call in calls:
        if call.id in seen:  # a resumed run reopens the calls it answers: counted once
            continue
        seen.add(call.id)
        owner = by_call.get(subagents.get(call.sub or "", ""), root) if call.sub else root
        per_owner = turns.setdefault(id(owner), {})
        turn = per_owner.setdefault(call.message, len(per_owner) + 1)
        try:
            args = json.loads(call.args) if call.args else {}
        except json.JSONDecodeError:
            args = {"_raw": call.args}
        if call.name.startswith(DELEGATION_PREFIX):
            key = call.name[len(DELEGATION_PREFIX) :]
            child = AgentRun(agent_id=key, key=key, prompt=str(args.get("prompt") or ""), turn=turn, tool_call_id=call.id)
            by_call[call.id] = child
            owner.calls.append(child)
            owner.delegations.append(child)
        else:
            use = ToolUse(call.name, args, call.id, turn)
            owner.calls.append(use)
            owner.tools.append(use)
    for run, call_id in subagents.items():
        if call_id in by_call and names.get(run):
            by_call[call_id].agent_id = names[run]
    return root


class RemoteTarget:
    """An AG-UI endpoint (`http://host:port/agent`)."""

    def __init__(self, url: str, *, agent: Any = None, headers: dict[str, str] | None = None, timeout: float = 300.0) -> None:
        self.url, self.headers, self.timeout = url, dict(headers or {}), timeout
        self.name = getattr(agent, "id", None) or url
        self.agent, self.top = agent, getattr(agent, "id", None) or "agent"  # the served agent's id is not on the wire

    def check(self, case: Case, file: str) -> None:
        if self.agent is not None and hasattr(self.agent, "agents"):
            from supervisor_graph.evals.targets import _check_keys

            _check_keys(self.agent, case.expect.delegations or [], "expect.delegations", case, file)

    async def _post(self, client: Any, body: dict[str, Any]) -> _Events:
        events = _Events()
        headers = {"accept": "text/event-stream", **self.headers}
        async with client.stream("POST", self.url, json=body, headers=headers) as response:
            if response.status_code >= 400:
                raise RuntimeError(f"{self.url} answered {response.status_code}: {(await response.aread()).decode()[:300]}")
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    events.add(json.loads(line[5:]))
        if events.error is not None:
            raise RuntimeError(f"RUN_ERROR {events.error.get('code')}: {events.error.get('message')}")
        return events

    async def run(self, case: Case) -> Transcript:
        import httpx

        thread, out = thread_for(case), Transcript()
        decisions: Iterator[Decision] = iter(case.approvals)
        calls: list[_Call] = []
        subagents: dict[str, str] = {}
        names: dict[str, str] = {}
        props = {"request_context": case.request_context} if case.request_context else {}
        events = _Events()
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            for turn in case.turns:
                message = {"id": f"u-{uuid.uuid4().hex[:8]}", "role": "user", "content": turn}
                body = _body(thread, [message], props)
                while True:
                    events = await self._post(client, body)
                    calls += events.calls
                    subagents.update(events.subagents)
                    names.update(events.names)
                    usage = (events.finished or {}).get("usage") or []
                    out.tokens += sum(int(_get(u, "total_tokens") or 0) for u in usage if isinstance(u, dict))
                    out.cost = sum_costs((out.cost, token_usage_cost(u for u in usage if isinstance(u, dict))))
                    outcome = (events.finished or {}).get("outcome") or {}
                    if outcome.get("type") != "interrupt":
                        break
                    pending = (outcome.get("interrupts") or [{}])[0]
                    meta = ((pending.get("metadata") or {}).get("supervisor_graph")) or {}
                    kind = "approval" if meta.get("type") == "tool_approval" else "suspend"
                    decision = next(decisions, None) if kind == "approval" else None
                    if decision is None:
                        out.waiting = _waiting(kind, meta.get("tool_name"), meta.get("agent_path"))
                        break
                    entry = {"interruptId": pending.get("id"), "status": "resolved", "payload": decision_payload_of(decision)}
                    body = _body(thread, [], props, resume=[entry])
                if out.waiting:
                    break
        finished = events.finished or {}
        metadata = (finished.get("metadata") or {}).get("supervisor_graph") or {}
        outcome = finished.get("outcome") or {}
        out.finish_reason = "suspended" if outcome.get("type") == "interrupt" else str(
            metadata.get("finish_reason") or _get(metadata, "finish_reason") or "stop"
        )
        out.object = finished.get("result")
        out.text = list(events.text.values())[-1] if events.text else ""
        out.unused_decisions = sum(1 for _ in decisions)
        out.tree = tree_of_events(self.top, calls, subagents, names)
        return out


def _body(thread: str, messages: list[dict[str, Any]], props: dict[str, Any], resume: Any = None) -> dict[str, Any]:
    body = {
        "threadId": thread,
        "runId": f"eval-{uuid.uuid4().hex[:8]}",
        "state": {},
        "messages": messages,
        "tools": [],
        "context": [],
        "forwardedProps": props,
    }
    if resume is not None:
        body["resume"] = resume
    return body
