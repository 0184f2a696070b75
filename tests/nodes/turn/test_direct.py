"""Leaf subagents, tools included, run inside their delegation's node under every driver
(SPEC §23, issue 23): one checkpoint for the delegation's thread, the same thread
contents and attributed chunks, the same path for the facade and the compiled graph; a
pause resumes without calling the subagent's model again or re-running finished tools."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


def team(memory: Memory | None = None, **sub: object) -> Agent:
    worker = Agent(id="worker-agent", description="Works.", model=ScriptedChatModel(policy=lambda m: "worked"), **sub)
    return Agent(
        id="boss",
        model=ScriptedChatModel(policy=lambda m: "done" if len(m) > 2 else delegate("worker", "do it")),
        agents={"worker": worker},
        memory=memory,
    )


def lookup(q: str) -> str:
    """Look up."""
    return f"found {q}"


def tool_team(n: int = 1, memory: Memory | None = None, *, tools: list[Any] | None = None, calls: Any = None) -> Agent:
    """`n` delegations, one per supervisor turn; each worker calls its tool(s) once, then answers."""

    def worker_policy(messages: list[Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return "worked: " + ", ".join(str(m.content) for m in messages if isinstance(m, ToolMessage))
        return calls or tool_call("lookup", {"q": "x"})

    def boss_policy(messages: list[Any]) -> Any:
        done = sum(isinstance(m, ToolMessage) for m in messages)
        return delegate("worker", f"part {done}") if done < n else "done"

    worker = Agent(id="worker-agent", description="Works.", tools=tools or [lookup], model=ScriptedChatModel(policy=worker_policy))
    return Agent(id="boss", model=ScriptedChatModel(policy=boss_policy), agents={"worker": worker}, memory=memory)


async def _written(saver: Any, thread: str, ns: str | None = None) -> int:
    config: dict[str, Any] = {"configurable": {"thread_id": thread}}
    if ns is not None:
        config["configurable"]["checkpoint_ns"] = ns
    return len([c async for c in saver.alist(config)])


async def test_one_checkpoint_and_the_same_thread(store) -> None:
    parent = team(store.memory)
    result = await parent.generate("go", **store.call())
    [delegation] = result.delegations
    messages = await store.memory.get_messages(delegation.sub_agent_thread_id)
    assert [type(m) for m in messages] == [HumanMessage, AIMessage] and messages[1].content == "worked"
    saver = await store.memory.checkpointer()
    thread, ns = delegation.sub_agent_thread_id.split("::")
    assert await _written(saver, thread, ns) == 1  # a subgraph run wrote 3
    [record] = [t for t in await store.memory.list_threads() if t.thread_id == delegation.sub_agent_thread_id]
    assert (record.agent_id, record.parent_thread_id) == ("worker-agent", thread)


async def test_a_worker_with_a_tool_writes_its_thread_once(store) -> None:
    parent = tool_team(1, store.memory)
    result = await parent.generate("go", **store.call())
    [delegation] = result.delegations
    assert delegation.text == "worked: found x" and delegation.usage.total_tokens > 0
    assert [r["tool_name"] for r in delegation.sub_agent_tool_results] == ["lookup"]
    messages = await store.memory.get_messages(delegation.sub_agent_thread_id)
    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    thread, ns = delegation.sub_agent_thread_id.split("::")
    assert await _written(await store.memory.checkpointer(), thread, ns) == 1  # a subgraph run wrote 4


async def test_the_compiled_graph_takes_the_same_path_at_three_checkpoints_per_delegation() -> None:
    written = {}
    for n in (1, 2):
        saver = InMemorySaver()
        graph = tool_team(n).compile(checkpointer=saver)
        out = await graph.ainvoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t"}})
        assert out["messages"][-1].content == "done"
        assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == ["worked: found x"] * n
        written[n] = sum(1 for _ in saver.list(None))
    assert written[2] - written[1] <= 3  # supervisor step, delegation step, the delegation's thread


async def test_its_chunks_are_attributed_as_before() -> None:
    stream = await team().stream("go")
    chunks = [c async for c in stream.full_stream]
    start = next(c for c in chunks if c.type == "delegation-start")
    own = [c for c in chunks if c.agent_path == ("boss", "worker-agent")]
    assert [c.type for c in own] == ["step-start", "text-delta", "step-finish"]
    assert {c.namespace for c in own} == {start.payload["namespace"]}
    assert "".join(c.text for c in own if c.type == "text-delta") == "worked"


async def test_a_tool_using_workers_chunks_are_attributed() -> None:
    stream = await tool_team(1).stream("go")
    own = [c for c in [c async for c in stream.full_stream] if c.agent_path == ("boss", "worker-agent")]
    kinds = [c.type for c in own]
    assert kinds[:3] == ["step-start", "tool-call", "step-finish"] and "tool-result" in kinds
    assert kinds[-1] == "step-finish" and kinds.count("step-start") == 2


async def test_a_subagent_with_subagents_still_runs_as_a_subgraph(store) -> None:
    inner = Agent(id="inner-agent", description="Inner.", model=ScriptedChatModel(policy=lambda m: "inner done"))
    worker = Agent(
        id="worker-agent", description="Works.", agents={"inner": inner},
        model=ScriptedChatModel(policy=lambda m: "worked" if m[-1].type == "tool" else delegate("inner", "go")),
    )
    parent = Agent(
        id="boss", model=ScriptedChatModel(policy=lambda m: "done" if len(m) > 2 else delegate("worker", "do it")),
        agents={"worker": worker}, memory=store.memory,
    )
    result = await parent.generate("go", **store.call())
    thread, ns = result.delegations[0].sub_agent_thread_id.split("::")
    assert await _written(await store.memory.checkpointer(), thread, ns) > 1


class Runs(BaseCallbackHandler):
    def __init__(self) -> None:
        self.runs: dict[Any, tuple[str, Any]] = {}  # run id -> (name, parent run id)

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any) -> None:
        self.runs[run_id] = (kwargs.get("name") or "", parent_run_id)

    def on_tool_start(self, serialized: Any, input_str: Any, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any) -> None:
        self.runs[run_id] = ((serialized or {}).get("name") or kwargs.get("name") or "", parent_run_id)


async def test_the_trace_has_a_run_named_after_the_subagent_holding_its_tool_run() -> None:
    handler = Runs()
    await tool_team(1).compile().ainvoke({"messages": [HumanMessage("go")]}, {"callbacks": [handler]})
    [agent_run] = [run for run, (name, _) in handler.runs.items() if name == "worker-agent"]
    [(_, parent)] = [v for v in handler.runs.values() if v[0] == "lookup"]
    assert parent == agent_run


# -- pauses ---------------------------------------------------------------------


def _ledger_tools(ledger: list[str]) -> list[Any]:
    from pydantic import BaseModel

    class Args(BaseModel):
        what: str

    def make(name: str, approval: bool) -> Any:
        def execute(args: Args) -> str:
            ledger.append(f"{name}:{args.what}")
            return f"{name} ok"

        return create_tool(id=name, description=name, input_schema=Args, execute=execute, require_approval=approval)

    return [make("pay", True), make("refund", True), make("note", False)]


async def test_two_approvals_in_one_turn_beside_a_finished_tool_each_run_once(store) -> None:
    ledger: list[str] = []
    calls = [tool_call("note", {"what": "a"}), tool_call("pay", {"what": "b"}), tool_call("refund", {"what": "c"})]
    parent = tool_team(1, store.memory, tools=_ledger_tools(ledger), calls=calls)
    worker_model = parent.agents["worker"].model
    call = store.call()
    first = await parent.generate("go", **call)
    assert [i.tool_name for i in first.suspended] == ["pay"] and ledger == ["note:a"]
    second = await parent.approve_tool_call(interrupt_id=first.suspended[0].interrupt_id, memory=call["memory"])
    assert [i.tool_name for i in second.suspended] == ["refund"] and ledger == ["note:a", "pay:b"]
    done = await parent.decline_tool_call(interrupt_id=second.suspended[0].interrupt_id, memory=call["memory"])
    assert done.finish_reason == "stop" and ledger == ["note:a", "pay:b"]
    assert len(worker_model.calls) == 2  # the tool call, then the answer: never a repeat
    messages = await store.memory.get_messages(call["memory"]["thread"])
    [result] = [m for m in messages if isinstance(m, ToolMessage)]
    assert result.content.startswith("worked: note ok, pay ok, The user declined")


async def test_an_approval_answered_with_a_raw_command_on_the_compiled_graph() -> None:
    ledger: list[str] = []
    parent = tool_team(1, tools=_ledger_tools(ledger), calls=tool_call("pay", {"what": "x"}))
    worker_model = parent.agents["worker"].model
    graph = parent.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "raw"}}
    paused = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    [pending] = paused["__interrupt__"]
    assert pending.value["tool_name"] == "pay" and pending.value["agent_path"] == ["boss", "worker-agent"]
    out = await graph.ainvoke(Command(resume={pending.id: {"approved": True}}), config)
    assert out["messages"][-1].content == "done" and ledger == ["pay:x"]
    assert len(worker_model.calls) == 2


async def test_parallel_paused_delegations_answered_one_at_a_time_never_repeat_a_model_call(store) -> None:
    ledger: list[str] = []
    pay = _ledger_tools(ledger)[0]

    def worker_policy(messages: list[Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"paid ({messages[-1].content})"
        return tool_call("pay", {"what": messages[-1].content})

    worker_model = ScriptedChatModel(policy=worker_policy)
    worker = Agent(id="worker-agent", description="Pays.", tools=[pay], model=worker_model)
    boss_model = ScriptedChatModel(
        policy=lambda m: "done" if isinstance(m[-1], ToolMessage) else [delegate("worker", "a"), delegate("worker", "b")]
    )
    parent = Agent(id="boss", model=boss_model, agents={"worker": worker}, memory=store.memory)
    call = store.call()
    first = await parent.generate("go", **call)
    assert sorted(i.args["what"] for i in first.suspended) == ["a", "b"] and len(worker_model.calls) == 2
    [a] = [i for i in first.suspended if i.args["what"] == "a"]
    second = await parent.approve_tool_call(interrupt_id=a.interrupt_id, memory=call["memory"])
    assert [i.args["what"] for i in second.suspended] == ["b"] and ledger == ["pay:a"]
    assert len(worker_model.calls) == 3  # a's answer; b's model was not asked again
    done = await parent.approve_tool_call(interrupt_id=second.suspended[0].interrupt_id, memory=call["memory"])
    assert done.finish_reason == "stop" and sorted(ledger) == ["pay:a", "pay:b"] and len(worker_model.calls) == 4


class CountingReads(InMemorySaver):
    def __init__(self) -> None:
        super().__init__()
        self.nested_reads = 0

    async def aget_tuple(self, config: Any) -> Any:
        if config["configurable"].get("checkpoint_ns"):
            self.nested_reads += 1
        return await super().aget_tuple(config)


async def test_a_delegation_that_does_not_pause_reads_nothing_back() -> None:
    saver = CountingReads()
    graph = tool_team(2).compile(checkpointer=saver)
    out = await graph.ainvoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t"}})
    assert out["messages"][-1].content == "done"
    assert saver.nested_reads == 0  # its thread is written once, never read back (checkpointers/first_write.py)
    assert len([c for c in saver.list(None) if c.config["configurable"]["checkpoint_ns"]]) == 2
