"""Hook errors (SPEC §6.6): both strategies, each hook, and the run's record."""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage

from supervisor_graph import DELEGATION_HOOK_ERRORS, Agent, RequestContext
from supervisor_graph.testing import ScriptedChatModel, delegate


def results(messages) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def build(store, sub_reply="sub text") -> tuple[Agent, ScriptedChatModel, ScriptedChatModel]:
    sub_model = ScriptedChatModel(policy=lambda m: sub_reply if isinstance(sub_reply, str) else (_ for _ in ()).throw(sub_reply))
    sub = Agent(id="research-agent", description="Research.", model=sub_model)
    parent_model = ScriptedChatModel(responses=[delegate("r", "original prompt", id="call-1"), "done"])
    return Agent(id="p", model=parent_model, agents={"r": sub}, memory=store.memory), parent_model, sub_model


def boom(*args, **kwargs):
    raise RuntimeError("hook exploded")


def record_of(ctx: RequestContext, run_id: str) -> list[dict]:
    errors = ctx.get(DELEGATION_HOOK_ERRORS)
    assert errors, "the failure must be recorded"
    for e in errors:
        assert e["run_id"] == run_id and e["primitive_id"] == "research-agent" and e["tool_call_id"] == "call-1"
    return errors


@pytest.mark.parametrize("strategy", ["warn", "throw"])
async def test_start_hook_raises(store, strategy, caplog) -> None:
    parent, _, sub_model = build(store)
    ctx = RequestContext()
    result = await parent.generate(
        "go", **store.call(request_context=ctx, delegation={"on_delegation_start": boom, "hook_error_strategy": strategy})
    )
    [errors] = [record_of(ctx, result.run_id)]
    assert errors == [
        {"hook": "on_delegation_start", "primitive_id": "research-agent", "tool_call_id": "call-1", "run_id": result.run_id, "name": "RuntimeError", "message": "hook exploded"}
    ]
    [message] = results(result.messages)
    if strategy == "warn":
        assert sub_model.calls[0][-1].content == "original prompt"  # continued with the original prompt
        assert message.content == "sub text"
        assert "hook exploded" in caplog.text
    else:
        assert sub_model.calls == []  # prevented
        assert message.status == "error" and "hook exploded" not in message.content


@pytest.mark.parametrize("strategy", ["warn", "throw"])
async def test_bad_return_shape_is_a_hook_error(store, strategy) -> None:
    parent, _, sub_model = build(store)
    ctx = RequestContext()
    result = await parent.generate(
        "go",
        **store.call(request_context=ctx, delegation={"on_delegation_start": lambda c: {"proceed": "maybe", "extra": 1}, "hook_error_strategy": strategy}),
    )
    [error] = record_of(ctx, result.run_id)
    assert error["hook"] == "on_delegation_start" and error["name"] == "ValueError"
    assert "on_delegation_start returned an invalid value for proceed, extra" in error["message"]
    assert (len(sub_model.calls) == 1) == (strategy == "warn")
    parent2, _, _ = build(store)
    ctx2 = RequestContext()
    result2 = await parent2.generate(
        "go", **store.call(request_context=ctx2, delegation={"on_delegation_start": lambda c: 42, "hook_error_strategy": strategy})
    )
    assert "must return None, a dict or DelegationStartResult; it returned int" in record_of(ctx2, result2.run_id)[0]["message"]


@pytest.mark.parametrize("strategy", ["warn", "throw"])
async def test_message_filter_raises(store, strategy) -> None:
    parent, _, sub_model = build(store)
    ctx = RequestContext()
    result = await parent.generate(
        "go", **store.call(request_context=ctx, delegation={"message_filter": boom, "hook_error_strategy": strategy})
    )
    [error] = record_of(ctx, result.run_id)
    assert error["hook"] == "message_filter"
    [message] = results(result.messages)
    if strategy == "warn":
        assert [m.content for m in sub_model.calls[0]] == ["go", "original prompt"]  # unfiltered
        assert message.content == "sub text"
    else:
        assert sub_model.calls == [] and message.status == "error"
        assert result.delegations[0].success is False


@pytest.mark.parametrize("strategy", ["warn", "throw"])
async def test_complete_hook_raises(store, strategy) -> None:
    parent, _, _ = build(store)
    ctx = RequestContext()
    result = await parent.generate(
        "go", **store.call(request_context=ctx, delegation={"on_delegation_complete": boom, "hook_error_strategy": strategy})
    )
    [error] = record_of(ctx, result.run_id)
    assert error["hook"] == "on_delegation_complete"
    [message] = results(result.messages)
    if strategy == "warn":
        assert message.content == "sub text" and message.status == "success"  # its own result kept
    else:
        assert message.status == "error"  # a failed tool call, not a silently dropped success
        assert result.delegations[0].error == "RuntimeError"


async def test_complete_hook_raising_on_a_failed_delegation_keeps_the_original_error(store) -> None:
    original = ConnectionError("subagent provider down")
    parent, _, _ = build(store, sub_reply=original)
    seen = []

    def on_complete(ctx):
        seen.append(ctx.error)
        raise RuntimeError("hook exploded")

    ctx = RequestContext()
    result = await parent.generate(
        "go", **store.call(request_context=ctx, delegation={"on_delegation_complete": on_complete, "hook_error_strategy": "throw"})
    )
    assert seen == [original]
    assert result.delegations[0].error == "ConnectionError"
    assert record_of(ctx, result.run_id)[0]["hook"] == "on_delegation_complete"


async def test_no_failure_is_an_empty_list(store) -> None:
    parent, _, _ = build(store)
    ctx = RequestContext()
    assert ctx.get(DELEGATION_HOOK_ERRORS) == []  # before the run too
    await parent.generate("go", **store.call(request_context=ctx))
    assert ctx.get(DELEGATION_HOOK_ERRORS) == []
