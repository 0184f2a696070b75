"""A process that launches a background delegation on a shared database and stays alive
running it, so another process can cancel or update it (SPEC §12, "Cancel and update
work from any process that shares the memory").

    python tests/supervisor_graph/bg_control_worker.py STORAGE LEDGER

Each call of the background subagent's model appends `call <pid> <its prompt's last
line>` to LEDGER, then takes `SG_BG_LATENCY` seconds (default 2.5) and calls the tool
`publish`, which appends `effect <pid>`: the side effect a cancelled task must never
reach. The process prints `{"text": ...}` once the launching run has answered.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

THREAD = {"thread": "bg-control-shared", "resource": "user"}


def record(ledger: str, what: str) -> None:
    with open(ledger, "a") as f:
        f.write(f"{what}\n")
        f.flush()
        os.fsync(f.fileno())


class Note(BaseModel):
    text: str


class LoggedResearch(ScriptedChatModel):
    """Logs each call (with its prompt) to the ledger, then takes its time."""

    ledger: str = ""
    seconds: float = 2.5

    async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        if not isinstance(messages[-1], ToolMessage):
            prompt = str(messages[-1].content).splitlines()[-1]
            record(self.ledger, f"call {os.getpid()} {prompt}")
            await asyncio.sleep(self.seconds)
        return await super()._agenerate(messages, stop, run_manager, **kwargs)


def parent_policy(messages: list[Any]) -> Any:
    """`go`: launch; `cancel <id>` / `update <id> <instructions>`: the control call; a
    notice or a tool result: a short answer."""
    last = messages[-1]
    text = str(last.content)
    if isinstance(last, HumanMessage) and text.startswith("cancel "):
        return tool_call("cancel_background_task", {"task_id": text.split()[1]})
    if isinstance(last, HumanMessage) and text.startswith("update "):
        _, task_id, instructions = text.split(" ", 2)
        return tool_call("update_background_task", {"task_id": task_id, "instructions": instructions})
    if isinstance(last, HumanMessage) and text.startswith("[Background task"):
        return "reported: " + text.splitlines()[0]
    if isinstance(last, ToolMessage):
        return "started" if last.name == "agent-research" else f"{last.name}: {text}"
    return delegate("research", "dig deep", id="call-bg")


def build(memory: Memory, ledger: str, seconds: float) -> Agent:
    publish = create_tool(
        id="publish", description="Publish.", input_schema=Note,
        execute=lambda note: record(ledger, f"effect {os.getpid()}") or "published",
    )
    sub_model = LoggedResearch(
        policy=lambda m: "done" if isinstance(m[-1], ToolMessage) else tool_call("publish", {"text": "facts"}),
        ledger=ledger,
        seconds=seconds,
    )
    research = Agent(id="research-agent", description="Researches, then publishes.", model=sub_model, tools=[publish])
    return Agent(
        id="boss",
        model=ScriptedChatModel(policy=parent_policy),
        agents={"research": research},
        memory=memory,
        background_tasks={"tools": {"research": {}}},
    )


async def main(storage: str, ledger: str) -> None:
    async with Memory(storage) as memory:
        agent = build(memory, ledger, float(os.environ.get("SG_BG_LATENCY", "2.5")))
        result = await agent.generate("go", memory=THREAD)
        print(json.dumps({"text": result.text}), flush=True)
        await asyncio.sleep(3600)  # the task runs on (or is cancelled) until the test kills this process


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
