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


SECRET = "vault-code-7731"


@tool
def read_vault(name: str) -> str:
    """Read a vault entry."""
    return f"{name}: {SECRET}"


def vault_reader(**options) -> Agent:
    model = ScriptedChatModel(
        policy=lambda m: tool_call("read_vault", {"name": "main"})
        if not isinstance(m[-1], ToolMessage)
        else f"The main vault code is {SECRET}. " + "More detail follows. " * 40
    )
    return Agent(id="vault-agent", description="Reads the vault.", model=model, tools=[read_vault], **options)


def model_context(parent_model: ScriptedChatModel) -> dict:
    """The delegation's tool result as the supervisor model got it, parsed."""
    [seen] = results(parent_model.calls[1])
    return json.loads(str(seen.content).split("\n\n[ref: ")[0])


async def test_result_text_still_redacts_with_tool_results_in_model_context(store) -> None:
    """The flag adds the nested tool results; it does not undo a hook's `result_text`."""
    parent_model = ScriptedChatModel(responses=[delegate("v", "read the main vault"), "done"])
    parent = Agent(id="p", model=parent_model, agents={"v": vault_reader()}, memory=store.memory)
    redact = {"on_delegation_complete": lambda ctx: {"result_text": ctx.result.text.replace(SECRET, "[redacted]")}}
    result = await parent.generate(
        "go", **store.call(delegation={**redact, "include_sub_agent_tool_results_in_model_context": True})
    )
    payload = model_context(parent_model)
    assert payload["text"].startswith("The main vault code is [redacted].") and SECRET not in payload["text"]
    assert payload["agent_id"] == "vault-agent" and payload["finish_reason"] == "stop"
    [nested] = payload["sub_agent_tool_results"]
    assert nested["tool_name"] == "read_vault" and nested["args"] == {"name": "main"}
    # application code still has the subagent's own answer
    assert SECRET in result.delegations[0].text


async def test_a_preview_stays_a_preview_with_tool_results_in_model_context(store) -> None:
    parent_model = ScriptedChatModel(responses=[delegate("v", "read the main vault"), "done"])
    parent = Agent(id="p", model=parent_model, agents={"v": vault_reader(result_preview_tokens=4)}, memory=store.memory)
    await parent.generate("go", **store.call(delegation={"include_sub_agent_tool_results_in_model_context": True}))
    payload = model_context(parent_model)
    assert SECRET not in payload["text"] and "More detail" not in payload["text"]
    assert payload["text"].startswith("The main vault") and 'context_from_refs=["vault-agent-1"]' in payload["text"]
    assert str(results(parent_model.calls[1])[0].content).endswith("[ref: vault-agent-1]")
    assert payload["sub_agent_tool_results"][0]["tool_name"] == "read_vault"


async def test_result_text_and_a_preview_with_tool_results_in_model_context(store) -> None:
    """A hook's replacement is what gets previewed, and the flag keeps the preview."""
    parent_model = ScriptedChatModel(responses=[delegate("v", "read the main vault"), "done"])
    parent = Agent(id="p", model=parent_model, agents={"v": vault_reader(result_preview_tokens=4)}, memory=store.memory)
    redact = {"on_delegation_complete": lambda ctx: {"result_text": ctx.result.text.replace(SECRET, "[redacted]")}}
    await parent.generate("go", **store.call(delegation={**redact, "include_sub_agent_tool_results_in_model_context": True}))
    payload = model_context(parent_model)
    assert payload["text"].startswith("The main vault") and "More detail" not in payload["text"]
    assert SECRET not in payload["text"] and payload["sub_agent_tool_results"]


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
