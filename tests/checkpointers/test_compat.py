"""The LangGraph surfaces behind `checkpointers/compat.py` still behave as the library
expects. A failure here after an upgrade names the surface that changed."""

from __future__ import annotations

import inspect
import operator
from importlib.metadata import version
from typing import Annotated, Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send
from typing_extensions import TypedDict

from supervisor_graph.checkpointers import compat


class FanState(TypedDict, total=False):
    messages: list[Any]
    seen: Annotated[list[int], operator.add]


def _add(current: list[Any], batches: list[Any]) -> list[Any]:
    return [*current, *(m for batch in batches for m in (batch if isinstance(batch, list) else [batch]))]


class DeltaState(TypedDict):
    messages: Annotated[list[Any], compat.DeltaChannel(_add, snapshot_frequency=1000)]


def test_read_channel_reads_the_parent_state_inside_a_send_node() -> None:
    def fan_out(state: FanState) -> list[Send]:
        return [Send("worker", {"n": 1}), Send("worker", {"n": 2})]

    def worker(payload: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages = compat.read_channel(config, "messages")
        return {"seen": [payload["n"] * len(messages)]}

    builder = StateGraph(FanState)
    builder.add_node("worker", worker)
    builder.add_conditional_edges(START, fan_out, ["worker"])
    out = builder.compile().invoke({"messages": ["a", "b", "c"]})
    assert sorted(out["seen"]) == [3, 6], "langgraph.pregel._read.ChannelRead.do_read changed"


def test_delta_channel_keeps_messages_as_deltas() -> None:
    params = inspect.signature(compat.DeltaChannel).parameters
    assert "snapshot_frequency" in params, "DeltaChannel(reducer, snapshot_frequency=...) changed"

    builder = StateGraph(DeltaState)
    builder.add_node("reply", lambda state: {"messages": [AIMessage(f"turn {len(state['messages'])}")]})
    builder.add_edge(START, "reply")
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [HumanMessage("hi")]}, config)
    out = graph.invoke({"messages": [HumanMessage("again")]}, config)
    assert [m.content for m in out["messages"]] == ["hi", "turn 1", "again", "turn 3"]


def test_delta_history_api_of_savers() -> None:
    method = getattr(BaseCheckpointSaver, "aget_delta_channel_history", None)
    assert method is not None, "BaseCheckpointSaver.aget_delta_channel_history is gone (delta_cache.py overrides it)"
    params = inspect.signature(method).parameters
    assert {"config", "channels"} <= set(params), "aget_delta_channel_history(config=, channels=) changed"
    assert "writes" in compat.DeltaChannelHistory.__annotations__
    assert {"__error__", compat.INTERRUPT_WRITE} <= set(compat.WRITES_IDX_MAP), "WRITES_IDX_MAP changed"


def test_installed_langgraph_is_a_tested_minor_version() -> None:
    # pyproject pins these; a resolver that ignores the pin would otherwise run untested code
    assert version("langgraph").startswith("1.2."), version("langgraph")
    assert version("langgraph-checkpoint").startswith("4.3."), version("langgraph-checkpoint")


async def test_on_connection_thread_runs_one_job_in_order_with_the_connection(tmp_path) -> None:
    import threading

    import aiosqlite

    async with aiosqlite.connect(tmp_path / "c.db") as conn:
        await conn.execute("CREATE TABLE t (v INTEGER)")

        def job(raw: Any, value: int) -> int:
            raw.execute("INSERT INTO t VALUES (?)", (value,))
            raw.commit()
            return threading.get_ident()

        ident = await compat.on_connection_thread(conn, job, 7)
        assert ident != threading.get_ident()
        async with conn.execute("SELECT v FROM t") as cur:
            assert await cur.fetchall() == [(7,)]


async def test_node_runnable_injects_config_and_runtime_on_both_sides() -> None:
    class State(TypedDict):
        seen: str

    def sync(state: State, config: RunnableConfig, runtime: Runtime[Any]) -> dict[str, str]:
        return {"seen": f"sync {config['configurable']['thread_id']} {runtime.context}"}

    async def async_(state: State, config: RunnableConfig, runtime: Runtime[Any]) -> dict[str, str]:
        return {"seen": f"async {config['configurable']['thread_id']} {runtime.context}"}

    builder: Any = StateGraph(State)
    builder.add_node("n", compat.node_runnable("n", sync, async_))
    builder.add_edge(START, "n")
    graph = builder.compile()
    config: Any = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"seen": ""}, config, context="c")["seen"] == "sync t c"
    assert (await graph.ainvoke({"seen": ""}, config, context="c"))["seen"] == "async t c"


class NodeState(TypedDict, total=False):
    messages: Annotated[list[Any], compat.DeltaChannel(_add, snapshot_frequency=1000)]
    finish_reason: str


async def test_write_first_state_stores_what_aupdate_state_stores() -> None:
    builder = StateGraph(NodeState)
    builder.add_node("supervisor", lambda state: {})
    builder.add_edge(START, "supervisor")
    saver = InMemorySaver()
    graph = builder.compile()
    messages = [HumanMessage("do it", id="h1"), AIMessage("done")]  # the answer has no id: both give it one
    values = {"messages": messages, "finish_reason": "stop", "not_a_channel": 1}
    stored = {}
    for how in ("aupdate_state", "write_first_state"):
        config = compat.state_write_config(
            {"configurable": {"thread_id": "t", "checkpoint_ns": f"worker:{how}", "__pregel_task_id": "x", "user": "u"},
             "metadata": {"resource_id": "r"}},
            saver,
        )
        if how == "aupdate_state":
            await graph.aupdate_state(config, values, as_node="supervisor")
        else:
            await compat.write_first_state(graph, config, values, "supervisor")
        saved = await saver.aget_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": f"worker:{how}"}})
        assert saved is not None, f"{how} stored nothing"
        state = await graph.aget_state(config)
        checkpoint = saved.checkpoint
        stored[how] = (
            sorted(checkpoint),
            {k: type(v).__name__ for k, v in checkpoint["channel_values"].items()},
            sorted(checkpoint["channel_versions"]),
            checkpoint["versions_seen"],
            saved.metadata,
            saved.pending_writes,
            state.next,
            [(type(m).__name__, m.content, bool(m.id)) for m in state.values["messages"]],
            state.values["finish_reason"],
        )
    assert stored["write_first_state"] == stored["aupdate_state"], (
        "a first state update changed in LangGraph (langgraph.pregel._checkpoint / _algo): "
        "write_first_state no longer stores what aupdate_state does"
    )
    assert stored["aupdate_state"][4]["resource_id"] == "r" and stored["aupdate_state"][4]["user"] == "u"
