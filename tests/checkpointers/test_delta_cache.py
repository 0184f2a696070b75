"""The delta-history cache gives exactly what the saver itself would give."""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage

from supervisor_graph import Agent, Memory
from supervisor_graph.testing import ScriptedChatModel, delegate


def agent(memory: Memory) -> Agent:
    worker = Agent(id="w", description="Works.", model=ScriptedChatModel(policy=lambda m: f"result {len(m)}"))
    return Agent(
        id="p",
        model=ScriptedChatModel(
            policy=lambda m: f"answer {len(m)}"
            if isinstance(m[-1], ToolMessage)
            else [delegate("w", "a"), delegate("w", "b")]
        ),
        agents={"w": worker},
        memory=memory,
    )


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_cached_history_matches_the_saver(tmp_path, kind: str) -> None:
    storage = ":memory:" if kind == "memory" else f"file:{tmp_path / 'c.db'}"
    memory = Memory(storage=storage)
    parent = agent(memory)
    saver = await memory.checkpointer()
    base = type(saver).__mro__[2]  # the saver class without the cache
    plain = base() if kind == "memory" else None
    for turn in range(12):
        result = await parent.generate(f"turn {turn}", memory={"thread": "c"})
        assert result.text.startswith("answer")
        cached = await memory.get_messages("c")
        if kind == "sqlite":
            fresh = Memory(storage=storage)
            reference = await fresh.get_messages("c")
            await fresh.aclose()
        else:
            # the in-memory saver has no second instance: compare with its own walk
            config = {"configurable": {"thread_id": "c", "checkpoint_ns": ""}}
            tup = await saver.aget_tuple(config)
            history = await base.aget_delta_channel_history(saver, config=tup.config, channels=["messages"])
            reference = [m for w in history["messages"]["writes"] for m in (w[2] if isinstance(w[2], list) else [w[2]])]
        assert [m.id for m in cached] == [m.id for m in reference]
        assert [m.content for m in cached] == [m.content for m in reference]
        assert len(cached) == 5 * (turn + 1)
    # the cache served the loads: its threads hold this thread
    assert "c" in saver.__dict__["_sg_delta_threads"]
    del plain
    await memory.aclose()


async def test_later_turns_do_not_walk_the_database(tmp_path, monkeypatch) -> None:
    memory = Memory(storage=f"file:{tmp_path / 'w.db'}")
    parent = agent(memory)
    saver = await memory.checkpointer()
    base = type(saver).__mro__[2]
    await parent.generate("first", memory={"thread": "w"})
    await parent.generate("second", memory={"thread": "w"})
    walks = []
    original = base.aget_delta_channel_history

    async def counting(self, *, config, channels):
        walks.append(config)
        return await original(self, config=config, channels=channels)

    monkeypatch.setattr(base, "aget_delta_channel_history", counting)
    for turn in range(5):
        await parent.generate(f"turn {turn}", memory={"thread": "w"})
    assert walks == []
    # another process (a fresh saver) still reads the same conversation
    fresh = Memory(storage=f"file:{tmp_path / 'w.db'}")
    assert len(await fresh.get_messages("w")) == 5 * 7
    await fresh.aclose()
    await memory.aclose()


async def test_compact_versions_on_sqlite_and_memory(tmp_path) -> None:
    for storage in (":memory:", f"file:{tmp_path / 'v.db'}"):
        memory = Memory(storage=storage)
        parent = agent(memory)
        await parent.generate("one", memory={"thread": "v"})
        await parent.generate("two", memory={"thread": "v"})
        saver = await memory.checkpointer()
        tup = await saver.aget_tuple({"configurable": {"thread_id": "v", "checkpoint_ns": ""}})
        versions = tup.checkpoint["channel_versions"]
        assert versions and all(isinstance(v, int) for v in versions.values())
        assert len(await memory.get_messages("v")) == 10
        await memory.aclose()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_load_replays_only_the_writes_since_the_last_one(tmp_path, kind: str) -> None:
    memory = Memory(storage=":memory:" if kind == "memory" else f"file:{tmp_path / 'f.db'}")
    parent = agent(memory)
    saver = await memory.checkpointer()
    for turn in range(8):
        await parent.generate(f"turn {turn}", memory={"thread": "f"})
    tup = await saver.aget_tuple({"configurable": {"thread_id": "f", "checkpoint_ns": ""}})
    history = (await saver.aget_delta_channel_history(config=tup.config, channels=["messages"]))["messages"]
    # the earlier turns arrive folded into one value by the channel's reducer, not as writes
    assert len(history["seed"]) >= 5 * 7 and len(history["writes"]) <= 3
    # the caller gets its own list: changing it leaves the next load as it was
    history["seed"].clear()
    assert len(await memory.get_messages("f")) == 5 * 8
    assert [m.content for m in await memory.get_messages("f")][-1].startswith("answer")
    await memory.aclose()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_thread_is_followed_from_its_first_load(tmp_path, kind: str) -> None:
    """A single-run thread costs the cache nothing kept; its second turn reads the
    saver's own walk, and the turns after it the cache."""
    memory = Memory(storage=":memory:" if kind == "memory" else f"file:{tmp_path / 'o.db'}")
    parent = agent(memory)
    saver = await memory.checkpointer()
    for thread in ("one", "two", "three"):
        await parent.generate("only turn", memory={"thread": thread})
    assert not saver.__dict__.get("_sg_delta_threads")
    for turn in range(3):
        await parent.generate(f"turn {turn}", memory={"thread": "two"})
        assert [m.content for m in await memory.get_messages("two")][-1].startswith("answer")
    assert list(saver.__dict__["_sg_delta_threads"]) == ["two"]
    assert len(await memory.get_messages("two")) == 5 * 4 and len(await memory.get_messages("one")) == 5
    await memory.aclose()


async def test_the_cache_stays_within_its_budget_of_bytes_and_threads(tmp_path) -> None:
    """Issue 46: a served worker followed every thread it had loaded until 200,000 writes
    (hundreds of MB). Threads now leave least recently used first, whichever limit is hit,
    and loads still give the saver's answer."""
    memory = Memory(storage=f"file:{tmp_path / 'b.db'}")
    parent = agent(memory)
    saver = await memory.checkpointer()
    saver.delta_cache_bytes = 60_000  # a few threads' worth: two turns are ~10 messages of ~1.6 KB
    for n in range(12):
        for turn in range(3):
            await parent.generate(f"turn {turn}", memory={"thread": f"t{n}"})
        threads = saver.__dict__["_sg_delta_threads"]
        assert saver.delta_cache_size == sum(t.size for t in threads.values())
        assert saver.delta_cache_size <= saver.delta_cache_bytes or len(threads) == 1
    assert 1 < len(threads) < 12 and "t11" in threads and "t0" not in threads
    assert [len(await memory.get_messages(f"t{n}")) for n in (0, 11)] == [15, 15]
    saver.delta_cache_threads = 2
    await parent.generate("again", memory={"thread": "t5"})
    await parent.generate("again", memory={"thread": "t5"})
    assert list(saver.__dict__["_sg_delta_threads"])[-1] == "t5" and len(saver.__dict__["_sg_delta_threads"]) <= 2
    assert [m.content for m in await memory.get_messages("t5")][-1].startswith("answer")
    await memory.aclose()


async def test_writes_after_a_load_count_against_the_budget(tmp_path) -> None:
    """A thread loaded once and then only written (its next loads elsewhere) grows the
    cache's size with each write, and the budget is enforced on writes too."""
    memory = Memory(storage=f"file:{tmp_path / 'w.db'}")
    parent = agent(memory)
    saver = await memory.checkpointer()
    for turn in range(2):
        await parent.generate(f"turn {turn}", memory={"thread": "w"})
    before = saver.delta_cache_size
    config = {"configurable": {"thread_id": "w", "checkpoint_ns": ""}}
    tup = await saver.aget_tuple(config)
    await saver.aput_writes(tup.config, [("messages", [ToolMessage("x" * 5000, tool_call_id="c")])], "task-1")
    assert saver.delta_cache_size >= before + 5000
    saver.delta_cache_bytes = 1
    await saver.aput_writes(tup.config, [("messages", [ToolMessage("y", tool_call_id="d")])], "task-2")
    assert list(saver.__dict__["_sg_delta_threads"]) == ["w"]  # the thread in use stays, alone
    await memory.aclose()
