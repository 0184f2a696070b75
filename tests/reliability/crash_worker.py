"""Many conversations with parallel delegations in one process, for the crash test
(SPEC §19, "A crash never leaves a call and its result out of step").

    python tests/reliability/crash_worker.py STORAGE run N [DRIVER]    # talks until killed
    python tests/reliability/crash_worker.py STORAGE check N [DRIVER]  # one message per thread

DRIVER is `facade` (`agent.generate`, default) or `graph` (the compiled graph driven
with `graph.ainvoke`, as an app embedding it or a server does).

`run` keeps N conversations going at once: each turn the supervisor makes two parallel
delegations and a tool call of its own, and each subagent calls a tool, every model
call with a small random latency, so a SIGKILL from the test lands anywhere: inside a
model call, between parallel branches, after some of them finished. `check` sends one
new message on every thread and prints, as one JSON line, every tool call and result
of each stored history (parent and delegation threads) and of every model input.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

INPUTS: list[list[BaseMessage]] = []  # every model input of this process (check mode)


class Text(BaseModel):
    text: str


async def _lookup(args: Text) -> str:
    await asyncio.sleep(random.uniform(0, 0.02))
    return f"found {args.text}"


class Recorder(ScriptedChatModel):
    """A scripted model that keeps every input (`calls` is per instance and bounded here)."""

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        INPUTS.append(list(messages))
        return await super()._agenerate(messages, stop, run_manager, **kwargs)


def _boss(messages: list[BaseMessage]) -> Any:
    last = messages[-1]
    if isinstance(last, HumanMessage):
        return [delegate("research", "dig"), delegate("writer", "write"), tool_call("lookup", {"text": "top"})]
    return "done: " + " | ".join(str(m.content)[:20] for m in messages[-3:])


def _worker(messages: list[BaseMessage]) -> Any:
    return "answer" if isinstance(messages[-1], ToolMessage) else tool_call("lookup", {"text": "sub"})


def build(memory: Memory) -> Agent:
    lookup = create_tool(id="lookup", description="Look up.", input_schema=Text, execute=_lookup)

    def sub(name: str) -> Agent:
        model = Recorder(policy=_worker, latency=0.01, record_calls=False)
        return Agent(id=f"{name}-agent", description=f"The {name}.", model=model, tools=[lookup])

    model = Recorder(policy=_boss, latency=0.01, record_calls=False)
    return Agent(id="boss", model=model, tools=[lookup], agents={"research": sub("research"), "writer": sub("writer")}, memory=memory)


async def send(agent: Agent, graph: Any, thread: str, text: str) -> None:
    if graph is None:
        await agent.generate(text, memory={"thread": thread, "resource": "crash"})
    else:
        await graph.ainvoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread}})


async def talk(agent: Agent, graph: Any, thread: str) -> None:
    turn = 0
    while True:
        turn += 1
        await send(agent, graph, thread, f"turn {turn}")


def _pairs(messages: list[BaseMessage]) -> dict[str, Any]:
    """Tool call ids in the order of calls and results, and how many results a repair wrote."""
    order: list[list[str]] = []
    repaired = 0
    for m in messages:
        if isinstance(m, AIMessage):
            order.extend(["call", c["id"] or ""] for c in m.tool_calls)
        elif isinstance(m, ToolMessage):
            order.append(["result", m.tool_call_id])
            repaired += str(m.content).startswith("[Interrupted]")
    return {"order": order, "repaired": repaired}


async def main(storage: str, mode: str, n: int, driver: str) -> None:
    async with Memory(storage, lease_ttl=0.5) as memory:
        agent = build(memory)
        graph = None if driver == "facade" else agent.compile(checkpointer=await memory.checkpointer(), store=await memory.store())
        threads = [f"crash-{i}" for i in range(n)]
        if mode == "run":
            print("ready", flush=True)
            await asyncio.gather(*(talk(agent, graph, t) for t in threads))
            return
        report: dict[str, Any] = {"threads": {}, "inputs": []}
        for thread in threads:
            if not await memory.get_messages(thread):
                continue  # never touched
            await send(agent, graph, thread, "after the crash")
            stored = await memory.get_messages(thread)
            report["threads"][thread] = _pairs(stored)
            for m in stored:  # the delegation threads this conversation made
                artifact = m.artifact if isinstance(m, ToolMessage) and isinstance(m.artifact, dict) else {}
                for key, value in artifact.items():
                    if key.endswith("thread_id") and isinstance(value, str) and value != thread:
                        report["threads"][value] = _pairs(await memory.get_messages(value))
        report["inputs"] = [_pairs(messages) for messages in INPUTS]
        print(json.dumps(report), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "facade"))
