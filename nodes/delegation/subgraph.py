"""A way to run a delegation: the subagent's compiled graph as a LangGraph subgraph of
the node (a subagent that is no leaf: it delegates, keeps working memory, has gates).

The subgraph inherits the parent's checkpointer and stores its checkpoints under the
delegation's namespace, so each delegation gets a thread of its own that survives a
pause and resume. With a thread per parent thread (`per_parent_thread`) its runs take
turns, each from the checkpoint its branch of the parent's history left (`lineage`).
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from langchain_core.messages import HumanMessage

from supervisor_graph.checkpointers.compat import new_turn_at
from supervisor_graph.nodes.delegation.inheritance import SubRun
from supervisor_graph.nodes.delegation.lineage import continue_from, remember
from supervisor_graph.nodes.delegation.opening import Delegation
from supervisor_graph.nodes.delegation.transcript import record_answer, record_transcript
from supervisor_graph.nodes.spec import AgentSpec
from supervisor_graph.nodes.steps.budget import exceeded_result

__all__ = ["run_subgraph"]

_thread_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()


async def run_subgraph(
    delegation: Delegation, sub: SubRun, sub_spec: AgentSpec, graph: Any, per_parent_thread: bool
) -> None:
    """Run the subgraph to its end, recording it in the delegation's record (a failure
    keeps the partial transcript)."""
    thread_id = delegation.record.sub_agent_thread_id
    if per_parent_thread and thread_id is not None:
        lock = _thread_locks.get(thread_id)
        if lock is None:
            lock = _thread_locks[thread_id] = asyncio.Lock()
        async with lock:
            await _run(delegation, sub, sub_spec, graph, thread_id)
    else:
        await _run(delegation, sub, sub_spec, graph, None)


async def _run(delegation: Delegation, sub: SubRun, sub_spec: AgentSpec, graph: Any, lineage: str | None) -> None:
    """Run it; `lineage`: the subagent's thread when it continues from the checkpoint
    its branch left, whose checkpoint it then records."""
    record, handle = delegation.record, sub.handle
    config: dict[str, Any] = {**sub.config, "run_name": sub_spec.agent_name or record.agent_id}  # its run, named after it
    modes: Any = "values"
    if lineage is not None:
        scratch = delegation.handle.scratch
        start = continue_from(delegation.config, delegation.call["name"], lineage, scratch)
        if start is not None:
            config["configurable"] = new_turn_at(config["configurable"], start)
        modes = ["values", "checkpoints"]
    latest: dict[str, Any] = {}
    try:
        async for item in graph.astream(
            {"messages": [HumanMessage(content=record.prompt)]}, config, context=sub.context, stream_mode=modes
        ):
            if lineage is None:
                latest = item
            elif item[0] == "values":
                latest = item[1]
            else:  # where it is now: the next delegation of this branch starts there
                record.sub_agent_checkpoint_id = item[1]["config"]["configurable"]["checkpoint_id"]
                remember(scratch, lineage, record.sub_agent_checkpoint_id)
    finally:
        record_transcript(record, latest)
    record_answer(record, latest, handle.abort_signal)
    exceeded_result(record, handle.budget)
