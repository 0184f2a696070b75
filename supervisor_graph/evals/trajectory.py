"""The trajectory a run stored, as a tree: each agent's own tool calls and its
delegations, nested (SPEC §31). Read from the run's messages and the delegation threads
its memory kept (`sub_agent_thread_id`), never from a second, instrumented run; where a
delegation kept no thread, its `sub_agent_tool_results` give its calls one level deep."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from supervisor_graph.nodes.steps.structured_output import FINAL_ANSWER_TOOL
from supervisor_graph.nodes.steps.working_memory import WORKING_MEMORY_TOOL
from supervisor_graph.nodes.text import text_of

__all__ = ["AgentRun", "ToolUse", "read_tree", "DELEGATION_PREFIX"]

DELEGATION_PREFIX = "agent-"
# calls the library makes for an agent, not the agent's own tools
_BOOKKEEPING = {WORKING_MEMORY_TOOL, FINAL_ANSWER_TOOL}


@dataclass
class ToolUse:
    """One tool call an agent made (`turn`: which of its model turns made it)."""

    name: str
    args: dict[str, Any]
    id: str = ""
    turn: int = 0
    error: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "args": self.args}


@dataclass
class AgentRun:
    """One agent's part of a run: the top agent (`key` None) or one delegation."""

    agent_id: str
    key: str | None = None
    prompt: str = ""
    success: bool = True
    turn: int = 0
    tool_call_id: str = ""
    tools: list[ToolUse] = field(default_factory=list)
    delegations: list[AgentRun] = field(default_factory=list)
    calls: list[ToolUse | AgentRun] = field(default_factory=list)
    """Tool calls and delegations together, in the order they were made."""

    @property
    def name(self) -> str:
        return self.key or self.agent_id

    def all_tools(self) -> Iterator[ToolUse]:
        """Every tool call of this subtree, depth first in the order made; a delegation
        is its `agent-<key>` call, followed by its own calls."""
        for call in self.calls:
            if isinstance(call, AgentRun):
                yield ToolUse(name=DELEGATION_PREFIX + (call.key or ""), args={"prompt": call.prompt}, id=call.tool_call_id)
                yield from call.all_tools()
            else:
                yield call

    def count_tool_calls(self) -> int:
        return sum(1 for _ in self.all_tools())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"agent": self.name, "agent_id": self.agent_id}
        if self.key is not None:
            out.update(prompt=self.prompt, success=self.success)
        out["tools"] = [tool.to_dict() for tool in self.tools]
        out["delegations"] = [child.to_dict() for child in self.delegations]
        return out


def _add(node: AgentRun, call: ToolUse | AgentRun) -> None:
    node.calls.append(call)
    (node.delegations if isinstance(call, AgentRun) else node.tools).append(call)  # type: ignore[arg-type]


async def read_tree(
    agent_id: str,
    messages: Sequence[BaseMessage],
    memory: Any = None,
    delegations: Mapping[str, Any] | None = None,
    *,
    node: AgentRun | None = None,
) -> AgentRun:
    """`agent_id`'s calls in `messages` (its thread, or a run's new messages), with each
    delegation read from its thread in `memory`. `delegations`: the run's
    `DelegationResult`s by tool call id (the facade's `result.delegations`)."""
    node = node or AgentRun(agent_id=agent_id)
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    turn = node.turn
    for message in messages:
        if not isinstance(message, AIMessage):
            continue
        turn += 1
        for call in message.tool_calls:
            name, args, call_id = call["name"], dict(call.get("args") or {}), call.get("id") or ""
            if name in _BOOKKEEPING:
                continue
            answer = results.get(call_id)
            if not name.startswith(DELEGATION_PREFIX):
                args = _edited_args(answer) or args  # a call a person edited ran with the edited arguments
                _add(node, ToolUse(name, args, call_id, turn, error=getattr(answer, "status", "") == "error"))
                continue
            record = (delegations or {}).get(call_id)
            artifact = answer.artifact if answer is not None and isinstance(answer.artifact, dict) else {}
            child = AgentRun(
                agent_id=str(getattr(record, "agent_id", "") or artifact.get("agent_id") or name[len(DELEGATION_PREFIX) :]),
                key=name[len(DELEGATION_PREFIX) :],
                prompt=str(getattr(record, "prompt", "") or args.get("prompt") or ""),
                success=bool(getattr(record, "success", artifact.get("success", answer is not None and answer.status != "error"))),
                turn=turn,
                tool_call_id=call_id,
            )
            _add(node, child)
            thread = getattr(record, "sub_agent_thread_id", None) or artifact.get("sub_agent_thread_id")
            if thread and memory is not None:
                sub = await memory.get_messages(thread)
                await read_tree(child.agent_id, _this_delegation(sub, child.prompt), memory, node=child)
            else:
                for result in getattr(record, "sub_agent_tool_results", None) or ():
                    _from_tool_result(child, result)
    return node


# nodes/steps/decisions.py `edited_result`: the result of an edited call says what it ran with
_EDITED = re.compile(r"^\[The user edited the arguments before this call ran: (\{.*?\})\]\n", re.DOTALL)


def _edited_args(answer: ToolMessage | None) -> dict[str, Any] | None:
    if answer is None:
        return None
    found = _EDITED.match(text_of(answer))
    if found is None:
        return None
    try:
        args = json.loads(found.group(1))
    except json.JSONDecodeError:
        return None
    return args if isinstance(args, dict) else None


def _this_delegation(messages: Sequence[BaseMessage], prompt: str) -> Sequence[BaseMessage]:
    """A delegation's part of its thread: from its prompt on (a thread kept per parent
    thread holds the earlier delegations too)."""
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    same = [i for i in humans if text_of(messages[i]).strip() == prompt.strip()]
    start = (same or humans or [-1])[-1]
    return messages[start + 1 :]


def _from_tool_result(node: AgentRun, result: Mapping[str, Any]) -> None:
    name, args = str(result.get("tool_name") or ""), dict(result.get("args") or {})
    turn = len(node.calls) + 1  # the results list no turns: taken as one call per turn
    if name in _BOOKKEEPING:
        return
    if name.startswith(DELEGATION_PREFIX):
        key = name[len(DELEGATION_PREFIX) :]
        child = AgentRun(
            agent_id=key, key=key, prompt=str(args.get("prompt") or ""), success=result.get("status") != "error", turn=turn
        )
        _add(node, child)
    else:
        _add(node, ToolUse(name, args, str(result.get("tool_call_id") or ""), turn, error=result.get("status") == "error"))
