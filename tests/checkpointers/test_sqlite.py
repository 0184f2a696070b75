"""The sqlite checkpointer: LangGraph's `AsyncSqliteSaver`, one trip to sqlite per call."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from supervisor_graph import Agent, Memory
from supervisor_graph.checkpointers.sqlite import SqliteCheckpointer
from supervisor_graph.testing import ScriptedChatModel, delegate


def _append(left: list[str], right: list[str]) -> list[str]:
    return [*left, *right]


class State(TypedDict):
    log: Annotated[list[str], _append]


def _graph() -> StateGraph:
    def first(state: State) -> dict[str, Any]:
        return {"log": ["first"]}

    def ask(state: State) -> dict[str, Any]:
        return {"log": [f"answer {interrupt('which?')}"]}

    graph = StateGraph(State)
    graph.add_node("first", first)
    graph.add_node("ask", ask)
    graph.add_edge(START, "first")
    graph.add_edge("first", "ask")
    graph.add_edge("ask", END)
    return graph


async def test_a_graph_pauses_and_resumes_and_lists_its_history(tmp_path) -> None:
    path = str(tmp_path / "g.db")
    config = {"configurable": {"thread_id": "t"}}
    async with SqliteCheckpointer.from_conn_string(path) as saver:
        await saver.setup()
        graph = _graph().compile(checkpointer=saver)
        paused = await graph.ainvoke({"log": []}, config)
        assert paused["__interrupt__"][0].value == "which?"
        state = await graph.aget_state(config)
        assert state.next == ("ask",) and state.values["log"] == ["first"]
        done = await graph.ainvoke(Command(resume="b"), config)
        assert done["log"] == ["first", "answer b"]
        history = [c async for c in saver.alist(config)]
        assert len(history) == 4 and history[0].checkpoint["channel_values"]["log"] == ["first", "answer b"]
        await saver.adelete_thread("t")
        assert await saver.aget_tuple(config) is None


async def test_rows_are_langgraphs_so_the_stock_savers_read_them(tmp_path) -> None:
    path = str(tmp_path / "g.db")
    config = {"configurable": {"thread_id": "t"}}
    async with SqliteCheckpointer.from_conn_string(path) as saver:
        await _graph().compile(checkpointer=saver).ainvoke({"log": []}, config)
    async with AsyncSqliteSaver.from_conn_string(path) as stock:
        graph = _graph().compile(checkpointer=stock)
        assert (await graph.aget_state(config)).next == ("ask",)
        await graph.ainvoke(Command(resume="a"), config)  # the stock saver carries on
    async with SqliteCheckpointer.from_conn_string(path) as saver:
        state = await _graph().compile(checkpointer=saver).aget_state(config)
        assert state.values["log"] == ["first", "answer a"] and state.next == ()
    with SqliteSaver.from_conn_string(path) as sync_stock:
        assert sync_stock.get_tuple(config) is not None


async def test_values_are_encoded_when_the_call_is_made(tmp_path) -> None:
    """A value changed after `aput_writes` returns control is stored as it was."""
    async with SqliteCheckpointer.from_conn_string(str(tmp_path / "g.db")) as saver:
        await saver.setup()
        config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        graph = _graph().compile(checkpointer=saver)
        await graph.ainvoke({"log": []}, config)
        tup = await saver.aget_tuple(config)
        value = ["before"]
        pending = asyncio.ensure_future(saver.aput_writes(tup.config, [("log", value)], "task-x"))
        await asyncio.sleep(0)  # the call has been made; the thread may not have stored it yet
        value.append("after")
        await pending
        writes = [w for w in (await saver.aget_tuple(tup.config)).pending_writes if w[0] == "task-x"]
        assert writes == [("task-x", "log", ["before"])]


async def test_sync_methods_serve_a_graph_run_with_invoke(tmp_path) -> None:
    path = str(tmp_path / "g.db")
    config = {"configurable": {"thread_id": "s"}}
    async with SqliteCheckpointer.from_conn_string(path) as saver:
        graph = _graph().compile(checkpointer=saver)

        def run() -> Any:
            graph.invoke({"log": []}, config)
            return graph.invoke(Command(resume="c"), config)

        out: list[Any] = []
        worker = threading.Thread(target=lambda: out.append(run()))
        worker.start()
        await asyncio.to_thread(worker.join)
        assert out[0]["log"] == ["first", "answer c"]
        assert len(await asyncio.to_thread(lambda: list(saver.list(config)))) == 4
        assert (await saver.aget_tuple(config)).checkpoint["channel_values"]["log"] == ["first", "answer c"]


@pytest.mark.parametrize(("setting", "pragma"), [("normal", 1), ("full", 2)])
async def test_memory_commits_with_the_synchronous_setting_asked_for(tmp_path, setting: str, pragma: int) -> None:
    memory = Memory(storage=f"file:{tmp_path / 'm.db'}", sqlite_synchronous=setting)  # type: ignore[arg-type]
    worker = Agent(id="w", description="Works.", model=ScriptedChatModel(policy=lambda m: "result"))
    parent = Agent(
        id="p",
        model=ScriptedChatModel(policy=lambda m: "done" if len(m) > 2 else delegate("w", "go")),
        agents={"w": worker},
        memory=memory,
    )
    try:
        assert (await parent.generate("hi", memory={"thread": "t"})).text == "done"
        saver = await memory.checkpointer()
        assert isinstance(saver, SqliteCheckpointer) and isinstance(saver, AsyncSqliteSaver)
        async with saver.conn.execute("PRAGMA synchronous") as cur:  # the checkpoint connection's own setting
            assert (await cur.fetchone())[0] == pragma
        assert [m.content for m in await memory.get_messages("t")][-1] == "done"
    finally:
        await memory.aclose()
    with sqlite3.connect(tmp_path / "m.db") as conn:  # journal_mode is the file's
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_bad_synchronous_setting_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="sqlite_synchronous must be 'normal' or 'full'"):
        Memory(storage="file:x.db", sqlite_synchronous="off")  # type: ignore[arg-type]


async def test_a_checkpoint_stored_with_the_next_write_is_read_listed_and_kept_at_close(tmp_path) -> None:
    """`aput_with_next_write` (a delegation's thread): one transaction with the next job;
    every read sees it, and closing the saver stores what is still waiting."""
    from langgraph.checkpoint.base import empty_checkpoint

    from supervisor_graph.checkpointers.sqlite import SqliteCheckpointer

    path = str(tmp_path / "deferred.db")
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": "worker:1", "checkpoint_id": ""}}
    async with SqliteCheckpointer.from_conn_string(path) as saver:
        await saver.setup()
        first = empty_checkpoint()
        await saver.aput_with_next_write(config, first, {"source": "update", "step": 0}, {})
        found = await saver.aget_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": "worker:1"}})
        assert found is not None and found.checkpoint["id"] == first["id"]
        second = empty_checkpoint()
        await saver.aput_with_next_write(config, second, {"source": "update", "step": 1}, {})
    async with SqliteCheckpointer.from_conn_string(path) as saver:
        listed = [c.checkpoint["id"] async for c in saver.alist({"configurable": {"thread_id": "t", "checkpoint_ns": "worker:1"}})]
        assert sorted(listed) == sorted([first["id"], second["id"]])
