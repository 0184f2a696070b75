"""Memory, threads and isolation on every checkpointer (SPEC §8)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from supervisor_graph import Agent, Memory, ThreadBusyError
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def build(memory: Memory, *, threads: str = "per_delegation") -> tuple[Agent, ScriptedChatModel]:
    def sub_policy(messages):
        if not isinstance(messages[-1], ToolMessage):
            return tool_call("lookup", {"q": messages[-1].content})
        return "sub answer: " + messages[-1].content

    research = Agent(id="research-agent", description="Researches.", model=ScriptedChatModel(policy=sub_policy), tools=[lookup])

    def parent_policy(messages):
        last = messages[-1]
        if isinstance(last, HumanMessage):
            return delegate("research_agent", f"research {last.content}")
        return f"answer after {sum(isinstance(m, HumanMessage) for m in messages)} user messages"

    model = ScriptedChatModel(policy=parent_policy)
    parent = Agent(id="parent", model=model, agents={"research_agent": research}, memory=memory, subagent_threads=threads)
    return parent, model


async def test_thread_continues_across_calls_and_agent_objects(memory: Memory) -> None:
    parent, _ = build(memory)
    first = await parent.generate("one", memory={"thread": "t1", "resource": "u1"})
    assert first.thread_id == "t1" and first.text == "answer after 1 user messages"
    second = await parent.generate("two", memory={"thread": "t1", "resource": "u1"})
    assert second.text == "answer after 2 user messages"
    assert second.messages[0].tool_calls  # only this run's messages
    # a brand-new Agent on the same storage continues the same thread
    again, model = build(memory)
    third = await again.generate("three", memory={"thread": "t1", "resource": "u1"})
    assert third.text == "answer after 3 user messages"
    stored = await memory.get_messages("t1")
    assert [m.content for m in stored if isinstance(m, HumanMessage)] == ["one", "two", "three"]
    # other threads are separate
    other = await again.generate("x", memory={"thread": "t2"})
    assert other.text == "answer after 1 user messages"


async def test_isolation_between_parent_and_subagent_threads(memory: Memory) -> None:
    parent, _ = build(memory)
    result = await parent.generate("topic", memory={"thread": "iso", "resource": "u"})
    delegation = result.messages[1]
    sub_thread = delegation.artifact["sub_agent_thread_id"]
    assert sub_thread.startswith("iso::research_agent:")
    assert delegation.artifact["sub_agent_resource_id"] == "u/research_agent"

    parent_messages = await memory.get_messages("iso")
    # the parent holds the call and the final text, never the subagent's own tool calls
    assert not any(isinstance(m, ToolMessage) and m.name == "lookup" for m in parent_messages)
    assert not any(isinstance(m, AIMessage) and any(c["name"] == "lookup" for c in m.tool_calls) for m in parent_messages)

    sub_messages = await memory.get_messages(sub_thread)
    # the subagent stores its prompt, its own messages and its answer; not the parent's context
    assert [type(m) for m in sub_messages] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    assert sub_messages[0].content == "research topic"
    assert sub_messages[-1].content == "sub answer: found research topic"
    assert not any(m.content == "topic" for m in sub_messages)

    records = {r.thread_id: r for r in await memory.list_threads()}
    assert records["iso"].resource_id == "u" and records["iso"].parent_thread_id is None
    assert records[sub_thread].parent_thread_id == "iso"
    assert records[sub_thread].agent_id == "research-agent"
    assert records[sub_thread].resource_id == "u/research_agent"
    assert {r.thread_id for r in await memory.list_threads(filter={"resource_id": "u"})} == {"iso"}
    assert {r.thread_id for r in await memory.list_threads(filter={"agent_id": "research-agent"})} == {sub_thread}


async def test_each_delegation_gets_a_fresh_deterministic_thread(memory: Memory) -> None:
    parent, _ = build(memory)
    a = await parent.generate("a", memory={"thread": "d"})
    b = await parent.generate("b", memory={"thread": "d"})
    ta, tb = a.messages[1].artifact["sub_agent_thread_id"], b.messages[1].artifact["sub_agent_thread_id"]
    assert ta != tb
    assert [m.content for m in await memory.get_messages(tb)][0] == "research b"
    assert len(await memory.get_messages(tb)) == 4  # nothing of the first delegation

    # derived from the parent thread and the delegation's checkpoint namespace, which
    # LangGraph keeps for that task across a pause and resume
    saver = await memory.checkpointer()
    namespaces = {item.config["configurable"]["checkpoint_ns"] async for item in saver.alist({"configurable": {"thread_id": "d"}})}
    assert {ta.split("::", 1)[1], tb.split("::", 1)[1]} <= namespaces


async def test_per_parent_thread_subagents_remember(memory: Memory) -> None:
    parent, _ = build(memory, threads="per_parent_thread")
    a = await parent.generate("a", memory={"thread": "pp"})
    b = await parent.generate("b", memory={"thread": "pp"})
    ta, tb = a.messages[1].artifact["sub_agent_thread_id"], b.messages[1].artifact["sub_agent_thread_id"]
    assert ta == tb == "pp::research_agent"
    prompts = [m.content for m in await memory.get_messages(tb) if isinstance(m, HumanMessage)]
    assert prompts == ["research a", "research b"]
    other = await parent.generate("c", memory={"thread": "pp2"})
    assert other.messages[1].artifact["sub_agent_thread_id"] == "pp2::research_agent"


async def test_ephemeral_run_without_memory_option(memory: Memory) -> None:
    parent, _ = build(memory)
    result = await parent.generate("x")
    assert result.thread_id is None and result.messages[1].artifact["sub_agent_thread_id"] is None
    assert await memory.list_threads() == []


async def test_two_runs_on_one_thread_are_refused(memory: Memory) -> None:
    import asyncio

    started, go = asyncio.Event(), asyncio.Event()

    @tool
    async def hold() -> str:
        """Hold the run."""
        started.set()
        await go.wait()
        return "held"

    model = ScriptedChatModel(policy=lambda m: "done" if isinstance(m[-1], ToolMessage) else tool_call("hold"))
    parent = Agent(id="p", model=model, tools=[hold], memory=memory)
    first = asyncio.ensure_future(parent.generate("a", memory={"thread": "busy"}))
    await asyncio.wait_for(started.wait(), 30)  # the first run holds the thread
    with pytest.raises(ThreadBusyError, match="busy"):
        await parent.generate("b", memory={"thread": "busy"})
    go.set()
    assert (await first).text == "done"
    assert (await parent.generate("c", memory={"thread": "busy"})).text == "done"


async def test_a_refused_call_leaves_the_thread_usable_at_once(memory: Memory) -> None:
    parent = Agent(id="p", model=ScriptedChatModel(policy=lambda m: "ok"), memory=memory)
    thread = {"thread": "refused", "resource": "u"}
    for bad in ([], None, 42):
        with pytest.raises(TypeError, match="prompt must be"):
            await parent.generate(bad, memory=thread)
        with pytest.raises(TypeError, match="prompt must be"):
            await parent.stream(bad, memory=thread)
    if memory.kind != "memory":  # durable storage keeps JSON request-context values only
        with pytest.raises(TypeError, match="not JSON-serialisable"):
            await parent.generate("x", memory=thread, request_context={"when": object()})
    assert (await parent.generate("fine", memory=thread)).text == "ok"
    assert [m.content for m in await memory.get_messages("refused")] == ["fine", "ok"]


async def test_thread_ids_the_library_cannot_store_faithfully_are_refused(memory: Memory) -> None:
    parent = Agent(id="p", model=ScriptedChatModel(policy=lambda m: "ok"), memory=memory)
    with pytest.raises(ValueError, match="'::'"):
        await parent.generate("hi", memory={"thread": "team::42"})
    assert await memory.list_threads() == []  # nothing half-stored
    assert (await parent.generate("hi", memory={"thread": "team:42"})).text == "ok"
    assert [m.content for m in await memory.get_messages("team:42")] == ["hi", "ok"]


def test_storage_urls_are_validated() -> None:
    with pytest.raises(ValueError, match="storage"):
        Memory(storage="redis://localhost")
    with pytest.raises(ValueError, match="storage"):
        Memory(storage=42)
    assert Memory(storage="file:x.db").kind == "sqlite"
    assert Memory(storage="some/path.db").kind == "sqlite"
    assert Memory(storage="postgresql://u@h/db").kind == "postgres"


async def test_checkpointer_object_is_used_as_is() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    memory = Memory(storage=saver)
    assert await memory.checkpointer() is saver
    parent = Agent(id="p", model=ScriptedChatModel(policy=lambda m: "hi"), memory=memory)
    await parent.generate("x", memory={"thread": "obj"})
    assert any(item.config["configurable"]["thread_id"] == "obj" for item in saver.list(None))


def test_thread_continues_across_processes(tmp_path) -> None:
    db = tmp_path / "shared.db"
    script = textwrap.dedent(
        f"""
        from supervisor_graph import Agent, Memory
        from supervisor_graph.testing import ScriptedChatModel
        agent = Agent(id="p", model=ScriptedChatModel(policy=lambda m: "written by child"), memory=Memory(storage="file:{db}"))
        print(agent.generate_sync("from the child", memory={{"thread": "xp", "resource": "r"}}).text)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "written by child"

    memory = Memory(storage=f"file:{db}")
    agent = Agent(id="p", model=ScriptedChatModel(policy=lambda m: f"parent sees {len(m)} messages"), memory=memory)
    result = agent.generate_sync("from the test", memory={"thread": "xp", "resource": "r"})
    assert result.text == "parent sees 3 messages"
    contents = [m.content for m in memory.get_messages_sync("xp")]
    assert contents == ["from the child", "written by child", "from the test", "parent sees 3 messages"]


def test_a_memory_left_open_closes_quietly_with_the_loop(tmp_path) -> None:
    # asyncio.run closes the open async generators at once: the memory's connections must
    # not be some of them, or closing them races the memory's own closer (a traceback)
    script = textwrap.dedent(
        f"""
        import asyncio
        from supervisor_graph import Memory
        memory = Memory("file:{tmp_path / 'open.db'}")
        async def main():
            await memory.list_threads()
        for _ in range(10):  # which generator asyncio closes first varies: try several loops
            asyncio.run(main())
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
