"""Task-completion scorers (SPEC §11)."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import Agent, create_rubric_scorer, create_scorer
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


def improving_model() -> ScriptedChatModel:
    def policy(messages):
        feedback = sum("not complete yet" in str(m.content) for m in messages)
        return ["draft", "draft with http://source", "draft with http://source and a summary"][min(feedback, 2)]

    return ScriptedChatModel(policy=policy)


has_link = create_scorer(id="link", name="Has a link").generate_score(lambda ctx: 1.0 if "http" in ctx.run.output else 0.0)


async def summary_score(ctx):
    await asyncio.sleep(0)
    return (1.0, "summarised") if "summary" in ctx.run.output else {"score": 0.2, "reason": "Add a summary."}


has_summary = create_scorer(id="summary", name="Has a summary").generate_score(summary_score)


async def test_scores_loop_until_all_pass_and_feedback_is_added(store) -> None:
    model = improving_model()
    agent = Agent(id="writer", model=model, memory=store.memory)
    results = []
    call = store.call(is_task_complete={"scorers": [has_link, has_summary], "on_complete": results.append}, max_steps=5)
    result = await agent.generate("write", **call)
    assert result.text == "draft with http://source and a summary" and result.finish_reason == "stop"
    assert [r.complete for r in results] == [False, False, True]
    assert results[0].feedback == ["[Has a link] score 0.00 is below the required 1.00", "[Has a summary] Add a summary."]
    assert [s.score for s in results[-1].scores] == [1.0, 1.0]
    stored = await store.memory.get_messages(call["memory"]["thread"])
    feedback = [m for m in stored if isinstance(m, HumanMessage) and "not complete yet" in m.content]
    assert len(feedback) == 2


async def test_strategy_any_and_threshold(store) -> None:
    model = improving_model()
    agent = Agent(id="writer", model=model, memory=store.memory)
    result = await agent.generate(
        "write", **store.call(is_task_complete={"scorers": [has_link, has_summary], "strategy": "any", "threshold": 0.2})
    )
    assert result.text == "draft" and len(model.calls) == 1  # the summary scorer's 0.2 meets the threshold


async def test_never_passing_scorer_is_stopped_by_max_steps(store) -> None:
    never = create_scorer(id="never", name="Never").generate_score(lambda ctx: 0.0)
    model = ScriptedChatModel(policy=lambda m: "answer")
    result = await Agent(id="w", model=model, memory=store.memory).generate(
        "go", **store.call(is_task_complete={"scorers": [never]}, max_steps=3)
    )
    assert result.finish_reason == "max_steps" and len(model.calls) == 3


async def test_scorers_run_only_after_answers_and_subagents_see_feedback(store) -> None:
    calls = []

    def count(ctx):
        calls.append(ctx.run.output)
        return 1.0 if len(calls) > 1 else 0.0

    scorer = create_scorer(id="count", name="Counter").generate_score(count)
    sub_model = ScriptedChatModel(policy=lambda m: "sub")
    sub = Agent(id="helper", description="Helps.", model=sub_model)

    def policy(messages):
        if not isinstance(messages[-1], ToolMessage) and not any("not complete yet" in str(m.content) for m in messages):
            return delegate("helper", "first") if len(messages) == 1 else "answer one"
        if any("not complete yet" in str(m.content) for m in messages) and not isinstance(messages[-1], ToolMessage):
            return delegate("helper", "again")
        return "answer" if len(calls) == 0 else "answer two"

    agent = Agent(id="boss", model=ScriptedChatModel(policy=policy), agents={"helper": sub}, memory=store.memory)
    result = await agent.generate("go", **store.call(is_task_complete={"scorers": [scorer]}, max_steps=8))
    assert result.finish_reason == "stop"
    assert len(calls) == 2  # once per answer, never after a tool-call turn
    assert any("not complete yet" in str(m.content) for m in sub_model.calls[-1])


async def test_scorer_errors_and_bad_values_are_failed_scores(store) -> None:
    broken = create_scorer(id="broken", name="Broken").generate_score(lambda ctx: 1 / 0)
    wrong = create_scorer(id="wrong", name="Wrong").generate_score(lambda ctx: 7)
    seen = []
    result = await Agent(id="w", model=ScriptedChatModel(policy=lambda m: "a"), memory=store.memory).generate(
        "go", **store.call(is_task_complete={"scorers": [broken, wrong], "on_complete": seen.append}, max_steps=1)
    )
    assert result.finish_reason == "max_steps"
    reasons = [s.reason for s in seen[0].scores]
    assert "ZeroDivisionError" in reasons[0] and "must be a number in [0, 1]" in reasons[1]


def test_bad_options_are_clear() -> None:
    with pytest.raises(ValueError, match="is not a scorer"):
        Agent(id="w", model=ScriptedChatModel(responses=[]), default_options={"is_task_complete": {"scorers": [lambda c: 1.0]}})
    with pytest.raises(ValueError, match="scorers"):
        Agent(id="w", model=ScriptedChatModel(responses=[]), default_options={"is_task_complete": {"scorers": []}})


async def test_rubric_scorer_with_a_scripted_judge(store) -> None:
    judge = ScriptedChatModel(
        policy=lambda m: tool_call("CriterionVerdict", {"met": "http" in m[-1].content.split("Criterion:")[0], "reason": "checked"})
        if "link" in m[-1].content.split("Criterion:")[1]
        else tool_call("CriterionVerdict", {"met": True, "reason": "fine"})
    )
    rubric = create_rubric_scorer(model=judge, criteria=[{"description": "Includes a link"}, {"description": "Is polite"}])
    results = []
    model = improving_model()
    result = await Agent(id="w", model=model, memory=store.memory).generate(
        "write", **store.call(is_task_complete={"scorers": [rubric], "on_complete": results.append})
    )
    assert result.text == "draft with http://source"
    assert results[0].scores[0].score == 0.5
    assert "Includes a link (checked)" in results[0].feedback[0]
    assert len(judge.calls) == 4  # one structured verdict per criterion per answer


async def test_rubric_judge_returning_garbage_is_a_failed_score(store) -> None:
    judge = ScriptedChatModel(policy=lambda m: "I refuse to use tools")
    rubric = create_rubric_scorer(model=judge, criteria=[{"description": "Anything"}])
    results = []
    result = await Agent(id="w", model=ScriptedChatModel(policy=lambda m: "a"), memory=store.memory).generate(
        "go", **store.call(is_task_complete={"scorers": [rubric], "on_complete": results.append}, max_steps=1)
    )
    assert result.finish_reason == "max_steps"
    assert results[0].scores[0].score == 0.0
    assert "the judge returned no valid verdict" in results[0].scores[0].reason
