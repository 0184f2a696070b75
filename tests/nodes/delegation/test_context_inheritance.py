"""What a subagent sees of its parent, and what the parent sees of it (SPEC §25):
`inherit_context` and `result_preview_tokens`."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

from supervisor_graph import Agent
from supervisor_graph.testing import ScriptedChatModel, delegate

LONG = " ".join(f"fact{i}" for i in range(200))  # about 300 tokens at 4 characters a token


def _humans(model: ScriptedChatModel, call: int = 0) -> list[str]:
    return [str(m.content) for m in model.calls[call] if isinstance(m, HumanMessage)]


async def test_a_subagent_inherits_the_parents_conversation_by_default() -> None:
    sub_model = ScriptedChatModel(responses=["ok"])
    sub = Agent(id="sub-agent", description="Sub.", model=sub_model)
    parent = Agent(id="p", model=ScriptedChatModel(responses=[delegate("sub", "the task"), "end"]), agents={"sub": sub})
    await parent.generate("my secret plan")
    seen = " ".join(str(m.content) for m in sub_model.calls[0])
    assert "my secret plan" in seen and _humans(sub_model)[-1] == "the task"


async def test_inherit_context_false_gives_only_the_prompt_and_its_own_thread() -> None:
    sub_model = ScriptedChatModel(responses=["ok"])
    seen_by_filter: list[int] = []

    def message_filter(*, messages: list[Any], primitive_id: str, prompt: str) -> list[Any]:
        seen_by_filter.append(len(messages))
        return messages

    sub = Agent(id="sub-agent", description="Sub.", model=sub_model, inherit_context=False)
    parent = Agent(id="p", model=ScriptedChatModel(responses=[delegate("sub", "the task"), "end"]), agents={"sub": sub})
    result = await parent.generate("my secret plan", delegation={"message_filter": message_filter})
    assert result.text == "end"
    assert not any("my secret plan" in str(m.content) for m in sub_model.calls[0])
    assert [type(m) for m in sub_model.calls[0] if not isinstance(m, SystemMessage)] == [HumanMessage]
    assert _humans(sub_model) == ["the task"]
    assert seen_by_filter == [0]  # the filter still runs, on nothing inherited


async def test_a_long_answer_reaches_the_supervisor_as_a_preview_with_its_reference() -> None:
    sub = Agent(id="sub-agent", description="Sub.", model=ScriptedChatModel(responses=[LONG]), result_preview_tokens=20)
    writer_model = ScriptedChatModel(responses=["written"])
    writer = Agent(id="writer-agent", description="Writes.", model=writer_model)
    boss_model = ScriptedChatModel(
        responses=[delegate("sub", "find"), delegate("write", "write it", context_from_refs=["sub-agent-1"]), "end"]
    )
    boss = Agent(id="boss", model=boss_model, agents={"sub": sub, "write": writer})
    result = await boss.generate("go")
    [seen] = [m for m in boss_model.calls[1] if isinstance(m, ToolMessage)]
    content = str(seen.content)
    assert content.startswith("fact0 fact1") and len(content) < 400 and LONG not in content
    assert 'context_from_refs=["sub-agent-1"]' in content and content.endswith("[ref: sub-agent-1]")
    # the full text: in the delegation's result, and verbatim in the next delegation's prompt
    assert result.delegations[0].text == LONG
    assert LONG in _humans(writer_model)[-1]
    # the supervisor's delegation tools offer context_from_refs
    assert all("context_from_refs" in str(schema) for schema in boss_model.call_tools[0])


async def test_a_short_answer_is_passed_whole_without_a_reference() -> None:
    sub = Agent(id="sub-agent", description="Sub.", model=ScriptedChatModel(responses=["short"]), result_preview_tokens=20)
    boss_model = ScriptedChatModel(responses=[delegate("sub", "find"), "end"])
    await Agent(id="boss", model=boss_model, agents={"sub": sub}).generate("go")
    [seen] = [m for m in boss_model.calls[1] if isinstance(m, ToolMessage)]
    assert seen.content == "short"
