"""`message_filter` (SPEC §6.4) and the subagent's view of the parent's conversation (§8)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from supervisor_graph import Agent
from supervisor_graph.testing import ScriptedChatModel, delegate


def build(store) -> tuple[Agent, ScriptedChatModel]:
    sub_model = ScriptedChatModel(policy=lambda m: "ok")
    sub = Agent(id="research-agent", description="Research.", instructions="Sub.", model=sub_model)
    parent_model = ScriptedChatModel(responses=["first answer", delegate("r", "the prompt"), "done"])
    parent = Agent(id="p", model=parent_model, agents={"r": sub}, memory=store.memory)
    return parent, sub_model


async def test_default_passes_the_whole_conversation_without_tool_traffic(store) -> None:
    parent, sub_model = build(store)
    call = store.call()
    await parent.generate("confidential: 42", **call)
    await parent.generate("second question", **call)
    [seen] = sub_model.calls
    assert isinstance(seen[0], SystemMessage)
    assert [m.content for m in seen[1:]] == ["confidential: 42", "first answer", "second question", "the prompt"]
    assert not any(isinstance(m, ToolMessage) or (isinstance(m, AIMessage) and m.tool_calls) for m in seen)


async def test_filter_gets_messages_id_and_prompt_and_decides(store) -> None:
    parent, sub_model = build(store)
    received = []

    def message_filter(*, messages, primitive_id, prompt):
        received.append((primitive_id, prompt, [type(m).__name__ for m in messages]))
        return [m for m in messages if "confidential" not in str(m.content)][-2:]

    call = store.call(delegation={"message_filter": message_filter})
    await parent.generate("confidential: 42", **call)
    await parent.generate("second question", **call)
    assert received == [("research-agent", "the prompt", ["HumanMessage", "AIMessage", "HumanMessage", "AIMessage"])]
    [seen] = sub_model.calls
    # the last two kept messages are the question and the tool-call turn (dropped as tool traffic)
    assert [m.content for m in seen[1:]] == ["second question", "the prompt"]


async def test_async_filter(store) -> None:
    parent, sub_model = build(store)

    async def only_humans(*, messages, primitive_id, prompt):
        return [m for m in messages if isinstance(m, HumanMessage)]

    call = store.call(delegation={"message_filter": only_humans})
    await parent.generate("a", **call)
    await parent.generate("b", **call)
    assert [m.content for m in sub_model.calls[0][1:]] == ["a", "b", "the prompt"]
