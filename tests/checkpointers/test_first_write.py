"""A delegation's thread written from its parent's node (`checkpointers/first_write.py`)."""

from __future__ import annotations

import sqlite3
from typing import Annotated, Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from supervisor_graph.checkpointers.compat import CONFIG_KEY_CHECKPOINTER, DeltaChannel
from supervisor_graph.checkpointers.first_write import write_delegation_thread
from supervisor_graph.checkpointers.sqlite import SqliteCheckpointer


def _add(current: list[Any], batches: list[Any]) -> list[Any]:
    return [*current, *(m for batch in batches for m in (batch if isinstance(batch, list) else [batch]))]


class Thread(TypedDict, total=False):
    messages: Annotated[list[Any], DeltaChannel(_add, snapshot_frequency=1000)]
    finish_reason: str


def _rows(path: str, ns: str) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM checkpoints WHERE checkpoint_ns = ?", (ns,)).fetchone()[0])


async def test_the_first_write_rides_with_the_next_job_and_a_later_one_builds_on_it(tmp_path) -> None:
    builder = StateGraph(Thread)
    builder.add_node("supervisor", lambda state: {})
    builder.add_edge(START, "supervisor")
    graph = builder.compile()
    path = str(tmp_path / "threads.db")
    ns = "worker:1"
    async with SqliteCheckpointer.from_conn_string(path) as saver:
        await saver.setup()
        node_config: Any = {
            "configurable": {"thread_id": "t", "checkpoint_ns": ns, CONFIG_KEY_CHECKPOINTER: saver, "__pregel_task_id": "x"},
            "metadata": {"resource_id": "r"},
        }
        history = [HumanMessage("do it", id="h1"), AIMessage("first", id="a1")]
        await write_delegation_thread(graph, node_config, {"messages": history}, "supervisor", first=True)
        # not a trip of its own: stored with the node's writes, in their transaction
        assert _rows(path, ns) == 0
        await saver.aput_writes(
            {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c"}}, [("x", 1)], "task"
        )
        assert _rows(path, ns) == 1

        await write_delegation_thread(
            graph, node_config, {"messages": [AIMessage("again", id="a2")], "finish_reason": "stop"}, "supervisor", first=False
        )
        state = await graph.aget_state(node_config)
        assert [m.content for m in state.values["messages"]] == ["do it", "first", "again"]
        assert state.values["finish_reason"] == "stop"
        assert state.metadata is not None and state.metadata["resource_id"] == "r"
    assert _rows(path, ns) == 2
