"""Small graphs a `langgraph dev` server serves to the remote-subagent tests: `echo`
answers with what it was asked and the context it got (streaming tokens, reporting
usage), `approver` interrupts for an approval first, `slow` takes its time."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt
from typing_extensions import TypedDict

from supervisor_graph.testing import ScriptedChatModel


class Context(TypedDict, total=False):
    topic: str
    parent_messages: list[Any]


def _asked(state: MessagesState) -> str:
    return next((str(m.content) for m in reversed(state["messages"]) if isinstance(m, HumanMessage)), "")


def _echo_graph() -> Any:
    async def answer(state: MessagesState, runtime: Runtime[Context]) -> dict[str, Any]:
        context = runtime.context or {}
        reply = (
            f"echo: {_asked(state)} (topic={context.get('topic')}, "
            f"{len(context.get('parent_messages') or [])} parent messages)"
        )
        model = ScriptedChatModel(responses=[reply], input_tokens=7, output_tokens=3, record_calls=False)
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState, context_schema=Context)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    return graph.compile()


def _approver_graph() -> Any:
    async def transfer(state: MessagesState) -> dict[str, Any]:
        answer = interrupt({"kind": "approval", "tool_call_id": "remote-call-1", "tool_name": "transfer", "args": {"amount": 7}})
        approved = isinstance(answer, dict) and answer.get("approved") is True
        model = ScriptedChatModel(responses=[f"transfer {'done' if approved else 'declined'}"], record_calls=False)
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("transfer", transfer)
    graph.add_edge(START, "transfer")
    return graph.compile()


def _slow_graph() -> Any:
    async def answer(state: MessagesState) -> dict[str, Any]:
        model = ScriptedChatModel(responses=["finally"], latency=30.0, record_calls=False)
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    return graph.compile()


echo = _echo_graph()
approver = _approver_graph()
slow = _slow_graph()
