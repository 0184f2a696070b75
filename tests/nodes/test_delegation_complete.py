"""`on_delegation_complete` (SPEC §6.5) and the result context (§6.7)."""

from __future__ import annotations

import json

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool

from supervisor_graph import Agent
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


def results(messages) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


@tool
def lookup(q: str) -> str:
    """Look up."""
    return f"found {q}"


def researcher() -> Agent:
    model = ScriptedChatModel(
        policy=lambda m: tool_call("lookup", {"q": m[-1].content}) if not isinstance(m[-1], ToolMessage) else f"summary: {m[-1].content}"
    )
    return Agent(id="research-agent", description="Research.", model=model, tools=[lookup])


async def test_context_has_result_and_bail_stops_the_loop(store) -> None:
    seen = []

    async def on_complete(ctx):
        seen.append(ctx)
        ctx.bail()

    parent_model = ScriptedChatModel(responses=[delegate("r", "topic"), "never reached"])
    parent = Agent(id="p", model=parent_model, agents={"r": researcher()}, memory=store.memory)
    call = store.call(delegation={"on_delegation_complete": on_complete})
    result = await parent.generate("go", **call)
    assert result.finish_reason == "bail" and len(parent_model.calls) == 1
    [ctx] = seen
    assert ctx.primitive_id == "research-agent" and ctx.success and ctx.error is None
    assert ctx.result.text == "summary: found topic"
    assert ctx.result.usage.total_tokens == 30
    assert ctx.result.finish_reason == "stop"
    assert ctx.result.sub_agent_tool_results == [
        {"tool_call_id": ctx.result.sub_agent_tool_results[0]["tool_call_id"], "tool_name": "lookup", "args": {"q": "topic"}, "result": "found topic", "status": "success"}
    ]
    assert ctx.result.sub_agent_pending_tool_calls == []
    assert ctx.result.sub_agent_thread_id.startswith(call["memory"]["thread"] + "::r:")
    assert ctx.result.sub_agent_resource_id == "user/r"
    assert [type(m).__name__ for m in ctx.messages] == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    # the thread is consistent after a bail: the next call works
    follow = await parent.generate("more", memory=call["memory"])
    assert follow.text == "never reached"


async def test_feedback_is_saved_and_seen_from_the_next_iteration(store) -> None:
    parent_model = ScriptedChatModel(responses=[delegate("r", "a"), "done"])
    parent = Agent(id="p", model=parent_model, agents={"r": researcher()}, memory=store.memory)
    call = store.call(delegation={"on_delegation_complete": lambda ctx: {"feedback": "Cite sources next time."}})
    await parent.generate("go", **call)
    assert any(isinstance(m, HumanMessage) and m.content == "Cite sources next time." for m in parent_model.calls[1])
    stored = await store.memory.get_messages(call["memory"]["thread"])
    assert [m.content for m in stored if isinstance(m, HumanMessage)] == ["go", "Cite sources next time."]


async def test_result_text_replaces_what_the_model_sees_including_empty(store) -> None:
    parent_model = ScriptedChatModel(responses=[[delegate("r", "a", id="x1"), delegate("r", "b", id="x2")], "done"])
    parent = Agent(id="p", model=parent_model, agents={"r": researcher()}, memory=store.memory)
    replacements = {"x1": "", "x2": "Replaced text."}
    await parent.generate("go", **store.call(delegation={"on_delegation_complete": lambda ctx: {"result_text": replacements[ctx.tool_call_id]}}))
    assert [(m.tool_call_id, m.content) for m in results(parent_model.calls[1])] == [("x1", ""), ("x2", "Replaced text.")]


async def test_failure_gives_generic_text_and_result_text_keeps_it_a_failure(store) -> None:
    secret = RuntimeError("401 from provider: key sk-live-SECRET")
    broken = Agent(id="broken-agent", description="Breaks.", model=ScriptedChatModel(responses=[secret, secret]))
    parent_model = ScriptedChatModel(responses=[delegate("b", "x"), delegate("b", "y"), "gave up"])
    parent = Agent(id="p", model=parent_model, agents={"b": broken}, memory=store.memory)
    seen = []

    def on_complete(ctx):
        seen.append((ctx.success, ctx.error, ctx.result.text, len(ctx.messages)))
        if len(seen) == 2:
            return {"result_text": "The research failed. Try another approach."}
        return None

    result = await parent.generate("go", **store.call(delegation={"on_delegation_complete": on_complete}))
    assert result.text == "gave up"
    first, second = results(result.messages)
    assert first.status == "error" and "broken-agent could not complete" in first.content and "SECRET" not in first.content
    assert second.status == "error" and second.content == "The research failed. Try another approach."
    assert seen[0][0] is False and seen[0][1] is secret and seen[0][2] == ""
    assert seen[0][3] == 1  # the partial transcript: the prompt it received
    assert [d.success for d in result.delegations] == [False, False]


async def test_nested_tool_calls_stay_out_of_the_model_context_by_default(store) -> None:
    parent_model = ScriptedChatModel(responses=[delegate("r", "topic"), "done"])
    parent = Agent(id="p", model=parent_model, agents={"r": researcher()}, memory=store.memory)
    stream = await parent.stream("go", **store.call())
    chunks = [c async for c in stream.full_stream]
    result = await stream.result()
    [seen] = results(parent_model.calls[1])
    assert seen.content == "summary: found topic"
    assert "lookup" not in seen.content
    # ...but code and streams get them
    [tool_result] = [c for c in chunks if c.type == "tool-result" and c.payload["tool_name"] == "agent-r"]
    assert tool_result.payload["sub_agent_tool_results"][0]["tool_name"] == "lookup"
    assert result.delegations[0].sub_agent_tool_results[0]["result"] == "found topic"


async def test_include_sub_agent_tool_results_in_model_context(store) -> None:
    parent_model = ScriptedChatModel(responses=[delegate("r", "topic"), "done"])
    parent = Agent(id="p", model=parent_model, agents={"r": researcher()}, memory=store.memory)
    await parent.generate("go", **store.call(delegation={"include_sub_agent_tool_results_in_model_context": True}))
    [seen] = results(parent_model.calls[1])
    payload = json.loads(seen.content)
    assert payload["text"] == "summary: found topic"
    assert payload["sub_agent_tool_results"][0]["tool_name"] == "lookup"
    assert payload["sub_agent_thread_id"] and payload["agent_id"] == "research-agent"


async def test_result_is_typed_and_the_same_type_as_generate_result_delegations(store) -> None:
    from supervisor_graph import DelegationResult

    parent = Agent(id="p", model=ScriptedChatModel(responses=[delegate("r", "topic"), "done"]), agents={"r": researcher()}, memory=store.memory)
    seen = []

    def on_complete(ctx):
        seen.append(ctx.result)
        return {"result_text": ctx.result.text.upper()}  # raised inside the hook before results were typed

    result = await parent.generate("go", **store.call(delegation={"on_delegation_complete": on_complete, "hook_error_strategy": "throw"}))
    [typed] = seen
    assert isinstance(typed, DelegationResult) and typed.usage.total_tokens == 30
    [listed] = result.delegations
    assert isinstance(listed, DelegationResult) and listed.text == typed.text and listed.agent_id == "research-agent"
    assert result.finish_reason == "stop" and listed.success
