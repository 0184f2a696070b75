"""Iteration monitoring (SPEC §7)."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import Agent, IterationResult
from supervisor_graph.testing import ScriptedChatModel, delegate


def worker() -> Agent:
    return Agent(id="w-agent", description="Works.", model=ScriptedChatModel(policy=lambda m: "worked"))


async def test_context_fields_each_iteration(store) -> None:
    parent = Agent(id="p", model=ScriptedChatModel(responses=[delegate("w", "a"), "answer text"]), agents={"w": worker()}, memory=store.memory)
    seen = []

    async def monitor(ctx):
        seen.append(ctx)

    result = await parent.generate("go", **store.call(on_iteration_complete=monitor, max_steps=7))
    assert result.text == "answer text" and result.finish_reason == "stop"
    first, second = seen
    assert (first.iteration, first.max_iterations, first.finish_reason, first.text) == (1, 7, "tool-calls", "")
    assert [c["name"] for c in first.tool_calls] == ["agent-w"]
    assert (second.iteration, second.finish_reason, second.text, second.tool_calls) == (2, "stop", "answer text", [])
    assert [type(m).__name__ for m in second.messages] == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]


async def test_continue_false_stops_after_the_tools_of_that_turn(store) -> None:
    model = ScriptedChatModel(policy=lambda m: delegate("w", "again"))
    parent = Agent(id="p", model=model, agents={"w": worker()}, memory=store.memory)
    result = await parent.generate("go", **store.call(on_iteration_complete=lambda ctx: IterationResult(continue_=False)))
    assert len(model.calls) == 1
    assert result.finish_reason == "stop"
    assert [type(m).__name__ for m in result.messages] == ["AIMessage", "ToolMessage"]  # the call got its result


async def test_feedback_is_injected_and_the_loop_goes_on(store) -> None:
    model = ScriptedChatModel(
        policy=lambda m: "better answer" if any(x.content == "Add a source." for x in m) else "first answer"
    )
    parent = Agent(id="p", model=model, memory=store.memory)
    calls = []

    def monitor(ctx):
        calls.append(ctx.text)
        return {"feedback": "Add a source."} if ctx.iteration == 1 else None

    call = store.call(on_iteration_complete=monitor)
    result = await parent.generate("go", **call)
    assert calls == ["first answer", "better answer"]
    assert result.text == "better answer"
    stored = await store.memory.get_messages(call["memory"]["thread"])
    assert [m.content for m in stored] == ["go", "first answer", "Add a source.", "better answer"]
    assert isinstance(stored[2], HumanMessage)


async def test_feedback_loop_is_bounded_by_max_steps(store) -> None:
    model = ScriptedChatModel(policy=lambda m: "not good enough")
    parent = Agent(id="p", model=model, memory=store.memory)
    result = await parent.generate("go", **store.call(on_iteration_complete=lambda ctx: {"feedback": "Again."}, max_steps=3))
    assert len(model.calls) == 3 and result.finish_reason == "max_steps"


async def test_stop_with_feedback_gives_one_last_turn_only_after_tool_calls(store) -> None:
    model = ScriptedChatModel(
        policy=lambda m: "final" if any(x.content == "Wrap up." for x in m) else delegate("w", "more")
    )
    parent = Agent(id="p", model=model, agents={"w": worker()}, memory=store.memory)
    result = await parent.generate(
        "go", **store.call(on_iteration_complete=lambda ctx: {"continue": False, "feedback": "Wrap up."}, max_steps=9)
    )
    assert len(model.calls) == 2 and result.text == "final"
    assert sum(isinstance(m, ToolMessage) for m in result.messages) == 1

    # after an answer, stop + feedback ends at once (the feedback is saved for later)
    answer_model = ScriptedChatModel(policy=lambda m: "answer")
    parent2 = Agent(id="p2", model=answer_model, memory=store.memory)
    call = store.call(on_iteration_complete=lambda ctx: {"continue": False, "feedback": "Noted."})
    result2 = await parent2.generate("go", **call)
    assert len(answer_model.calls) == 1 and result2.text == "answer"
    assert [m.content for m in await store.memory.get_messages(call["memory"]["thread"])][-1] == "Noted."


async def test_monitor_errors_do_not_end_the_run(store, caplog) -> None:
    parent = Agent(id="p", model=ScriptedChatModel(policy=lambda m: "ok"), memory=store.memory)

    def broken(ctx):
        raise RuntimeError("monitor down")

    result = await parent.generate("go", **store.call(on_iteration_complete=broken))
    assert result.text == "ok" and "monitor down" in caplog.text


async def test_monitors_the_loop_it_is_given_to(store) -> None:
    # A call's monitor watches that agent's loop; a subagent is monitored through its own
    # default_options (delegation options, unlike this one, apply at every depth).
    sub_seen = []
    sub = Agent(
        id="w-agent",
        description="Works.",
        model=ScriptedChatModel(policy=lambda m: "sub answer"),
        default_options={"on_iteration_complete": lambda ctx: sub_seen.append(ctx.text)},
    )
    parent = Agent(id="p", model=ScriptedChatModel(responses=[delegate("w", "a"), "done"]), agents={"w": sub}, memory=store.memory)
    seen = []
    await parent.generate("go", **store.call(on_iteration_complete=lambda ctx: seen.append(ctx.text)))
    assert seen == ["", "done"] and sub_seen == ["sub answer"]


async def test_the_feedback_turn_is_a_hard_stop(store) -> None:
    # A model that keeps delegating: the feedback turn's calls never run (SPEC §7).
    model = ScriptedChatModel(policy=lambda m: delegate("w", "more"))
    sub_model = ScriptedChatModel(policy=lambda m: "worked")
    sub = Agent(id="w-agent", description="Works.", model=sub_model)
    parent = Agent(id="p", model=model, agents={"w": sub}, memory=store.memory)
    call = store.call(on_iteration_complete=lambda ctx: {"continue": False, "feedback": "Wrap up."}, max_steps=10)
    result = await parent.generate("go", **call)
    assert len(model.calls) == 2 and len(sub_model.calls) == 1
    assert result.finish_reason == "stop" and result.text == ""
    stored = await store.memory.get_messages(call["memory"]["thread"])
    last_ai = [m for m in stored if m.type == "ai"][-1]
    results = [m for m in stored if isinstance(m, ToolMessage)]
    # every call has exactly one result: the first ran, the last turn's was stopped
    assert {r.tool_call_id for r in results} == {c["id"] for m in stored if m.type == "ai" for c in m.tool_calls}
    assert results[-1].tool_call_id == last_ai.tool_calls[0]["id"] and results[-1].content.startswith("[Stopped]")
    # the thread continues with a valid transcript
    model2 = ScriptedChatModel(responses=["fine"])
    again = await parent.model_copy(update={"model": model2}).generate("next", memory=call["memory"])
    assert again.text == "fine"
