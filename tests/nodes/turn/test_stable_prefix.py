"""Each model call of an agent starts with the bytes of its previous one (issue 51, SPEC
§33): nothing that changes from call to call (a working memory's value, a budget notice)
comes before the conversation, so a provider's prompt cache reads the whole prefix."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage, convert_to_openai_messages

from supervisor_graph import Agent, Memory
from supervisor_graph.nodes.state import FEEDBACK_MARK
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


def sent(call: list[BaseMessage]) -> tuple[list[str], str]:
    """A call as a provider gets it (OpenAI's messages, one JSON text each), and what it
    says after the conversation for this call only."""
    tail = call[-1] if call and call[-1].additional_kwargs.get(FEEDBACK_MARK) == "notice" else None
    body = call[:-1] if tail is not None else call
    return [json.dumps(m, sort_keys=True) for m in convert_to_openai_messages(body)], str(tail.content if tail else "")


def assert_each_call_extends_the_previous(model: ScriptedChatModel, who: str) -> None:
    assert len(model.calls) >= 2, who
    for before, after in zip(model.calls, model.calls[1:], strict=False):
        prefix, _ = sent(before)
        now, _ = sent(after)
        assert now[: len(prefix)] == prefix, f"{who}: a call does not start with the previous one"
        assert len(now) > len(prefix)


def search(query: str) -> str:
    """Searches."""
    return f"found {query}"


async def test_an_agents_calls_share_their_prefix_byte_for_byte_across_calls_and_turns() -> None:
    def boss(messages: list[Any]) -> Any:
        conversation = messages[:-1] if messages[-1].additional_kwargs.get(FEEDBACK_MARK) == "notice" else messages
        last = conversation[-1]
        if isinstance(last, HumanMessage):
            return tool_call("update_working_memory", {"memory": f"# Notes\n- asked: {last.content}\n"})
        turn = conversation[max(i for i, m in enumerate(conversation) if isinstance(m, HumanMessage)) :]
        found = sum(isinstance(m, ToolMessage) and m.name == "agent-research" for m in turn)
        return [delegate("research", "Find A"), delegate("research", "Find B"), "Here is what I found."][found]

    def researcher(messages: list[Any]) -> Any:
        return "facts" if isinstance(messages[-1], ToolMessage) else tool_call("search", {"query": "tides"})

    boss_model, research_model = ScriptedChatModel(policy=boss), ScriptedChatModel(policy=researcher)
    research = Agent(id="research", description="Researches.", instructions="You research.", model=research_model, tools=[search])
    agent = Agent(
        id="boss", instructions="You coordinate.", model=boss_model, agents={"research": research},
        memory=Memory(":memory:"), working_memory=True, budget={"tokens": 130},
    )  # fmt: skip
    for question in ("tides?", "currents?"):
        result = await agent.generate(question, memory={"thread": "t", "resource": "u"})
        assert result.text == "Here is what I found."
    # the working memory changed in every turn, and the budget's notice came: both after the conversation
    tails = [sent(call)[1] for call in boss_model.calls]
    assert all("<working_memory>" in tail for tail in tails) and len(set(tails)) > 1
    assert any("Budget notice" in tail for tail in tails)
    assert_each_call_extends_the_previous(boss_model, "the supervisor")
    # a subagent: within a delegation (after its tool's result) ...
    calls = [sent(call)[0] for call in research_model.calls]
    assert len(calls) == 8
    for before, after in zip(calls[::2], calls[1::2], strict=True):
        assert after[: len(before)] == before
    # ... and from one delegation to the next: its system prompt and what it inherits
    for before, after in zip(calls[::2], calls[2::2], strict=False):
        shared = before[:-1]  # all but the delegation's prompt
        assert after[: len(shared)] == shared and after[len(shared)] != before[-1]
