"""A supervisor for the Aegra scale-out test: its subagent's model is slow (so a server
can be killed mid-run) and its tool appends to a ledger, once per tool call id (the
idempotency key SPEC §19 gives tools), so the test can count side effects."""

from __future__ import annotations

import os
from pathlib import Path

from langchain_core.messages import HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, create_tool, current_tool_call
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

LEDGER = Path(os.environ.get("SG_AEGRA_LEDGER", "/tmp/sg-aegra-ledger"))


class Entry(BaseModel):
    text: str


def _record(entry: Entry) -> str:
    key = current_tool_call().id
    seen = LEDGER.read_text().split() if LEDGER.exists() else []
    if key not in seen:  # idempotent: a run re-run elsewhere from its checkpoint adds nothing
        with LEDGER.open("a") as f:
            f.write(f"{key}\n")
    return f"recorded {entry.text}"


record = create_tool(id="record", description="Record an entry.", input_schema=Entry, execute=_record)


def _worker(messages):
    if isinstance(messages[-1], ToolMessage):
        return f"done: {messages[-1].content}"
    ask = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
    return tool_call("record", {"text": ask})  # a fresh id, as a real model gives


worker = Agent(
    id="worker-agent",
    description="Records entries slowly.",
    model=ScriptedChatModel(policy=_worker, latency=float(os.environ.get("SG_AEGRA_LATENCY", "2.0")), record_calls=False),
    tools=[record],
)


def _boss(messages):
    if isinstance(messages[-1], ToolMessage):
        return f"finished: {messages[-1].content}"
    return delegate("worker", str(messages[-1].content))


graph = Agent(
    id="boss",
    model=ScriptedChatModel(policy=_boss, record_calls=False),
    agents={"worker": worker},
).compile()
