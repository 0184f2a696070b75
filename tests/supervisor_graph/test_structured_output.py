"""Structured output (SPEC §28): typed answers from the supervisor and its subagents,
through the final answer tool and native `response_format`, with scripted models and
the fake OpenAI and Anthropic servers over HTTP."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from pydantic import BaseModel
from typing_extensions import TypedDict

from supervisor_graph import Agent, Memory
from supervisor_graph.nodes.steps.structured_output import FINAL_ANSWER_TOOL, StructuredOutputError
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call
from supervisor_graph.testing.anthropic_server import FakeAnthropic, is_tool_result
from tests.openai_server import FakeOpenAI


class Report(BaseModel):
    title: str
    points: list[str]


class Facts(TypedDict):
    facts: list[str]


COUNT = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"], "title": "Count"}


def research_agent(*answers: Any, **extra: Any) -> Agent:
    return Agent(
        id="research-agent", description="Finds facts.", model=ScriptedChatModel(responses=list(answers)), **extra
    )


async def test_a_supervisor_with_a_schema_delegates_twice_then_answers_the_object() -> None:
    model = ScriptedChatModel(
        responses=[
            delegate("research_agent", "facts about a"),
            delegate("research_agent", "facts about b"),
            tool_call(FINAL_ANSWER_TOOL, {"title": "AI", "points": ["a", "b"]}),
        ]
    )
    boss = Agent(id="boss", model=model, agents={"research_agent": research_agent("- a", "- b")}, output_schema=Report)
    result = await boss.generate("write a report")

    assert result.finish_reason == "stop"
    assert result.object == Report(title="AI", points=["a", "b"]) and isinstance(result.object, Report)
    assert json.loads(result.text) == {"title": "AI", "points": ["a", "b"]}
    assert [d.text for d in result.delegations] == ["- a", "- b"]  # it delegated first: no hijack
    assert model.bound_tool_names == ["agent-research_agent", FINAL_ANSWER_TOOL]
    assert model.response_formats == [None, None, None]
    # the transcript stays well formed: the final answer call is answered, then the answer
    assert isinstance(result.messages[-2], ToolMessage) and result.messages[-2].tool_call_id
    assert isinstance(result.messages[-1], AIMessage) and json.loads(str(result.messages[-1].content))["title"] == "AI"


async def test_native_structured_output_sends_a_strict_response_format() -> None:
    model = ScriptedChatModel(
        responses=[delegate("research_agent", "facts"), '{"title": "AI", "points": ["a"]}'], native_structured_output=True
    )
    boss = Agent(id="boss", model=model, agents={"research_agent": research_agent("- a")}, output_schema=Report)
    result = await boss.generate("go")
    assert result.object == Report(title="AI", points=["a"])
    assert FINAL_ANSWER_TOOL not in model.bound_tool_names
    sent = model.response_formats[-1]
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
    assert sent["json_schema"]["name"] == "Report" and sent["json_schema"]["schema"]["additionalProperties"] is False


async def test_an_invalid_answer_goes_back_once_with_the_error() -> None:
    model = ScriptedChatModel(
        responses=[tool_call(FINAL_ANSWER_TOOL, {"title": "AI"}), tool_call(FINAL_ANSWER_TOOL, {"title": "AI", "points": []})]
    )
    result = await Agent(id="boss", model=model, output_schema=Report).generate("go")
    assert result.object == Report(title="AI", points=[])
    sent_back = [m for m in model.calls[1] if isinstance(m, ToolMessage)]
    assert sent_back and "points" in str(sent_back[-1].content) and "Field required" in str(sent_back[-1].content)


async def test_an_answer_that_never_validates_ends_the_run_with_the_error() -> None:
    model = ScriptedChatModel(responses=["not json", '{"count": "many"}'])
    result = await Agent(id="boss", model=model, output_schema=COUNT).generate("go")
    assert result.finish_reason == "error"
    assert result.object is None
    assert isinstance(result.error, StructuredOutputError)
    assert result.error.schema == "Count"
    assert result.error.raw_text == '{"count": "many"}'
    assert result.error.errors[0]["loc"] == "count" and "integer" in result.error.errors[0]["msg"]
    assert "Count" in str(result.error) and "count" in str(result.error)

    # output_retries=0: the first invalid answer ends it
    model = ScriptedChatModel(responses=["nope"])
    result = await Agent(id="boss", model=model, output_schema=COUNT).generate("go", output_retries=0)
    assert result.finish_reason == "error" and len(model.calls) == 1


async def test_the_call_schema_wins_and_typed_dicts_and_json_schemas_give_dicts() -> None:
    model = ScriptedChatModel(responses=[tool_call(FINAL_ANSWER_TOOL, {"facts": ["x"]}), '{"count": 3}'])
    boss = Agent(id="boss", model=model, output_schema=Report)
    first = await boss.generate("go", output_schema=Facts)
    assert first.object == {"facts": ["x"]}
    second = await boss.generate("go", output_schema=COUNT)
    assert second.object == {"count": 3}


def test_a_schema_that_is_none_of_the_three_is_refused_at_declaration() -> None:
    with pytest.raises(ValueError, match="pydantic model class, a TypedDict or a JSON-schema dict, not str"):
        Agent(id="boss", model=ScriptedChatModel(), output_schema="Report")
    with pytest.raises(ValueError, match="is not a JSON schema"):
        Agent(id="boss", model=ScriptedChatModel(), output_schema={"title": "x"})
    with pytest.raises(ValueError, match="invalid run options"):
        Agent(id="boss", model=ScriptedChatModel(responses=["x"])).generate_sync("go", output_schema=42)


async def test_a_subagent_with_a_schema_answers_its_delegation_with_the_object() -> None:
    seen: list[Any] = []

    def on_complete(ctx: Any) -> None:
        seen.append(ctx.result.object)

    research = research_agent(tool_call(FINAL_ANSWER_TOOL, {"facts": ["f1", "f2"]}), output_schema=Facts)
    model = ScriptedChatModel(responses=[delegate("research_agent", "facts"), "done"])
    boss = Agent(
        id="boss",
        model=model,
        agents={"research_agent": research},
        default_options={"delegation": {"on_delegation_complete": on_complete}},
    )
    result = await boss.generate("go")
    assert seen == [{"facts": ["f1", "f2"]}]
    assert result.delegations[0].object == {"facts": ["f1", "f2"]}
    tool_result = next(m for m in model.calls[1] if isinstance(m, ToolMessage))
    assert json.loads(str(tool_result.content)) == {"facts": ["f1", "f2"]}  # the supervisor's model sees JSON


async def test_the_start_hook_may_give_a_delegation_its_schema() -> None:
    research = research_agent(tool_call(FINAL_ANSWER_TOOL, {"title": "R", "points": ["p"]}))
    model = ScriptedChatModel(responses=[delegate("research_agent", "facts"), "done"])
    boss = Agent(
        id="boss",
        model=model,
        agents={"research_agent": research},
        default_options={"delegation": {"on_delegation_start": lambda ctx: {"modified_output_schema": Report}}},
    )
    result = await boss.generate("go")
    assert result.delegations[0].object == Report(title="R", points=["p"])
    assert FINAL_ANSWER_TOOL in research.model.bound_tool_names  # type: ignore[union-attr]


async def test_a_subagent_that_never_validates_is_a_failed_delegation_and_the_supervisor_goes_on() -> None:
    research = research_agent("prose", "more prose", output_schema=Facts)
    model = ScriptedChatModel(responses=[delegate("research_agent", "facts"), "I will answer myself"])
    result = await Agent(id="boss", model=model, agents={"research_agent": research}).generate("go")
    assert result.finish_reason == "stop" and result.text == "I will answer myself"
    failed = result.delegations[0]
    assert not failed.success and failed.error == "StructuredOutputError"
    tool_result = next(m for m in model.calls[1] if isinstance(m, ToolMessage))
    assert tool_result.status == "error"


async def test_object_stream_yields_partial_objects_then_the_result_object() -> None:
    model = ScriptedChatModel(responses=['{"title": "Agents at work", "points": ["one", "two"]}'], native_structured_output=True)
    stream = await Agent(id="boss", model=model, output_schema=Report).stream("go")
    partials = [o async for o in stream.object_stream]
    result = await stream.result()
    assert len(partials) > 3
    assert partials[0] in ({}, {"title": ""}) or "title" in partials[0]
    assert {"title": "Agents"}.items() <= partials[1].items() or len(partials[1]) >= 1
    assert partials[-1] is result.object and partials[-1] == Report(title="Agents at work", points=["one", "two"])
    finish = [c async for c in stream.full_stream if c.type == "finish"][0]
    assert finish.payload["object"] == {"title": "Agents at work", "points": ["one", "two"]}


async def test_a_stream_that_never_validates_sends_an_error_chunk() -> None:
    stream = await Agent(id="boss", model=ScriptedChatModel(responses=["x", "y"]), output_schema=COUNT).stream("go")
    chunks = [c async for c in stream.full_stream]
    assert [c.type for c in chunks][-2:] == ["error", "finish"]
    assert chunks[-1].payload["error"]["schema"] == "Count"
    assert (await stream.result()).finish_reason == "error"


async def test_a_later_run_without_a_schema_has_no_stale_object() -> None:
    memory = Memory()
    model = ScriptedChatModel(responses=['{"count": 1}', "plain"])
    boss = Agent(id="boss", model=model, memory=memory)
    first = await boss.generate("go", output_schema=COUNT, memory={"thread": "t"})
    second = await boss.generate("again", memory={"thread": "t"})
    assert first.object == {"count": 1} and second.object is None and second.text == "plain"
    state = await boss.graph_with((await memory.opened()).saver).aget_state({"configurable": {"thread_id": "t"}})
    assert state.values.get("structured_response") is None


async def test_the_compiled_graph_returns_structured_response_and_takes_a_context_schema() -> None:
    model = ScriptedChatModel(responses=[delegate("research_agent", "facts"), tool_call(FINAL_ANSWER_TOOL, {"count": 2})])
    graph = Agent(id="boss", model=model, agents={"research_agent": research_agent("- a")}).compile()
    out = await graph.ainvoke({"messages": [HumanMessage("how many?")]}, context={"output_schema": COUNT})
    assert out["structured_response"] == {"count": 2}

    sync_model = ScriptedChatModel(responses=[tool_call(FINAL_ANSWER_TOOL, {"title": "t", "points": []})])
    sync_graph = Agent(id="boss", model=sync_model, output_schema=Report).compile()
    assert sync_graph.invoke({"messages": [HumanMessage("hi")]})["structured_response"] == {"title": "t", "points": []}


# -- real providers' wire formats, over HTTP ---------------------------------------------


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    def reply(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]
        names = {t["function"]["name"] for t in body.get("tools") or []}
        if "agent-research" in names and last["role"] == "user":
            return {"tool": "agent-research", "args": {"prompt": "find facts"}}
        if body.get("response_format"):
            return json.dumps({"title": "from openai", "points": ["p"]})
        if FINAL_ANSWER_TOOL in names:
            return {"tool": FINAL_ANSWER_TOOL, "args": {"title": "tool", "points": []}}
        return "the facts"

    with FakeOpenAI(reply) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


async def test_an_openai_compatible_server_gets_response_format_json_schema(openai_server: FakeOpenAI) -> None:
    research = Agent(id="research-agent", description="Finds facts.", model="openai/local", retry_policy=None)
    boss = Agent(id="boss", model="openai/local", agents={"research": research}, output_schema=Report, retry_policy=None)
    result = await boss.generate("report")
    assert result.object == Report(title="from openai", points=["p"])
    last = openai_server.requests[-1]
    assert last["response_format"]["type"] == "json_schema"
    assert last["response_format"]["json_schema"]["strict"] is True
    assert [t["function"]["name"] for t in last["tools"]] == ["agent-research"]  # it could still delegate

    stream = await boss.stream("again")
    partials = [o async for o in stream.object_stream]
    assert partials[-1] == Report(title="from openai", points=["p"]) and len(partials) > 1


async def test_a_schema_strict_mode_cannot_take_falls_back_to_the_tool_with_one_warning(
    openai_server: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    class Loose(BaseModel):
        title: str
        points: list[str] = []

    boss = Agent(id="boss", model="openai/local", output_schema=Loose, retry_policy=None)
    with caplog.at_level(logging.WARNING, logger="supervisor_graph"):
        result = await boss.generate("go")
        await boss.generate("go")
    assert result.object == Loose(title="tool", points=[])
    assert "response_format" not in openai_server.requests[-1]
    assert sum("strict mode" in r.getMessage() for r in caplog.records) == 1


async def test_claude_answers_through_the_final_answer_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    def reply(body: dict[str, Any]) -> Any:
        names = {t["name"] for t in body.get("tools") or []}
        last = body["messages"][-1]
        if "agent-research" in names and not is_tool_result(last):
            return {"tool": "agent-research", "args": {"prompt": "find facts"}}
        if FINAL_ANSWER_TOOL in names:
            return {"tool": FINAL_ANSWER_TOOL, "args": {"title": "from claude", "points": ["c"]}}
        return "the facts"

    with FakeAnthropic(reply) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        model = "anthropic/claude-sonnet-4-5"
        research = Agent(id="research-agent", description="Finds facts.", model=model, retry_policy=None)
        boss = Agent(id="boss", model=model, agents={"research": research}, output_schema=Report, retry_policy=None)
        result = await boss.generate("report")
    assert result.object == Report(title="from claude", points=["c"])
    assert result.delegations[0].text.strip() == "the facts"
    assert {t["name"] for t in server.requests[-1]["tools"]} == {"agent-research", FINAL_ANSWER_TOOL}


async def test_scorers_get_the_answer_object() -> None:
    from supervisor_graph import create_scorer

    seen: list[Any] = []

    def enough_points(ctx: Any) -> float:
        seen.append(ctx.run.output_object)
        return 1.0 if len(ctx.run.output_object.points) >= 2 else 0.0

    scorer = create_scorer(id="points", name="Points").generate_score(enough_points)
    model = ScriptedChatModel(
        responses=[
            tool_call(FINAL_ANSWER_TOOL, {"title": "t", "points": ["a"]}),
            tool_call(FINAL_ANSWER_TOOL, {"title": "t", "points": ["a", "b"]}),
        ]
    )
    result = await Agent(id="boss", model=model, output_schema=Report).generate(
        "go", is_task_complete={"scorers": [scorer]}
    )
    assert seen == [Report(title="t", points=["a"]), Report(title="t", points=["a", "b"])]
    assert result.object == Report(title="t", points=["a", "b"])


async def test_the_supervisor_is_told_which_fields_a_subagent_got_wrong() -> None:
    research = research_agent("prose", "more prose", output_schema=Facts)
    model = ScriptedChatModel(responses=[delegate("research_agent", "facts"), "ok"])
    await Agent(id="boss", model=model, agents={"research_agent": research}).generate("go")
    tool_result = next(m for m in model.calls[1] if isinstance(m, ToolMessage))
    assert "[Delegation Failed]" in str(tool_result.content) and "did not match the Facts schema" in str(tool_result.content)
    assert "prose" not in str(tool_result.content)


async def test_a_background_subagent_carries_its_object_in_its_outcome() -> None:
    memory = Memory()
    research = research_agent(tool_call(FINAL_ANSWER_TOOL, {"facts": ["late fact"]}), output_schema=Facts)

    def boss_policy(messages: list[Any]) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage) and str(last.content).startswith("[Background task"):
            return "reported"
        return "started" if isinstance(last, ToolMessage) else delegate("research_agent", "dig")

    boss = Agent(
        id="boss",
        model=ScriptedChatModel(policy=boss_policy),
        agents={"research_agent": research},
        memory=memory,
        background_tasks={"tools": {"research_agent": {"enabled": True}}},
    )
    await boss.generate_until_idle("go", memory={"thread": "bg-so"})
    [task] = await memory.list_background_tasks("bg-so")
    assert task.status == "completed" and task.object == {"facts": ["late fact"]}
    assert json.loads(task.result_text or "") == {"facts": ["late fact"]}
    [notice] = [m for m in await memory.get_messages("bg-so") if m.additional_kwargs.get("background_task")]
    assert notice.additional_kwargs["background_task"]["object"] == {"facts": ["late fact"]}


async def test_the_resume_calls_take_the_schema_too() -> None:
    from supervisor_graph import create_tool

    paid: list[int] = []

    class Amount(BaseModel):
        amount: int

    pay = create_tool(
        id="pay", description="Pay.", input_schema=Amount, execute=lambda a: paid.append(a.amount) or "paid", require_approval=True
    )
    model = ScriptedChatModel(responses=[tool_call("pay", {"amount": 5}), '{"count": 5}'])
    agent = Agent(id="boss", model=model, tools=[pay], memory=Memory())
    paused = await agent.generate("pay 5", output_schema=COUNT, memory={"thread": "so-resume"})
    assert paused.finish_reason == "suspended" and paused.object is None
    done = await agent.approve_tool_call(
        tool_call_id=paused.suspended[0].tool_call_id, memory={"thread": "so-resume"}, output_schema=COUNT
    )
    assert paid == [5] and done.object == {"count": 5}


async def test_a_result_reference_keeps_the_subagents_object() -> None:
    research = Agent(
        id="research-agent",
        description="Finds facts.",
        model=ScriptedChatModel(
            policy=lambda m: tool_call(FINAL_ANSWER_TOOL, {"facts": ["f1"]})
            if "first" in str(m[-1].content)
            else '{"facts": ["seen: ' + str(m[-1].content).replace('"', "'")[:60] + '"]}'
        ),
        output_schema=Facts,
    )
    model = ScriptedChatModel(
        responses=[
            delegate("research_agent", "first"),
            tool_call("agent-research_agent", {"prompt": "second", "context_from_refs": ["research-agent-1"]}),
            "done",
        ]
    )
    boss = Agent(
        id="boss",
        model=model,
        agents={"research_agent": research},
        default_options={"delegation": {"enable_result_references": True}},
    )
    result = await boss.generate("go")
    first, second = result.delegations
    assert first.ref_id == "research-agent-1" and first.object == {"facts": ["f1"]}
    assert '{"facts": ["f1"]}' in second.prompt  # the referenced object, verbatim before the prompt
