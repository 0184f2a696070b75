"""What working memory costs (SPEC §8): the same supervisor with one delegation, with
working memory off, on but never updated (a store read per model call), and updated
once per run in the same turn as its delegation (resource scope: a store write; thread
scope: a state channel). Every variant makes the same model calls; runs interleave."""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.store.memory import InMemoryStore

from supervisor_graph import Agent, Memory
from supervisor_graph.nodes.state import FEEDBACK_MARK
from supervisor_graph.nodes.steps.working_memory import WORKING_MEMORY_NAMESPACE
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

__all__ = ["VARIANTS", "WorkingMemoryCell", "working_memory_cost"]

VARIANTS = ("off", "resource, read only", "resource, one update", "thread, one update")


@dataclass
class WorkingMemoryCell:
    kind: str
    samples: dict[str, list[float]] = field(default_factory=dict)  # variant -> seconds per run
    store_reads: dict[str, float] = field(default_factory=dict)  # variant -> working-memory reads per run


def _policy(update: bool) -> Any:
    def policy(messages: list[Any]) -> Any:
        if messages[-1].additional_kwargs.get(FEEDBACK_MARK) == "notice":
            messages = messages[:-1]  # the working memory's value, after the conversation
        if isinstance(messages[-1], ToolMessage):
            return "done"
        calls = [delegate("worker", "do it")]
        if update:
            calls.append(tool_call("update_working_memory", {"memory": "# Notes\n- asked once\n"}))
        return calls

    return policy


def _agent(variant: str, memory: Memory) -> Agent:
    worker = Agent(id="worker", description="Works.", model=ScriptedChatModel(policy=lambda m: "ok", record_calls=False))
    working = None
    if variant != "off":
        working = {"scope": "thread" if variant.startswith("thread") else "resource"}
    return Agent(
        id=f"sup-{variant.replace(' ', '').replace(',', '-')}",
        model=ScriptedChatModel(policy=_policy(variant.endswith("update")), record_calls=False),
        agents={"worker": worker},
        memory=memory,
        working_memory=working,
    )


class _CountingStore(InMemoryStore):
    """Counts working-memory reads (the in-memory cell's store)."""

    reads = 0

    async def abatch(self, ops: Any) -> Any:
        ops = list(ops)
        self.reads += sum(1 for op in ops if type(op).__name__ == "GetOp" and op.namespace == WORKING_MEMORY_NAMESPACE)
        return await super().abatch(ops)


async def working_memory_cost(kind: str, runs: int, warmup: int, workdir: Path) -> WorkingMemoryCell:
    from langgraph.checkpoint.memory import InMemorySaver

    counting = _CountingStore() if kind == "memory" else None
    if kind == "memory":
        memory = Memory(InMemorySaver(), store=counting)
    else:
        path = workdir / "working-memory.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        memory = Memory(f"file:{path}")
    agents = {variant: _agent(variant, memory) for variant in VARIANTS}
    cell = WorkingMemoryCell(kind, {variant: [] for variant in VARIANTS})
    reads = dict.fromkeys(VARIANTS, 0)
    try:
        for i in range(warmup + runs):
            for variant, agent in agents.items():
                gc.collect()
                before = counting.reads if counting is not None else 0
                began = time.perf_counter()
                result = await agent.generate("go", memory={"thread": f"wm-{variant}-{i}", "resource": f"r{i}"})
                took = time.perf_counter() - began
                if result.text != "done":
                    raise RuntimeError(f"working-memory bench ({variant}): expected 'done', got {result.text!r}")
                if i >= warmup:
                    cell.samples[variant].append(took)
                    if counting is not None:
                        reads[variant] += counting.reads - before
    finally:
        await memory.aclose()
    if counting is not None:
        cell.store_reads = {variant: reads[variant] / max(runs, 1) for variant in VARIANTS}
    return cell
