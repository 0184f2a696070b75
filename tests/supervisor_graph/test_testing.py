"""The public scripted chat model users test their agents with."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langchain_core.tools import tool

from supervisor_graph.testing import ScriptedChatModel, ScriptExhaustedError, delegate, tool_call


@tool
def search(query: str) -> str:
    """Search."""
    return query


def test_script_in_order_then_exhausted() -> None:
    model = ScriptedChatModel(responses=["one", tool_call("search", {"query": "q"}, id="c1")])
    assert model.invoke("a").content == "one"
    reply = model.invoke("b")
    assert reply.tool_calls == [{"name": "search", "args": {"query": "q"}, "id": "c1", "type": "tool_call"}]
    assert reply.response_metadata["finish_reason"] == "tool_calls"
    with pytest.raises(ScriptExhaustedError, match="only 2 scripted responses"):
        model.invoke("c")
    assert [m[0].content for m in model.calls] == ["a", "b", "c"]


def test_policy_sees_messages_and_usage_is_reported() -> None:
    model = ScriptedChatModel(policy=lambda ms: f"{len(ms)} messages", input_tokens=7, output_tokens=3)
    reply = model.invoke([HumanMessage("x"), AIMessage("y"), HumanMessage("z")])
    assert reply.content == "3 messages"
    assert reply.usage_metadata == {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}


def test_bind_tools_and_streaming() -> None:
    model = ScriptedChatModel(responses=["Hello streaming world", delegate("writer", "go", max_steps=2)])
    bound = model.bind_tools([search])
    assert model.bound_tool_names == ["search"]
    chunks = list(bound.stream("hi"))
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    assert [c.content for c in chunks] == ["Hello ", "streaming ", "world"]
    assert chunks[-1].usage_metadata is not None
    total = chunks[0]
    for c in chunks[1:]:
        total += c
    assert total.content == "Hello streaming world"
    streamed_call = sum(bound.stream("again"), AIMessageChunk(content=""))
    assert streamed_call.tool_calls[0]["name"] == "agent-writer"
    assert streamed_call.tool_calls[0]["args"] == {"prompt": "go", "max_steps": 2}


async def test_async_and_exceptions() -> None:
    model = ScriptedChatModel(responses=[RuntimeError("provider down"), "ok"])
    with pytest.raises(RuntimeError, match="provider down"):
        await model.ainvoke("x")
    assert (await model.ainvoke("y")).content == "ok"


def test_bad_reply_type() -> None:
    model = ScriptedChatModel(responses=[3.14])
    with pytest.raises(TypeError, match="cannot turn float"):
        model.invoke("x")


async def test_list_content_streams_like_it_generates() -> None:
    from langchain_core.messages import AIMessage

    from supervisor_graph import Agent

    def reply() -> AIMessage:
        return AIMessage(
            content=[
                {"type": "reasoning", "reasoning": "Because the sky scatters blue."},
                {"type": "text", "text": "The sky is "},
                {"type": "text", "text": "blue."},
            ]
        )

    generated = await Agent(id="a", model=ScriptedChatModel(responses=[reply()])).generate("why?")
    assert generated.text == "The sky is blue."
    stream = await Agent(id="a", model=ScriptedChatModel(responses=[reply()])).stream("why?")
    chunks = [c async for c in stream.full_stream]
    text = "".join(c.text for c in chunks if c.type == "text-delta")
    reasoning = "".join(c.text for c in chunks if c.type == "reasoning-delta")
    assert text == "The sky is blue." and reasoning == "Because the sky scatters blue."
    assert len([c for c in chunks if c.type == "text-delta"]) > 1  # streamed in pieces, not in one
    assert (await stream.result()).text == "The sky is blue."
