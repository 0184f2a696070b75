"""What a subagent sees of its parent, and what the parent sees of it (SPEC §25):
`inherit_context` (with its bound, issue 51) and `result_preview_tokens`."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from supervisor_graph import Agent, InheritContext, Memory
from supervisor_graph.nodes.delegation.view import DEFAULT_INHERIT, within
from supervisor_graph.nodes.steps.compaction import SUMMARY_KWARG
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


# -- how much is inherited (issue 51) -------------------------------------------------------


def _team(inherit: Any = None) -> tuple[Agent, ScriptedChatModel]:
    sub_model = ScriptedChatModel(policy=lambda _messages: "notes")
    extra = {} if inherit is None else {"inherit_context": inherit}
    sub = Agent(id="sub-agent", description="Sub.", instructions="Take notes.", model=sub_model, **extra)

    def boss(messages: list[Any]) -> Any:
        return ("answer " + "a" * 300) if isinstance(messages[-1], ToolMessage) else delegate("sub", "the task")

    return Agent(id="boss", model=ScriptedChatModel(policy=boss), agents={"sub": sub}, memory=Memory(":memory:")), sub_model


def _inherited(call: list[Any]) -> list[Any]:
    return call[1:-1]  # between its system prompt and the delegation's prompt


async def test_by_default_a_subagent_inherits_the_newest_turns_up_to_the_cap() -> None:
    boss, sub_model = _team()
    for turn in range(20):
        await boss.generate(f"question {turn} " + "q" * 300, memory={"thread": "t"})
    first, last = _inherited(sub_model.calls[0]), _inherited(sub_model.calls[-1])
    assert [str(m.content)[:10] for m in first] == ["question 0"]
    size = sum(len(str(m.content)) // 4 + 4 for m in last)
    assert DEFAULT_INHERIT.max_tokens is not None and DEFAULT_INHERIT.max_tokens - 200 < size <= DEFAULT_INHERIT.max_tokens
    assert isinstance(last[0], HumanMessage) and str(last[-1].content).startswith("question 19")
    assert not any("question 0 " in str(m.content) for m in last)  # the oldest turns are dropped
    assert not any(isinstance(m, ToolMessage) or getattr(m, "tool_calls", None) for m in last)


async def test_inherit_context_takes_a_number_of_turns_or_no_bound() -> None:
    for inherit, expected in (({"turns": 2}, ["question 2", "question 3"]), (InheritContext(), [f"question {i}" for i in range(4)])):
        boss, sub_model = _team(inherit)
        for turn in range(4):
            await boss.generate(f"question {turn}", memory={"thread": "t"})
        seen = _inherited(sub_model.calls[-1])
        assert [str(m.content) for m in seen if isinstance(m, HumanMessage)] == expected
        assert all(str(m.content).startswith("answer ") for m in seen if not isinstance(m, HumanMessage))


def test_the_bound_keeps_whole_turns_from_a_user_message_and_a_summary_in_front() -> None:
    summary = HumanMessage(content="[Summary] earlier", additional_kwargs={SUMMARY_KWARG: True})
    turns = [m for i in range(5) for m in (HumanMessage(content=f"q{i}" + "x" * 36), AIMessage(content="a" * 40))]
    assert within(turns, InheritContext()) is turns and within(turns, None) == []
    # 14 tokens a message: the cap of 60 holds 4 messages, the window starts at a user message
    assert [m.content[:2] for m in within(turns, InheritContext(max_tokens=60))] == ["q3", "aa", "q4", "aa"]
    assert [m.content[:2] for m in within(turns, InheritContext(max_tokens=50))] == ["q4", "aa"]
    assert within(turns, InheritContext(max_tokens=10)) == []  # not even the newest turn fits
    kept = within([summary, *turns], InheritContext(max_tokens=60, turns=3))
    assert kept[0] is summary and [m.content[:2] for m in kept[1:]] == ["q4", "aa"]  # the summary counts toward the cap
    assert within([summary, *turns], InheritContext(max_tokens=5))[:1] == []  # a summary over the cap goes too
