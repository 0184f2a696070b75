"""A process that starts a background delegation on a shared database and then stays
alive with the task running, until the test kills it (or `SG_BG_EXIT` says to return).

    python tests/reliability/bg_worker.py STORAGE LEDGER RETRIES

Each call of the background subagent's model appends `sub <pid>` to LEDGER (fsync'ed)
and then takes `SG_BG_LATENCY` seconds (default 60), so the test sees which process ran
the task and can kill it mid-task.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import Agent, Memory
from supervisor_graph.testing import ScriptedChatModel, delegate

THREAD = {"thread": "bg-shared", "resource": "user"}


def record(ledger: str, what: str) -> None:
    with open(ledger, "a") as f:
        f.write(f"{what} {os.getpid()}\n")
        f.flush()
        os.fsync(f.fileno())


class SlowResearch(ScriptedChatModel):
    """Logs each call to the ledger, then takes its time."""

    ledger: str = ""
    seconds: float = 60.0

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        record(self.ledger, "sub")
        await asyncio.sleep(self.seconds)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)


def parent_policy(messages: list[Any]) -> Any:
    last = messages[-1]
    if isinstance(last, HumanMessage) and str(last.content).startswith("[Background task"):
        return "reported: " + str(last.content)
    if isinstance(last, ToolMessage):
        return "started"
    return delegate("research", "dig deep", id="call-bg")


def build(memory: Memory, ledger: str, retries: int, seconds: float) -> Agent:
    research = Agent(
        id="research-agent",
        description="Researches slowly.",
        model=SlowResearch(policy=lambda m: "facts", ledger=ledger, seconds=seconds),
    )
    return Agent(
        id="boss",
        model=ScriptedChatModel(policy=parent_policy),
        agents={"research": research},
        memory=memory,
        background_tasks={"tools": {"research": {"retries": retries}}},
    )


async def main(storage: str, ledger: str, retries: int) -> None:
    async with Memory(storage) as memory:
        agent = build(memory, ledger, retries, float(os.environ.get("SG_BG_LATENCY", "60")))
        result = await agent.generate("go", memory=THREAD)
        print(json.dumps({"text": result.text}), flush=True)
        await asyncio.sleep(3600)  # the task runs on until the test kills this process


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
