"""LangChain v1 middleware as steps of the turn (SPEC §33): the real classes of the
installed `langchain`, in a supervisor and in a subagent that inherits them."""

from __future__ import annotations

from typing import Any, NotRequired

import pytest
from langchain.agents.middleware import (
    AgentMiddleware,
    HumanInTheLoopMiddleware,
    ModelCallLimitMiddleware,
    ModelFallbackMiddleware,
    ModelRetryMiddleware,
    TodoListMiddleware,
    ToolCallLimitMiddleware,
    ToolRetryMiddleware,
    dynamic_prompt,
    wrap_model_call,
    wrap_tool_call,
)
from langchain_core.decisions import BaseDecisionModel, ChoiceAnswer, ClassifierResponse
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import ValidationError
from typing_extensions import TypedDict

from supervisor_graph import Agent
from supervisor_graph.compiler.build import Inherited, build_spec
from supervisor_graph.nodes.steps.middleware import MiddlewareStep
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


class Down(RuntimeError):
    """A provider that is down."""


def _worker(**kwargs: Any) -> Agent:
    return Agent(id="w", description="Works.", retry_policy=None, **kwargs)


async def test_model_retry_answers_after_a_failed_call_in_the_supervisor() -> None:
    model = ScriptedChatModel(responses=[Down("503"), "fine"])
    agent = Agent(id="a", model=model, retry_policy=None, middleware=[ModelRetryMiddleware(max_retries=2, initial_delay=0)])
    assert (await agent.generate("hi")).text == "fine"


async def test_model_fallback_answers_in_a_subagent_that_inherits_it() -> None:
    fallback = ScriptedChatModel(responses=["from the fallback"])
    worker = _worker(model=ScriptedChatModel(responses=[Down("503")]))
    top = Agent(
        id="top",
        model=ScriptedChatModel(responses=[delegate("w", "go"), "done"]),
        agents={"w": worker},
        retry_policy=None,
        middleware=[ModelFallbackMiddleware(fallback)],
    )
    result = await top.generate("start")
    delegated = next(m for m in result.messages if isinstance(m, ToolMessage))
    assert "from the fallback" in str(delegated.content) and result.text == "done"


async def test_a_subagent_declaring_no_middleware_keeps_none() -> None:
    worker = _worker(model=ScriptedChatModel(responses=["ok"]), middleware=[])
    top = Agent(id="top", model=ScriptedChatModel(), agents={"w": worker}, middleware=[ModelRetryMiddleware()])
    spec = build_spec(top)
    assert [type(s) for s in spec.steps.all] == [MiddlewareStep]
    assert build_spec(worker, Inherited.of(spec)).steps.all == ()
    assert len(build_spec(_worker(model=ScriptedChatModel()), Inherited.of(spec)).steps.all) == 1


async def test_model_call_limit_ends_the_run_with_its_message_and_counts_in_the_thread() -> None:
    worker = _worker(model=ScriptedChatModel(responses=["worked"]))
    top = Agent(
        id="top",
        model=ScriptedChatModel(responses=[delegate("w", "go"), "never asked"]),
        agents={"w": worker},
        middleware=[ModelCallLimitMiddleware(run_limit=1, exit_behavior="end")],
    )
    graph = top.compile()
    out = await graph.ainvoke({"messages": [("user", "start")]}, {"configurable": {"thread_id": "t"}})
    assert "Model call limits exceeded" in str(out["messages"][-1].content)
    assert out["thread_model_call_count"] == 1  # tracked: a state key of the agent's graph
    assert "run_model_call_count" not in out  # untracked: one run's only


async def test_tool_retry_runs_a_failing_tool_again_and_tool_call_limit_answers_past_it() -> None:
    runs: list[int] = []

    @tool
    def flaky(x: int) -> str:
        """Fails once."""
        runs.append(x)
        if len(runs) == 1:
            raise Down("flaky")
        return f"ok {x}"

    model = ScriptedChatModel(responses=[tool_call("flaky", {"x": 1}), [tool_call("flaky", {"x": 2}), tool_call("flaky", {"x": 3})], "done"])
    agent = Agent(
        id="a",
        model=model,
        tools={"flaky": flaky},
        middleware=[ToolRetryMiddleware(max_retries=2, initial_delay=0), ToolCallLimitMiddleware(run_limit=2)],
    )
    result = await agent.generate("go")
    results = [str(m.content) for m in result.messages if isinstance(m, ToolMessage)]
    assert results[0] == "ok 1" and runs[:2] == [1, 1]  # retried once
    assert any("limit" in r.lower() for r in results)  # the third call is answered, not run
    assert 3 not in runs and result.text == "done"


async def test_decorators_sync_and_async_wrap_the_model_and_tool_calls() -> None:
    seen: list[str] = []

    @dynamic_prompt
    def prompt(request: Any) -> str:
        return "Be brief."

    @wrap_model_call
    async def note(request: Any, handler: Any) -> Any:
        seen.append(f"model:{request.system_prompt}")
        return await handler(request)

    @wrap_tool_call
    def shout(request: Any, handler: Any) -> Any:  # sync: runs in a worker thread
        result = handler(request)
        seen.append("tool")
        return ToolMessage(content=str(result.content).upper(), tool_call_id=result.tool_call_id, name=result.name)

    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    model = ScriptedChatModel(responses=[tool_call("echo", {"text": "hi"}), "done"])
    agent = Agent(id="a", model=model, instructions="Help.", tools={"echo": echo}, middleware=[prompt, note, shout])
    result = await agent.generate("go")
    assert seen == ["model:Be brief.", "tool", "model:Be brief."]
    assert [str(m.content) for m in result.messages if isinstance(m, ToolMessage)] == ["HI"]
    first = model.calls[0]
    assert isinstance(first[0], SystemMessage) and first[0].content == "Be brief."  # the prompt the model saw


@pytest.mark.parametrize("where", ["supervisor", "subagent"])
async def test_human_in_the_loop_pauses_through_the_approvals_every_driver_answers(where: str) -> None:
    """LangChain's HumanInTheLoopMiddleware asks as the library's approvals do: the run
    is suspended with an `approval` item (what AG-UI, A2A, MCP and the playground show),
    its allowed decisions and description are the middleware's, and a decision resumes it."""
    from supervisor_graph import Memory

    paid: list[int] = []

    @tool
    def pay(amount: int) -> str:
        """Pay."""
        paid.append(amount)
        return f"paid {amount}"

    hitl = HumanInTheLoopMiddleware(
        interrupt_on={"pay": {"allowed_decisions": ["approve", "reject"], "description": "Check the amount"}}
    )
    memory = Memory(storage=":memory:")
    payer_model = ScriptedChatModel(responses=[tool_call("pay", {"amount": 5}), "paid"])
    if where == "supervisor":
        agent = Agent(id="a", model=payer_model, tools={"pay": pay}, middleware=[hitl], memory=memory)
    else:
        worker = _worker(model=payer_model, tools={"pay": pay})
        model = ScriptedChatModel(responses=[delegate("w", "pay 5"), "done"])
        agent = Agent(id="a", model=model, agents={"w": worker}, middleware=[hitl], memory=memory)
    try:
        result = await agent.generate("go", memory="t1")
        assert result.finish_reason == "suspended" and paid == []
        [item] = result.suspended
        assert (item.kind, item.tool_name, item.args) == ("approval", "pay", {"amount": 5})
        assert item.payload["allowed_decisions"] == ["approve", "reject"] and item.payload["description"] == "Check the amount"
        done = await agent.approve_tool_call(run_id=result.run_id, tool_call_id=item.tool_call_id, memory="t1")
        assert paid == [5] and done.finish_reason == "stop"
    finally:
        await memory.aclose()


@pytest.mark.parametrize("where", ["supervisor", "subagent"])
async def test_todo_list_brings_its_tool_whose_command_writes_the_agents_state(where: str) -> None:
    todos = [{"content": "look it up", "status": "in_progress"}]
    model = ScriptedChatModel(responses=[tool_call("write_todos", {"todos": todos}), "planned"])
    if where == "supervisor":
        agent = Agent(id="a", model=model, middleware=[TodoListMiddleware()])
        out = await agent.compile().ainvoke({"messages": [("user", "plan")]}, {"configurable": {"thread_id": "t"}})
        assert out["todos"] == todos and out["messages"][-1].content == "planned"
    else:
        worker = _worker(model=model)
        top = Agent(id="top", model=ScriptedChatModel(responses=[delegate("w", "plan"), "done"]), agents={"w": worker},
                    middleware=[TodoListMiddleware()])  # fmt: skip
        assert (await top.generate("go")).text == "done"
    assert "write_todos" in str(model.calls[0])  or model.calls  # the tool was offered
    results = [m for m in model.calls[1] if isinstance(m, ToolMessage)]
    assert results and "todo" in str(results[0].content).lower()


class Routed(TypedDict):
    messages: Any
    route: NotRequired[str]


async def test_before_agent_runs_once_a_run_and_what_it_writes_reaches_the_model_calls() -> None:

    from typing_extensions import TypedDict

    class Routed(TypedDict):
        messages: Any
        route: NotRequired[str]

    class Route(AgentMiddleware):
        state_schema = Routed  # type: ignore[assignment]

        def __init__(self) -> None:
            self.routed = 0
            self.seen: list[str] = []

        async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
            self.routed += 1
            return {"route": "fast"}

        async def awrap_model_call(self, request: Any, handler: Any) -> Any:
            self.seen.append(request.state.get("route", "?"))
            return await handler(request)

    route = Route()
    model = ScriptedChatModel(responses=[tool_call("echo", {"text": "x"}), "done"])
    agent = Agent(id="a", model=model, tools={"echo": echo}, middleware=[route])
    assert (await agent.generate("go")).text == "done"
    assert route.routed == 1 and route.seen == ["fast", "fast"]


def test_what_is_no_middleware_is_refused_at_declaration_naming_what_to_use() -> None:
    with pytest.raises(ValidationError) as info:
        Agent(id="a", model=ScriptedChatModel(), middleware=[object()])
    text = str(info.value)
    assert "object is not a LangChain AgentMiddleware" in text and "use an AgentMiddleware" in text


async def test_an_answer_the_middleware_gives_itself_is_the_turns() -> None:
    @wrap_model_call
    async def canned(request: Any, handler: Any) -> Any:
        return AIMessage(content="canned")

    agent = Agent(id="a", model=ScriptedChatModel(), middleware=[canned])
    assert (await agent.generate("hi")).text == "canned"


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


def _shipped() -> dict[str, Any]:
    from langchain.agents.middleware import (
    ContextEditingMiddleware,
        LLMToolEmulator,
        LLMToolSelectorMiddleware,
        ModelRefusalMiddleware,
        PIIMiddleware,
        SummarizationMiddleware,
    )

    return {
        "PIIMiddleware": lambda: PIIMiddleware("email", strategy="redact"),
        "SummarizationMiddleware": lambda: SummarizationMiddleware(
            ScriptedChatModel(responses=["summary"] * 4), trigger=("messages", 3), keep=("messages", 2)
        ),
        "ContextEditingMiddleware": ContextEditingMiddleware,
        "ModelRefusalMiddleware": ModelRefusalMiddleware,
        "LLMToolEmulator": lambda: LLMToolEmulator(model=ScriptedChatModel(responses=["emulated"] * 4)),
        "LLMToolSelectorMiddleware": lambda: LLMToolSelectorMiddleware(
            model=ScriptedChatModel(responses=[tool_call("ToolSelectionResponse", {"tools": ["echo"]})] * 4)
        ),
        "ModelRetryMiddleware": ModelRetryMiddleware,
        "ToolRetryMiddleware": ToolRetryMiddleware,
        "ModelCallLimitMiddleware": lambda: ModelCallLimitMiddleware(run_limit=10),
        "ToolCallLimitMiddleware": lambda: ToolCallLimitMiddleware(run_limit=10),
    }


@pytest.mark.parametrize("where", ["supervisor", "subagent"])
@pytest.mark.parametrize("name", list(_shipped()))
async def test_each_shipped_middleware_runs_in_a_supervisor_and_in_a_subagent(name: str, where: str) -> None:
    """Every middleware LangChain ships that `Agent` accepts runs a turn with a tool call
    in either place; what each one does is checked where it has an effect to see."""
    middleware = _shipped()[name]()
    worker_model = ScriptedChatModel(responses=[tool_call("echo", {"text": "mail x@y.com"}), "worked x@y.com"])
    worker = _worker(model=worker_model, tools={"echo": echo})
    if where == "supervisor":
        model = ScriptedChatModel(responses=[tool_call("echo", {"text": "mail a@b.com"}), "done"])
        agent = Agent(id="a", model=model, tools={"echo": echo}, middleware=[middleware])
    else:
        model = ScriptedChatModel(responses=[delegate("w", "go"), "done"])
        agent = Agent(id="a", model=model, agents={"w": worker}, middleware=[middleware])
    result = await agent.generate("hi a@b.com")
    assert result.text == "done"
    seen = worker_model if where == "subagent" else model
    results = [str(m.content) for m in result.messages if isinstance(m, ToolMessage)]
    if name == "PIIMiddleware":  # the input each model saw was redacted
        assert "[REDACTED_EMAIL]" in str(model.calls[0][-1].content)
    if name == "LLMToolEmulator" and where == "supervisor":
        assert results == ["emulated"]  # the tool did not run: a model answered for it
    if name == "LLMToolEmulator" and where == "subagent":
        assert "emulated" in str(seen.calls[1])


@pytest.mark.parametrize("where", ["supervisor", "subagent"])
async def test_tool_error_middleware_answers_for_a_failing_tool(where: str) -> None:
    from langchain.agents.middleware import ToolErrorMiddleware

    @tool
    def broken(text: str) -> str:
        """Fails."""
        raise Down("no route")

    handled = ToolErrorMiddleware(on_error=lambda exc, request: f"handled {type(exc).__name__}")
    model = ScriptedChatModel(responses=[tool_call("broken", {"text": "x"}), "done"])
    if where == "supervisor":
        agent = Agent(id="a", model=model, tools={"broken": broken}, middleware=[handled])
    else:
        worker = _worker(model=model, tools={"broken": broken})
        agent = Agent(id="top", model=ScriptedChatModel(responses=[delegate("w", "go"), "done"]), agents={"w": worker},
                      middleware=[handled])  # fmt: skip
    assert (await agent.generate("go")).text == "done"
    [result] = [m for m in model.calls[1] if isinstance(m, ToolMessage)]
    assert str(result.content) == "handled Down"  # the middleware's text, not the library's error


class _Pick(BaseDecisionModel):
    """A classifier that always routes to `route`."""

    model: str = "pick"
    route: str = "fast"

    @property
    def _provider(self) -> str:
        return "test"

    def _classify(self, state: Any, questions: Any, **kwargs: Any) -> ClassifierResponse:
        answer = ChoiceAnswer(type="choice", choice=self.route, probabilities={self.route: 1.0}, confidence=1.0)
        return ClassifierResponse(model="pick", answers={"model_route": answer})


@pytest.mark.filterwarnings("ignore::langchain_core._api.beta_decorator.LangChainBetaWarning")
@pytest.mark.parametrize("where", ["supervisor", "subagent"])
async def test_model_router_routes_each_run_once_to_the_model_its_classifier_picks(where: str) -> None:
    from langchain.agents.middleware import ModelRouterMiddleware

    fast = ScriptedChatModel(responses=["from fast"] * 3)
    slow = ScriptedChatModel(responses=["from slow"] * 3)
    router = ModelRouterMiddleware(
        choices={"fast": {"model": fast, "criteria": "quick"}, "slow": {"model": slow, "criteria": "deep"}},
        instructions="Pick a model.",
        classifier=_Pick(),
    )
    if where == "supervisor":
        agent = Agent(id="a", model=ScriptedChatModel(), middleware=[router])
        assert (await agent.generate("hi")).text == "from fast"
    else:
        worker = _worker(model=ScriptedChatModel(), middleware=[router])
        top = Agent(id="top", model=ScriptedChatModel(responses=[delegate("w", "go"), "done"]), agents={"w": worker})
        result = await top.generate("hi")
        assert "from fast" in str(next(m for m in result.messages if isinstance(m, ToolMessage)).content)
    assert len(fast.calls) == 1 and slow.calls == []
