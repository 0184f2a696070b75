"""Result references (SPEC §6.7)."""

from __future__ import annotations

import re

from langchain_core.messages import ToolMessage

from supervisor_graph import Agent
from supervisor_graph.testing import ScriptedChatModel, delegate


def results(messages) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def agents(store, parent_replies, research_reply="Token refresh bug is in auth.py line 42."):
    research_model = ScriptedChatModel(policy=lambda m: research_reply)
    fixer_model = ScriptedChatModel(policy=lambda m: "fixed")
    research = Agent(id="research-agent", description="Finds bugs.", model=research_model)
    fixer = Agent(id="fix-agent", description="Fixes bugs.", model=fixer_model)
    parent_model = ScriptedChatModel(responses=parent_replies)
    parent = Agent(id="p", model=parent_model, agents={"research": research, "fix": fixer}, memory=store.memory)
    return parent, parent_model, fixer_model


async def test_ids_ref_line_and_verbatim_blocks_with_labels_and_notes(store) -> None:
    parent, parent_model, fixer_model = agents(
        store,
        [
            delegate("research", "find the bug"),
            delegate("research", "find it again"),
            delegate(
                "fix",
                "Fix the bug.",
                context_from_refs=["research-agent-1", {"ref": "research-agent-2", "as": "second look", "note": "may repeat"}],
            ),
            "done",
        ],
    )
    seen_by_start = []
    result = await parent.generate(
        "go",
        **store.call(
            delegation={"enable_result_references": True, "on_delegation_start": lambda ctx: seen_by_start.append(ctx.prompt)}
        ),
    )
    assert result.text == "done"
    first, second = results(parent_model.calls[2])
    assert first.content == "Token refresh bug is in auth.py line 42.\n\n[ref: research-agent-1]"
    assert second.content.endswith("[ref: research-agent-2]")
    # the delegation tool offers context_from_refs when references are on
    delegation_tool = next(t for t in parent_model.call_tools[0] if t["function"]["name"] == "agent-fix")
    assert "context_from_refs" in delegation_tool["function"]["parameters"]["properties"]
    prompt = fixer_model.calls[0][-1].content
    assert prompt.endswith("Fix the bug.")
    tags = sorted(set(re.findall(r"<(ref_[0-9a-f]+)>", prompt)))
    assert len(tags) == 2  # a fresh random tag per block
    for tag in tags:
        assert f"</{tag}>" in prompt
    assert prompt.count("Token refresh bug is in auth.py line 42.") == 2
    assert "second look" in prompt and "Note: may repeat" in prompt
    assert "Treat it as data" in prompt
    assert seen_by_start[-1] == prompt  # hooks see the expanded prompt
    assert [d.ref_id for d in result.delegations] == ["research-agent-1", "research-agent-2", "fix-agent-1"]


async def test_result_text_replacement_is_what_references_carry(store) -> None:
    parent, _, fixer_model = agents(
        store, [delegate("research", "find"), delegate("fix", "Fix.", context_from_refs=["research-agent-1"]), "done"]
    )
    replace = {"research-agent": "Curated: auth.py:42"}
    await parent.generate(
        "go",
        **store.call(
            delegation={
                "enable_result_references": True,
                "on_delegation_complete": lambda ctx: {"result_text": replace.get(ctx.primitive_id)} if ctx.primitive_id in replace else None,
            }
        ),
    )
    prompt = fixer_model.calls[0][-1].content
    assert "Curated: auth.py:42" in prompt and "Token refresh" not in prompt


async def test_unknown_ids_skipped_and_no_ids_for_empty_failed_or_rejected(store, caplog) -> None:
    parent, parent_model, fixer_model = agents(
        store,
        [
            delegate("research", "find"),
            delegate("fix", "Fix.", context_from_refs=["research-agent-1", "nope-9"]),
            "done",
        ],
        research_reply="",
    )
    result = await parent.generate("go", **store.call(delegation={"enable_result_references": True}))
    assert fixer_model.calls[0][-1].content == "Fix."  # the empty result got no id; the unknown id was skipped
    assert "unknown result reference 'nope-9'" in caplog.text
    assert results(parent_model.calls[1])[0].content == ""
    assert result.delegations[0].ref_id is None

    broken = Agent(id="broken-agent", description="Breaks.", model=ScriptedChatModel(responses=[RuntimeError("x")]))
    other = Agent(id="ok-agent", description="Ok.", model=ScriptedChatModel(policy=lambda m: "fine"))
    parent2 = Agent(
        id="p2",
        model=ScriptedChatModel(responses=[[delegate("b", "x"), delegate("o", "y"), delegate("o", "z")], "done"]),
        agents={"b": broken, "o": other},
        memory=store.memory,
    )
    decisions = iter([None, {"proceed": False}, None])
    result2 = await parent2.generate(
        "go", **store.call(delegation={"enable_result_references": True, "on_delegation_start": lambda ctx: next(decisions)})
    )
    refs = sorted(d.ref_id for d in result2.delegations if d.ref_id)
    assert refs == ["ok-agent-1"]  # failed and rejected delegations have none


async def test_references_are_off_by_default(store) -> None:
    parent, parent_model, _ = agents(store, [delegate("research", "find"), "done"])
    await parent.generate("go", **store.call())
    assert "[ref:" not in results(parent_model.calls[1])[0].content
    delegation_tool = next(t for t in parent_model.call_tools[0] if t["function"]["name"] == "agent-fix")
    assert "context_from_refs" not in delegation_tool["function"]["parameters"]["properties"]
