"""One conversation with compaction on, for the crash test (SPEC §25: a compaction
survives a crash and is not recomputed).

    python tests/reliability/compaction_worker.py STORAGE run SUMMARIES    # talks until it compacted, then hangs
    python tests/reliability/compaction_worker.py STORAGE check SUMMARIES  # one more message, a JSON report

Each turn the model calls the `note` tool, then answers. The summariser appends a line to
the file SUMMARIES for every summary it writes (the side effect the test counts). In
`run`, once a summary was written, the next `note` call prints `compacted` and waits to
be killed: the step that compacted (the model's turn that called `note`) was saved
before the tool started (durability "sync"), so the SIGKILL lands right after it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from supervisor_graph import Agent, Memory
from supervisor_graph.nodes.steps.compaction import SUMMARY_KWARG
from supervisor_graph.testing import ScriptedChatModel, tool_call

THREAD = "compaction-crash"
INPUTS: list[list[BaseMessage]] = []


def build(memory: Memory, summaries: Path, mode: str) -> Agent:
    def summarise(messages: list[BaseMessage]) -> str:
        with summaries.open("a") as f:
            f.write("summary\n")
        return f"summary of {str(messages[-1].content).count('User:')} questions"

    def policy(messages: list[BaseMessage]) -> Any:
        INPUTS.append(list(messages))
        last = messages[-1]
        if isinstance(last, HumanMessage) and last.content != "after the crash":
            return tool_call("note", {"text": str(last.content)[:20]})
        return "answer " + "x" * 300

    async def note(text: str) -> str:
        """Take a note."""
        if mode == "run" and summaries.exists():
            print("compacted", flush=True)
            await asyncio.sleep(3600)  # killed here
        return "noted"

    return Agent(
        id="chat",
        model=ScriptedChatModel(policy=policy),
        tools=[note],
        memory=memory,
        compaction={"max_tokens": 800, "keep_last": 4, "model": ScriptedChatModel(policy=summarise)},
    )


def pairs(messages: list[BaseMessage]) -> list[list[str]]:
    order: list[list[str]] = []
    for m in messages:
        if isinstance(m, AIMessage):
            order.extend(["call", c["id"] or ""] for c in m.tool_calls)
        elif isinstance(m, ToolMessage):
            order.append(["result", m.tool_call_id])
    return order


async def main(storage: str, mode: str, summaries: Path) -> None:
    async with Memory(storage, lease_ttl=0.5) as memory:
        agent = build(memory, summaries, mode)
        if mode == "run":
            print("ready", flush=True)
            turn = 0
            while True:
                await agent.generate(f"question {turn} " + "y" * 300, memory={"thread": THREAD, "resource": "crash"})
                turn += 1
        result = await agent.generate("after the crash", memory={"thread": THREAD, "resource": "crash"})
        stored = await memory.get_messages(THREAD)
        graph = agent.compile(checkpointer=await memory.checkpointer(), store=await memory.store())
        state = await graph.aget_state({"configurable": {"thread_id": THREAD}})
        report = {
            "text": result.text,
            "stored": pairs(stored),
            "stored_count": len(stored),
            "interrupted": sum(str(m.content).startswith("[Interrupted]") for m in stored if isinstance(m, ToolMessage)),
            "record": state.values.get("compaction"),
            "inputs": [pairs(i) for i in INPUTS],
            "summary_first": [bool(i[0].additional_kwargs.get(SUMMARY_KWARG)) for i in INPUTS],
            "largest_input": max(sum(len(str(m.content)) for m in i) for i in INPUTS),
        }
        print(json.dumps(report), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
