"""Write the three threads tests/compat/test_stored_threads.py loads (issue 48).

It uses only the public API, so the same file writes them with an older release's code
(the fixtures beside it came from 17a052b) and rebuilds the same agents with today's:

    cd /tmp && PYTHONPATH=/path/to/old/checkout python /work/main/tests/compat/write_threads.py file:/tmp/x.db

(run it from outside the repository: Python puts the script's own folder, not the
current one, first on sys.path, but `-c`/`-m` put the current one there, which would
shadow PYTHONPATH's older package with the checkout's).

Every id a stored checkpoint names (agent ids, agent keys, tool names, tool call ids,
thread ids) is fixed here, since the reader must rebuild agents that match them.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

RESOURCE = "compat-user"
APPROVAL, BACKGROUND, STABLE = "approval", "background", "stable"
PAY_CALL_ID = "pay-call-1"
DELEGATION_ID = "delegate-payer-1"


class Amount(BaseModel):
    amount: int


def approval_team(memory: Memory, ledger: list[int]) -> Agent:
    """A supervisor delegating to a subagent whose `pay` tool waits for approval."""
    pay = create_tool(
        id="pay",
        description="Pay an amount.",
        input_schema=Amount,
        execute=lambda a: ledger.append(a.amount) or f"paid {a.amount}",
        require_approval=True,
    )

    def payer_policy(messages: list[Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return "payer done: " + str(messages[-1].content)
        return tool_call("pay", {"amount": 5}, id=PAY_CALL_ID)

    payer = Agent(
        id="payer-agent", description="Pays bills.", model=ScriptedChatModel(policy=payer_policy), tools=[pay]
    )

    def boss_policy(messages: list[Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return "boss done: " + str(messages[-1].content)
        return delegate("payer", "pay 5", id=DELEGATION_ID)

    return Agent(
        id="approval-boss", model=ScriptedChatModel(policy=boss_policy), agents={"payer": payer}, memory=memory
    )


def background_boss_policy(messages: list[Any]) -> Any:
    last = messages[-1]
    if isinstance(last, HumanMessage) and str(last.content).startswith("[Background task"):
        return "reported: " + str(last.content)
    if isinstance(last, ToolMessage):
        return "started, will report"
    return delegate("research", "dig " + str(last.content))


def background_team(memory: Memory) -> Agent:
    """A supervisor whose `research` subagent runs as a background task (SPEC §12)."""
    research = Agent(
        id="research-agent",
        description="Researches.",
        model=ScriptedChatModel(policy=lambda m: "deep facts on " + str(m[-1].content)),
    )
    return Agent(
        id="background-boss",
        model=ScriptedChatModel(policy=background_boss_policy),
        agents={"research": research},
        memory=memory,
        background_tasks={"tools": {"research": {}}},
    )


def stable_team(memory: Memory) -> Agent:
    """A supervisor whose subagent keeps one thread per parent thread; the subagent's
    answer lists every delegated prompt its thread holds, so a second turn shows the
    first (the supervisor's own user message also reaches it, as context, and is left out)."""

    def sub_policy(messages: list[Any]) -> Any:
        prompts = [
            str(m.content) for m in messages if isinstance(m, HumanMessage) and str(m.content).startswith("note ")
        ]
        return "sub saw: " + " | ".join(prompts)

    notes = Agent(id="notes-agent", description="Keeps notes.", model=ScriptedChatModel(policy=sub_policy))

    def boss_policy(messages: list[Any]) -> Any:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return "boss: " + str(last.content)
        return delegate("notes", "note " + str(last.content))

    return Agent(
        id="stable-boss",
        model=ScriptedChatModel(policy=boss_policy),
        agents={"notes": notes},
        memory=memory,
        subagent_threads="per_parent_thread",
    )


def thread(name: str) -> dict[str, str]:
    return {"thread": name, "resource": RESOURCE}


async def write(storage: str) -> None:
    memory = Memory(storage=storage)
    try:
        ledger: list[int] = []
        paused = await approval_team(memory, ledger).generate("pay the bill", memory=thread(APPROVAL))
        assert [i.tool_call_id for i in paused.suspended] == [PAY_CALL_ID] and ledger == [], paused

        done = await background_team(memory).generate_until_idle("first", memory=thread(BACKGROUND))
        assert done.text.startswith("reported: [Background task"), done.text
        [task] = await memory.list_background_tasks(BACKGROUND)
        assert task.status == "completed", task

        first = await stable_team(memory).generate("alpha", memory=thread(STABLE))
        assert first.text == "boss: sub saw: note alpha", first.text
    finally:
        await memory.aclose()


if __name__ == "__main__":
    asyncio.run(write(sys.argv[1]))
    import supervisor_graph

    print(f"wrote {APPROVAL!r}, {BACKGROUND!r}, {STABLE!r} with {supervisor_graph.__file__}")
