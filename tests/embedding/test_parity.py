"""The compiled graph does what the facade does (SPEC §23): delegation hooks, `suspend()`
inside a subagent's tool, client tools, task-completion scorers and result references,
with the compiled graph driven directly (`graph.ainvoke`, `Command(resume=...)`) and
the options in `default_options`, as Studio, servers and embedding apps run it."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import BaseModel

from supervisor_graph import Agent, create_scorer, create_tool, suspend
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


def _run(agent: Agent, thread: str = "t") -> tuple[Any, dict[str, Any]]:
    return agent.compile(checkpointer=InMemorySaver()), {"configurable": {"thread_id": thread}}


def _worker(answer: str = "worked") -> Agent:
    return Agent(id="worker-agent", description="Works.", model=ScriptedChatModel(policy=lambda m: answer))


async def test_delegation_hooks_from_default_options() -> None:
    seen: list[str] = []

    def start(ctx: Any) -> dict[str, Any]:
        seen.append(f"start {ctx.prompt}")
        return {"modified_prompt": ctx.prompt + " (carefully)"}

    def complete(ctx: Any) -> dict[str, Any]:
        seen.append(f"complete {ctx.result.text}")
        return {"result_text": ctx.result.text.upper()}

    worker = Agent(id="worker-agent", description="Works.", model=ScriptedChatModel(policy=lambda m: f"did {m[-1].content}"))
    boss = Agent(
        id="boss", agents={"worker": worker},
        model=ScriptedChatModel(policy=lambda m: m[-1].content if isinstance(m[-1], ToolMessage) else delegate("worker", "it")),
        default_options={"delegation": {"on_delegation_start": start, "on_delegation_complete": complete}},
    )
    graph, config = _run(boss)
    out = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    assert out["messages"][-1].content == "DID IT (CAREFULLY)"
    assert seen == ["start it", "complete did it (carefully)"]


class Ask(BaseModel):
    question: str


async def test_suspend_in_a_subagents_tool_resumed_with_a_command() -> None:
    def execute(args: Ask) -> str:
        return f"using {suspend({'question': args.question})}"

    ask = create_tool(id="ask_user", description="Ask the user.", input_schema=Ask, execute=execute)
    worker_model = ScriptedChatModel(
        policy=lambda m: m[-1].content if isinstance(m[-1], ToolMessage) else tool_call("ask_user", {"question": "Which?"})
    )
    worker = Agent(id="worker-agent", description="Works.", tools=[ask], model=worker_model)
    boss = Agent(
        id="boss", agents={"worker": worker},
        model=ScriptedChatModel(policy=lambda m: m[-1].content if isinstance(m[-1], ToolMessage) else delegate("worker", "ask")),
    )
    graph, config = _run(boss)
    paused = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    [item] = paused["__interrupt__"]
    assert item.value["kind"] == "suspend" and item.value["payload"] == {"question": "Which?"}
    out = await graph.ainvoke(Command(resume={item.id: "savings"}), config)
    assert out["messages"][-1].content == "using savings" and len(worker_model.calls) == 2


async def test_a_client_tool_ends_the_run_with_the_call_pending() -> None:
    confirm = create_tool(id="confirm_in_ui", description="Ask the UI.", input_schema=Ask)  # no execute
    boss = Agent(
        id="boss", tools=[confirm],
        model=ScriptedChatModel(policy=lambda m: f"ui said {m[-1].content}" if isinstance(m[-1], ToolMessage) else tool_call("confirm_in_ui", {"question": "ok?"})),
    )
    graph, config = _run(boss)
    out = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    assert out["finish_reason"] == "tool-calls" and out["messages"][-1].tool_calls[0]["name"] == "confirm_in_ui"
    call_id = out["messages"][-1].tool_calls[0]["id"]
    done = await graph.ainvoke({"messages": [ToolMessage(content="yes", tool_call_id=call_id, name="confirm_in_ui")]}, config)
    assert done["messages"][-1].content == "ui said yes"


async def test_scorers_from_default_options_loop_until_they_pass() -> None:
    has_link = create_scorer(id="link", name="Has a link").generate_score(lambda ctx: 1.0 if "http" in ctx.run.output else 0.0)
    answers = iter(["no link yet", "see http://example.org"])
    boss = Agent(
        id="boss", model=ScriptedChatModel(policy=lambda m: next(answers)),
        default_options={"is_task_complete": {"scorers": [has_link]}},
    )
    graph, config = _run(boss)
    out = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    assert out["messages"][-1].content == "see http://example.org"


async def test_result_references_from_default_options() -> None:
    def boss_policy(messages: list[Any]) -> Any:
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if not results:
            return delegate("worker", "first")
        if len(results) == 1:
            return tool_call("agent-worker", {"prompt": "second", "context_from_refs": ["worker-agent-1"]})
        return results[-1].content

    worker = Agent(id="worker-agent", description="Works.", model=ScriptedChatModel(policy=lambda m: f"saw {len(str(m[-1].content))} chars"))
    boss = Agent(
        id="boss", agents={"worker": worker}, model=ScriptedChatModel(policy=boss_policy),
        default_options={"delegation": {"enable_result_references": True}},
    )
    graph, config = _run(boss)
    out = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    first = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert "[ref: worker-agent-1]" in first.content
    second_prompt = worker.model.calls[-1][-1].content  # type: ignore[union-attr]
    assert "saw" in second_prompt and second_prompt.endswith("second")  # the referenced text came first
