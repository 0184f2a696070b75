"""A separate process for the reliability tests: runs one step on a shared database and
prints one JSON line. `SG_CRASH=<tool or "model">` makes that step kill its own process
with SIGKILL at the dangerous moment (after a tool's side effect, or in a model call).

    python tests/reliability/worker.py STORAGE LEDGER STEP [PROMPT]

Every side effect appends one line to LEDGER (fsync'ed), so the tests count them.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time

from langchain_core.messages import HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

THREAD = {"thread": "shared", "resource": "user"}


class Amount(BaseModel):
    amount: int


class Note(BaseModel):
    text: str


def side_effect(ledger: str, what: str, crash_point: str) -> None:
    with open(ledger, "a") as f:
        f.write(f"{what} {os.getpid()}\n")
        f.flush()
        os.fsync(f.fileno())
    if os.environ.get("SG_CRASH") == crash_point:
        os.kill(os.getpid(), signal.SIGKILL)


def build(storage: str, ledger: str, memory: Memory) -> Agent:
    pay = create_tool(
        id="pay",
        description="Pay.",
        input_schema=Amount,
        execute=lambda a: side_effect(ledger, "pay", "pay") or "paid",
        require_approval=True,
    )
    note = create_tool(
        id="note", description="Note.", input_schema=Note, execute=lambda n: side_effect(ledger, "note", "note") or "noted"
    )

    def sub_policy(messages):
        if isinstance(messages[-1], ToolMessage):
            return "recorded"
        return tool_call("note", {"text": "from sub"}, id="call-sub-note")

    sub = Agent(id="sub-agent", description="Records.", model=ScriptedChatModel(policy=sub_policy), tools=[note])

    def policy(messages):
        last = messages[-1]
        if isinstance(last, ToolMessage):
            if os.environ.get("SG_CRASH") == "model":
                os.kill(os.getpid(), signal.SIGKILL)
            return f"after: {last.content}"
        asked = str(last.content) if isinstance(last, HumanMessage) else ""
        if asked.startswith("pay"):
            return tool_call("pay", {"amount": 1}, id="call-pay")
        if asked.startswith("delegate"):
            return delegate("sub", "record it", id="call-delegate")
        if asked.startswith("note"):
            return tool_call("note", {"text": "top"}, id="call-note")
        if asked.startswith("slow"):
            time.sleep(0.5)  # a model call in flight while another process tries the thread
        return f"answer {os.getpid()}"

    return Agent(id="boss", model=ScriptedChatModel(policy=policy), tools=[pay, note], agents={"sub": sub}, memory=memory)


async def step(storage: str, ledger: str, name: str, prompt: str) -> dict:
    go = os.environ.get("SG_GO")
    async with Memory(storage=storage, lease_ttl=float(os.environ.get("SG_LEASE_TTL", "30"))) as memory:
        await memory.opened()
        if go:  # ready: the test touches `go` once every process is (not after a guessed delay)
            open(f"{go}.ready-{os.getpid()}", "w").close()
        while go and not os.path.exists(go):  # start together with the other processes
            await asyncio.sleep(0.005)
        agent = build(storage, ledger, memory)
        try:
            if name == "generate":
                result = await agent.generate(prompt, memory=THREAD)
            elif name == "approve":
                result = await agent.approve_tool_call(tool_call_id="call-pay", memory=THREAD)
            elif name == "inspect":
                from supervisor_graph.run.resume import pending_interrupts

                pending = [i.value.get("tool_call_id") for i in await pending_interrupts(agent, memory=THREAD)]
                messages = await memory.get_messages(THREAD["thread"])
                return {"pending": pending, "messages": [_describe(m) for m in messages]}
            else:
                raise SystemExit(f"unknown step {name}")
        except Exception as exc:  # noqa: BLE001 - reported to the test
            return {"error": type(exc).__name__, "message": str(exc)}
        return {"finish_reason": result.finish_reason, "text": result.text, "pending": [i.tool_call_id for i in result.suspended]}


def _describe(message) -> dict:
    return {
        "type": message.type,
        "content": str(message.content),
        "tool_calls": [c["id"] for c in getattr(message, "tool_calls", []) or []],
        "tool_call_id": getattr(message, "tool_call_id", None),
    }


if __name__ == "__main__":
    storage, ledger, name = sys.argv[1:4]
    print(json.dumps(asyncio.run(step(storage, ledger, name, sys.argv[4] if len(sys.argv) > 4 else ""))))
