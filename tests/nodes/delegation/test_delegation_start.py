"""`on_delegation_start` (SPEC §6.2) and the request context at the boundary (§6.3)."""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool

from supervisor_graph import RUN_ID_KEY, THREAD_ID_KEY, Agent, DelegationStartResult, RequestContext
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


def research(text: str = "sub result") -> tuple[Agent, ScriptedChatModel]:
    model = ScriptedChatModel(policy=lambda m: f"{text} for {m[-1].content}")
    return Agent(id="research-agent", description="Research.", model=model), model


def results(messages) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


async def test_reject_with_reason_and_default_reason(store) -> None:
    sub, sub_model = research()
    parent = Agent(
        id="p", model=ScriptedChatModel(responses=[delegate("r", "a"), delegate("r", "b"), "end"]), agents={"r": sub}, memory=store.memory
    )
    decisions = iter([{"proceed": False, "rejection_reason": "Too late."}, DelegationStartResult(proceed=False)])
    completes = []
    result = await parent.generate(
        "go",
        **store.call(delegation={"on_delegation_start": lambda ctx: next(decisions), "on_delegation_complete": completes.append}),
    )
    texts = [m.content for m in results(result.messages)]
    assert texts[0] == "[Delegation Rejected] Too late."
    assert texts[1] == "[Delegation Rejected] The supervisor's delegation policy declined this delegation."
    assert sub_model.calls == [] and completes == []  # never ran, complete hook never called
    assert result.delegations == []


async def test_async_hook_modifies_prompt_and_max_steps(store) -> None:
    sub_model = ScriptedChatModel(policy=lambda m: delegate("leaf", "x"))
    leaf = Agent(id="leaf-agent", description="Leaf.", model=ScriptedChatModel(policy=lambda m: "leaf"))
    sub = Agent(id="research-agent", description="Research.", model=sub_model, agents={"leaf": leaf})
    seen = []

    async def on_start(ctx):
        seen.append((ctx.primitive_id, ctx.prompt, ctx.iteration))
        if ctx.primitive_id == "research-agent":
            return {"modified_prompt": ctx.prompt + "\n\nFocus on 2024-2025 data.", "modified_max_steps": 2}
        return None

    parent = Agent(id="p", model=ScriptedChatModel(responses=[delegate("r", "trends", max_steps=9), "end"]), agents={"r": sub}, memory=store.memory)
    result = await parent.generate("go", **store.call(delegation={"on_delegation_start": on_start}))
    assert result.text == "end"
    # the hook ran at both depths (delegation options apply at every level)
    assert seen[0] == ("research-agent", "trends", 1)
    assert [s[0] for s in seen[1:]] == ["leaf-agent", "leaf-agent"]
    assert sub_model.calls[0][-1].content == "trends\n\nFocus on 2024-2025 data."
    assert len(sub_model.calls) == 2  # modified_max_steps beat the call's max_steps=9
    assert result.delegations[0].finish_reason == "max_steps"


async def test_thread_metadata_is_filterable(store) -> None:
    sub, _ = research()
    parent = Agent(id="p", model=ScriptedChatModel(responses=[delegate("r", "a"), "end"]), agents={"r": sub}, memory=store.memory)
    result = await parent.generate(
        "go", **store.call(delegation={"on_delegation_start": lambda ctx: {"thread_metadata": {"tenant_id": "acme", "tier": 2}}})
    )
    thread = result.delegations[0].sub_agent_thread_id
    found = await store.memory.list_threads(filter={"metadata": {"tenant_id": "acme"}})
    assert [r.thread_id for r in found] == [thread]
    assert found[0].metadata == {"tenant_id": "acme", "tier": 2}
    assert await store.memory.list_threads(filter={"metadata": {"tenant_id": "other"}}) == []


async def test_request_context_copy_per_delegation_never_reaches_the_parent(store) -> None:
    @tool
    def read_audience() -> str:
        """Read the audience and change the context."""
        from supervisor_graph import current_request_context

        ctx = current_request_context()
        ctx.set("written_by_subagent", True)
        ctx.delete("tenant")
        return f"audience={ctx.get('audience')} tenant={ctx.get('tenant')}"

    instructions_seen = []

    def sub_instructions(ctx):
        instructions_seen.append((ctx.get("audience"), ctx.get(THREAD_ID_KEY), ctx.get(RUN_ID_KEY)))
        return "Sub."

    sub_model = ScriptedChatModel(policy=lambda m: tool_call("read_audience") if not isinstance(m[-1], ToolMessage) else m[-1].content)
    sub = Agent(id="research-agent", description="Research.", instructions=sub_instructions, model=sub_model, tools=[read_audience])

    def on_start(ctx):
        assert ctx.request_context.get("tenant") == "acme"
        assert not ctx.request_context.has(THREAD_ID_KEY)  # identity keys are not copied
        ctx.request_context.set("audience", f"technical-{ctx.tool_call_id}")

    parent = Agent(
        id="p",
        model=ScriptedChatModel(responses=[[delegate("r", "a", id="c1"), delegate("r", "b", id="c2")], "end"]),
        agents={"r": sub},
        memory=store.memory,
    )
    request_context = RequestContext({"tenant": "acme"})
    result = await parent.generate("go", **store.call(request_context=request_context, delegation={"on_delegation_start": on_start}))
    texts = sorted(m.content for m in results(result.messages))
    assert texts == ["audience=technical-c1 tenant=None", "audience=technical-c2 tenant=None"]
    # the parent's context is untouched; the caller's object is the run's context
    assert request_context.get("tenant") == "acme"
    assert not request_context.has("audience") and not request_context.has("written_by_subagent")
    assert request_context.get(RUN_ID_KEY) == result.run_id
    # each delegation had its own identity: its own thread, the top-level run id
    assert {a for a, _, _ in instructions_seen} == {"technical-c1", "technical-c2"}
    assert len({t for _, t, _ in instructions_seen}) == 2
    assert {r for _, _, r in instructions_seen} == {result.run_id}


async def test_non_json_request_context_with_a_durable_checkpointer(store) -> None:
    sub, _ = research()
    parent = Agent(id="p", model=ScriptedChatModel(responses=[delegate("r", "a"), "end"] * 2), agents={"r": sub}, memory=store.memory)
    if store.kind == "memory":
        result = await parent.generate("go", **store.call(request_context={"handle": object()}))
        assert result.text == "end"
        return
    with pytest.raises(TypeError, match="'handle' holds a object, which is not JSON-serialisable"):
        await parent.generate("go", **store.call(request_context={"handle": object()}))

    def put_object(ctx):
        ctx.request_context.set("conn", object())

    call = store.call(delegation={"on_delegation_start": put_object})
    with pytest.raises(TypeError, match="entry 'conn' holds a object"):
        await parent.generate("go", **call)
    # nothing checkpointed is lost and the thread stays usable
    thread = call["memory"]["thread"]
    stored = await store.memory.get_messages(thread)
    assert [type(m).__name__ for m in stored] == ["HumanMessage", "AIMessage", "ToolMessage"]
    assert stored[-1].status == "error"
    again = await parent.generate("next", memory=call["memory"])
    assert again.text == "end"
