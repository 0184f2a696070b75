"""Subagents that cannot pause run inside their parent's node under the run facade
(issue 17): one checkpoint for the delegation's thread, the same thread contents, the
same attributed chunks; Studio and embedding apps still get LangGraph subgraphs."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from supervisor_graph import Agent, Memory
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


def team(memory: Memory | None = None, **sub: object) -> Agent:
    worker = Agent(id="worker-agent", description="Works.", model=ScriptedChatModel(policy=lambda m: "worked"), **sub)
    return Agent(
        id="boss",
        model=ScriptedChatModel(policy=lambda m: "done" if len(m) > 2 else delegate("worker", "do it")),
        agents={"worker": worker},
        memory=memory,
    )


async def test_one_checkpoint_and_the_same_thread(store) -> None:
    parent = team(store.memory)
    result = await parent.generate("go", **store.call())
    [delegation] = result.delegations
    messages = await store.memory.get_messages(delegation.sub_agent_thread_id)
    assert [type(m) for m in messages] == [HumanMessage, AIMessage] and messages[1].content == "worked"
    saver = await store.memory.checkpointer()
    thread, ns = delegation.sub_agent_thread_id.split("::")
    written = [c async for c in saver.alist({"configurable": {"thread_id": thread, "checkpoint_ns": ns}})]
    assert len(written) == 1  # a subgraph run wrote 3
    [record] = [t for t in await store.memory.list_threads() if t.thread_id == delegation.sub_agent_thread_id]
    assert (record.agent_id, record.parent_thread_id) == ("worker-agent", thread)


async def test_its_chunks_are_attributed_as_before() -> None:
    stream = await team().stream("go")
    chunks = [c async for c in stream.full_stream]
    start = next(c for c in chunks if c.type == "delegation-start")
    own = [c for c in chunks if c.agent_path == ("boss", "worker-agent")]
    assert [c.type for c in own] == ["step-start", "text-delta", "step-finish"]
    assert {c.namespace for c in own} == {start.payload["namespace"]}
    assert "".join(c.text for c in own if c.type == "text-delta") == "worked"


async def test_a_subagent_that_could_pause_still_runs_as_a_subgraph(store) -> None:
    def lookup(q: str) -> str:
        """Look up."""
        return q

    worker = Agent(
        id="worker-agent", description="Works.", tools=[lookup],
        model=ScriptedChatModel(policy=lambda m: "worked" if m[-1].type == "tool" else tool_call("lookup", {"q": "x"})),
    )
    parent = Agent(
        id="boss", model=ScriptedChatModel(policy=lambda m: "done" if len(m) > 2 else delegate("worker", "do it")),
        agents={"worker": worker}, memory=store.memory,
    )
    result = await parent.generate("go", **store.call())
    thread, ns = result.delegations[0].sub_agent_thread_id.split("::")
    saver = await store.memory.checkpointer()
    assert len([c async for c in saver.alist({"configurable": {"thread_id": thread, "checkpoint_ns": ns}})]) > 1


async def test_studio_and_embedding_still_see_a_subgraph() -> None:
    graph = team().compile()
    namespaces = set()
    async for ns, _mode, _data in graph.astream({"messages": [HumanMessage("go")]}, stream_mode=["updates"], subgraphs=True):
        namespaces.add(ns[0].split(":")[0] if ns else "")
    assert "worker" in namespaces
