"""The compiled graph's synchronous entry points (issue 26, item 1): `invoke`, `stream`,
`batch`, a node of a sync parent graph, a sync `as_tool` call and approvals resumed with
`Command(resume=...)`, outside and inside a running event loop."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

from langchain.agents import create_agent
from langchain_core._api import LangChainBetaWarning
from langchain_core.messages import AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import Command
from pydantic import BaseModel

from supervisor_graph import Agent, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


class Amount(BaseModel):
    amount: int


PAID: list[int] = []


def team() -> Agent:
    pay = create_tool(id="pay", description="Pay.", input_schema=Amount, execute=lambda a: PAID.append(a.amount) or "paid", require_approval=True)
    payer = Agent(
        id="payer-agent", description="Pays.", tools=[pay],
        model=ScriptedChatModel(policy=lambda m: f"payer: {m[-1].content}" if isinstance(m[-1], ToolMessage) else tool_call("pay", {"amount": 3})),
    )
    writer = Agent(id="writer-agent", description="Writes.", model=ScriptedChatModel(policy=lambda m: "written"))
    # a subagent with subagents of its own runs as a LangGraph subgraph inside its node
    editor = Agent(
        id="editor-agent", description="Edits.", agents={"writer": writer},
        model=ScriptedChatModel(policy=lambda m: f"edited {m[-1].content}" if isinstance(m[-1], ToolMessage) else delegate("writer", "w")),
    )

    def boss(messages: list[Any]) -> Any:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            results = [m.content for m in messages if isinstance(m, ToolMessage)]
            return "boss: " + " + ".join(sorted(str(r) for r in results[-2:]))
        if "pay" in str(last.content):
            return delegate("payer", "pay 3")
        return [delegate("editor", "edit"), delegate("writer", "write")]  # parallel

    return Agent(id="boss", agents={"payer": payer, "editor": editor, "writer": writer}, model=ScriptedChatModel(policy=boss))


def test_invoke_batch_and_stream() -> None:
    graph = team().compile(checkpointer=InMemorySaver())
    out = graph.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "a"}})
    assert out["messages"][-1].content == "boss: edited written + written"
    outs = graph.batch([{"messages": [HumanMessage("go")]}] * 3, [{"configurable": {"thread_id": f"b{i}"}} for i in range(3)])
    assert [o["messages"][-1].content for o in outs] == ["boss: edited written + written"] * 3
    tokens = [
        chunk.content
        for chunk, _ in graph.stream({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "c"}}, stream_mode="messages")
        if isinstance(chunk, AIMessageChunk)
    ]
    assert "".join(t for t in tokens if isinstance(t, str)).endswith("boss: edited written + written")


def test_an_approval_paused_by_invoke_is_resumed_by_invoke() -> None:
    PAID.clear()
    graph = team().compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "p"}}
    paused = graph.invoke({"messages": [HumanMessage("pay")]}, config)
    [item] = paused["__interrupt__"]
    assert item.value["tool_name"] == "pay" and PAID == []
    out = graph.invoke(Command(resume={item.id: {"approved": True}}), config)
    assert out["messages"][-1].content == "boss: payer: paid" and PAID == [3]


def test_a_node_of_a_sync_parent_graph_and_a_sync_tool() -> None:
    graph = team().compile()
    parent: Any = StateGraph(MessagesState)
    parent.add_node("team", graph)
    parent.add_edge(START, "team")
    out = parent.compile(checkpointer=InMemorySaver()).invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "n"}})
    assert out["messages"][-1].content == "boss: edited written + written"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainBetaWarning)  # `as_tool` is marked beta
        tool = (
            RunnableLambda(lambda args: {"messages": [HumanMessage(args["request"])]})
            | graph
            | RunnableLambda(lambda state: state["messages"][-1].content)
        ).as_tool(name="team", description="The team.", arg_types={"request": str})
    assert tool.invoke({"request": "go"}) == "boss: edited written + written"
    # a synchronous LangChain agent calling it
    outer = ScriptedChatModel(policy=lambda m: f"team said {m[-1].content}" if isinstance(m[-1], ToolMessage) else tool_call("team", {"request": "go"}))
    assistant = create_agent(outer, tools=[tool])
    out = assistant.invoke({"messages": [HumanMessage("ask the team")]})
    assert out["messages"][-1].content == "team said boss: edited written + written"


def test_invoke_inside_a_running_event_loop() -> None:
    """A notebook calls `graph.invoke` with its own loop running in the thread."""
    graph = team().compile(checkpointer=InMemorySaver())

    async def notebook_cell() -> Any:
        return graph.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "nb"}})

    assert asyncio.run(notebook_cell())["messages"][-1].content == "boss: edited written + written"
