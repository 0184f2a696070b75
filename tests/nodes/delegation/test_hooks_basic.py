"""Delegation hook nodes and the iteration node, as routed by the supervisor."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import Agent
from supervisor_graph.testing import ScriptedChatModel, delegate


def sub(text: str = "sub result") -> tuple[Agent, ScriptedChatModel]:
    model = ScriptedChatModel(policy=lambda m: f"{text} for {m[-1].content}")
    return Agent(id="research-agent", description="Research.", model=model), model


def tool_results(messages):
    return [m for m in messages if isinstance(m, ToolMessage)]


async def test_start_hook_rejects_with_reason_and_default() -> None:
    research, sub_model = sub()
    parent_model = ScriptedChatModel(responses=[delegate("r", "a"), delegate("r", "b"), "end"])
    parent = Agent(id="p", model=parent_model, agents={"r": research})
    reasons = iter([{"proceed": False, "rejection_reason": "Too late."}, {"proceed": False}])
    result = await parent.generate("go", delegation={"on_delegation_start": lambda ctx: next(reasons)})
    assert result.text == "end"
    texts = [m.content for m in tool_results(result.messages)]
    assert texts[0] == "[Delegation Rejected] Too late."
    assert texts[1].startswith("[Delegation Rejected] ") and len(texts[1]) > len("[Delegation Rejected] ")
    assert sub_model.calls == []


async def test_start_hook_modifies_prompt_and_steps_async() -> None:
    research, sub_model = sub()
    seen = []

    async def on_start(ctx):
        seen.append((ctx.primitive_id, ctx.prompt, ctx.iteration))
        return {"modified_prompt": ctx.prompt + " (2024-2025)"}

    parent = Agent(id="p", model=ScriptedChatModel(responses=[delegate("r", "trends"), "end"]), agents={"r": research})
    result = await parent.generate("go", delegation={"on_delegation_start": on_start})
    assert seen == [("research-agent", "trends", 1)]
    assert sub_model.calls[0][-1].content == "trends (2024-2025)"
    assert tool_results(result.messages)[0].content == "sub result for trends (2024-2025)"


async def test_complete_hook_result_text_feedback_and_bail() -> None:
    research, _ = sub()
    parent_model = ScriptedChatModel(responses=[delegate("r", "a"), delegate("r", "b"), "never"])
    calls = []

    def on_complete(ctx):
        calls.append((ctx.primitive_id, ctx.success, ctx.result.text))
        if len(calls) == 1:
            return {"result_text": "", "feedback": "Prefer primary sources."}
        ctx.bail()
        return None

    parent = Agent(id="p", model=parent_model, agents={"r": research})
    result = await parent.generate("go", delegation={"on_delegation_complete": on_complete})
    assert result.finish_reason == "bail"
    assert calls == [("research-agent", True, "sub result for a"), ("research-agent", True, "sub result for b")]
    # the empty replacement is what the model saw, and the feedback reached the next turn
    second_input = parent_model.calls[1]
    assert tool_results(second_input)[0].content == ""
    assert any(isinstance(m, HumanMessage) and m.content == "Prefer primary sources." for m in second_input)
    assert len(parent_model.calls) == 2


async def test_iteration_hook_feedback_and_stop() -> None:
    research, _ = sub()
    parent_model = ScriptedChatModel(
        policy=lambda m: "answer" if any(x.content == "Wrap up now." for x in m) else delegate("r", "again")
    )
    contexts = []

    def on_iteration(ctx):
        contexts.append((ctx.iteration, ctx.finish_reason, len(ctx.tool_calls)))
        if ctx.iteration == 2:
            return {"continue": False, "feedback": "Wrap up now."}
        return None

    parent = Agent(id="p", model=parent_model, agents={"r": research})
    result = await parent.generate("go", on_iteration_complete=on_iteration, max_steps=10)
    # iteration 2 called a tool and said stop with feedback: the tools ran, then one last turn
    assert contexts[:2] == [(1, "tool-calls", 1), (2, "tool-calls", 1)]
    assert len(parent_model.calls) == 3
    assert any(m.content == "Wrap up now." for m in parent_model.calls[2])
    assert result.text == "answer" and result.finish_reason == "stop"
    assert len(tool_results(result.messages)) == 2

