"""The agent the double-texting tests drive, in the test process and in a worker process
(`tests/double_texting/worker.py`).

Its scripted model routes on the latest user message: "work ..." calls `note` (a side
effect counted in a ledger file), then `wait` (a tool that sleeps until cancelled, so a
second message finds the run busy), then answers; "pay ..." calls `pay`, which needs
approval; anything else is echoed. Every model call takes `latency` seconds."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.testing import ScriptedChatModel, tool_call


class Text(BaseModel):
    text: str


class Amount(BaseModel):
    amount: int


def build(memory: Memory, ledger: Path, *, latency: float = 0.05, wait: float = 30.0) -> Agent:
    def record(what: str) -> None:
        with open(ledger, "a") as f:
            f.write(f"{what} {os.getpid()}\n")

    async def note(args: Text) -> str:
        record(f"note:{args.text.replace(' ', '-')}")
        return f"noted {args.text}"

    async def waiting(args: Text) -> str:
        record(f"wait:{args.text.replace(' ', '-')}")
        await asyncio.sleep(wait)  # a second message arrives meanwhile
        return f"waited {args.text}"

    def pay(args: Amount) -> str:
        record("pay")
        return "paid"

    tools = [
        create_tool(id="note", description="Note.", input_schema=Text, execute=note),
        create_tool(id="wait", description="Wait.", input_schema=Text, execute=waiting),
        create_tool(id="pay", description="Pay.", input_schema=Amount, execute=pay, require_approval=True),
    ]

    def policy(messages: list[Any]) -> Any:
        ask = next(str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage))
        last = messages[-1]
        if ask.startswith("work"):
            if isinstance(last, HumanMessage):
                return tool_call("note", {"text": ask}, id=f"note-{ask.replace(' ', '-')}")
            if isinstance(last, ToolMessage) and last.name == "note":
                return tool_call("wait", {"text": ask}, id=f"wait-{ask.replace(' ', '-')}")
            return f"done {ask}"
        if ask.startswith("pay") and isinstance(last, HumanMessage):
            return tool_call("pay", {"amount": 5}, id="pay-call")
        return f"echo {ask}"

    return Agent(id="texter", model=ScriptedChatModel(policy=policy, latency=latency), tools=tools, memory=memory)


def ledger_lines(ledger: Path) -> list[str]:
    return [line.split()[0] for line in ledger.read_text().splitlines()] if ledger.exists() else []


def assert_every_call_answered(messages: list[Any]) -> None:
    """Every tool call has exactly one result, right after the turn that made it."""
    for i, message in enumerate(messages):
        calls = [c["id"] for c in getattr(message, "tool_calls", None) or ()]
        if not calls:
            continue
        following = []
        for later in messages[i + 1 :]:
            if not isinstance(later, ToolMessage):
                break
            following.append(later.tool_call_id)
        assert sorted(following) == sorted(calls), messages
