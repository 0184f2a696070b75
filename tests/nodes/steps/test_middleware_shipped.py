"""Every middleware the installed `langchain` ships, in a supervisor and in a subagent
(SPEC §33, issue 49): the ones `test_middleware.py` does not cover, and `after_agent`,
which runs once when an agent's run ends. The real classes, real tools (a real bash for
`ShellToolMiddleware`), scripted models or the fake Anthropic server."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NotRequired

import pytest
from langchain.agents import middleware as shipped
from langchain.agents.middleware import (
    AgentMiddleware,
    AutoModeMiddleware,
    FilesystemFileSearchMiddleware,
    ModelFallbackMiddleware,
    ProviderToolSearchMiddleware,
    ShellToolMiddleware,
)
from langchain_anthropic import ChatAnthropic
from langchain_core.decisions import BaseDecisionModel, ClassifierResponse, NoulAnswer
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from typing_extensions import TypedDict

from supervisor_graph import Agent
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call
from supervisor_graph.testing.anthropic_server import FakeAnthropic, is_tool_result, text_of

# where each class LangChain ships is tested in a supervisor and in a subagent
COVERED = {
    "AutoModeMiddleware": "test_middleware_shipped.py",
    "ContextEditingMiddleware": "test_middleware.py",
    "FilesystemFileSearchMiddleware": "test_middleware_shipped.py",
    "HumanInTheLoopMiddleware": "test_middleware.py",
    "LLMToolEmulator": "test_middleware.py",
    "LLMToolSelectorMiddleware": "test_middleware.py, test_middleware_shipped.py",
    "ModelCallLimitMiddleware": "test_middleware.py",
    "ModelFallbackMiddleware": "test_middleware.py (subagent), test_middleware_shipped.py (supervisor)",
    "ModelRefusalMiddleware": "test_middleware.py",
    "ModelRetryMiddleware": "test_middleware.py",
    "ModelRouterMiddleware": "test_middleware.py",
    "PIIMiddleware": "test_middleware.py",
    "ProviderToolSearchMiddleware": "test_middleware_shipped.py",
    "ShellToolMiddleware": "test_middleware_shipped.py",
    "SummarizationMiddleware": "test_middleware.py",
    "TodoListMiddleware": "test_middleware.py",
    "ToolCallLimitMiddleware": "test_middleware.py",
    "ToolErrorMiddleware": "test_middleware.py",
    "ToolRetryMiddleware": "test_middleware.py",
}


def test_every_middleware_langchain_ships_is_covered_and_accepted() -> None:
    """A langchain release that ships a new middleware fails here until it is tested."""
    names = {
        name
        for name in shipped.__all__
        if isinstance(getattr(shipped, name), type)
        and issubclass(getattr(shipped, name), AgentMiddleware)
        and getattr(shipped, name) is not AgentMiddleware
    }
    assert names == set(COVERED)


def _team(where: str, model: Any, middleware: list[Any], **own: Any) -> tuple[Agent, Any]:
    """An agent using `model` with `middleware`: the top agent itself, or its subagent
    `w` inheriting the middleware from a top agent that only delegates."""
    if where == "supervisor":
        return Agent(id="a", model=model, middleware=middleware, retry_policy=None, **own), model
    worker = Agent(id="w", description="Works.", model=model, retry_policy=None, **own)
    top = ScriptedChatModel(responses=[delegate("w", "go"), "done"])
    return Agent(id="a", model=top, agents={"w": worker}, middleware=middleware, retry_policy=None), model


def _results(model: ScriptedChatModel, call: int = 1) -> list[str]:
    return [str(m.content) for m in model.calls[call] if isinstance(m, ToolMessage)]


# -- AutoModeMiddleware: a classifier blocks risky calls of the tools it names -------------


class _Risk(BaseDecisionModel):
    """Says a call that removes something is risky; records what it was shown."""

    model: str = "risk"
    shown: list[Any] = []

    @property
    def _provider(self) -> str:
        return "test"

    def _classify(self, state: Any, questions: Any, **kwargs: Any) -> ClassifierResponse:
        self.shown.append(state)
        risky = "rm " in json.dumps(state["tool_call"]["args"])
        return ClassifierResponse(model="risk", answers={"is_risky": NoulAnswer(type="noul", noul=0.9 if risky else 0.1)})


@tool
def run(command: str) -> str:
    """Runs a command."""
    return f"ran {command}"


@pytest.mark.parametrize("where", ["supervisor", "subagent"])
async def test_auto_mode_blocks_the_risky_call_and_its_classifier_reads_the_conversation(where: str) -> None:
    risk = _Risk()
    model = ScriptedChatModel(responses=[[tool_call("run", {"command": "ls"}), tool_call("run", {"command": "rm -rf x"})], "ok"])
    agent, _ = _team(where, model, [AutoModeMiddleware(tools=["run"], classifier=risk)], tools={"run": run})
    await agent.generate("list the files")
    ran, blocked = _results(model)
    assert ran == "ran ls" and "was blocked because it was classified as risky" in blocked
    assert len(risk.shown) == 2
    seen = risk.shown[0]["messages"]  # LangChain's request state: the conversation up to the call
    assert isinstance(seen[-1], AIMessage) and seen[-1].tool_calls
    asked = "list the files" if where == "supervisor" else "go"  # a subagent's conversation starts at its delegation
    assert any(isinstance(m, HumanMessage) and str(m.content) == asked for m in seen)


# -- FilesystemFileSearchMiddleware: its glob and grep tools are the agent's ----------------


@pytest.mark.parametrize("where", ["supervisor", "subagent"])
async def test_file_search_tools_find_files_under_its_root(where: str, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("hay\nneedle here\n")
    (tmp_path / "b.md").write_text("nothing\n")
    calls = [tool_call("glob_search", {"pattern": "**/*.txt"}), tool_call("grep_search", {"pattern": "needle", "output_mode": "content"})]
    model = ScriptedChatModel(responses=[calls, "found"])
    agent, _ = _team(where, model, [FilesystemFileSearchMiddleware(root_path=str(tmp_path), use_ripgrep=False)])
    await agent.generate("find the needle")
    assert {"glob_search", "grep_search"} <= set(model.bound_tool_names)
    globbed, grepped = _results(model)
    assert globbed == "/notes/a.txt" and "needle here" in grepped and "b.md" not in globbed + grepped


# -- ProviderToolSearchMiddleware: deferred tools and the provider's search tool -----------


@tool
def lookup_order(order: str) -> str:
    """Looks an order up."""
    return f"order {order} shipped"


@tool(extras={"defer_loading": True})
def track_parcel(parcel: str) -> str:
    """Tracks a parcel."""
    return f"parcel {parcel} on its way"


def _claude(body: dict[str, Any]) -> Any:
    last = body["messages"][-1]
    names = {t.get("name") for t in body.get("tools") or []}
    if is_tool_result(last):
        return f"final: {text_of(last)}"
    if "agent-w" in names:
        return {"tool": "agent-w", "args": {"prompt": "where is order 7?"}}
    return {"tool": "lookup_order", "args": {"order": "7"}}


@pytest.fixture
def anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(_claude) as fake:
        for name in ("ANTHROPIC_API_URL", "ANTHROPIC_BASE_URL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake


@pytest.mark.parametrize("where", ["supervisor", "subagent"])
async def test_provider_tool_search_defers_tools_behind_anthropics_search_tool(where: str, anthropic: FakeAnthropic) -> None:
    """In the supervisor it defers the tool it names; inherited by a subagent (naming
    none), it defers the subagent's tool marked `defer_loading`, and leaves the top
    agent, which defers nothing, as it is."""
    model = ChatAnthropic(model="claude-sonnet-4-5", max_retries=0)  # type: ignore[call-arg]
    tools = {"lookup_order": lookup_order, "track_parcel": track_parcel}
    searching = ProviderToolSearchMiddleware(searchable_tools=["lookup_order"] if where == "supervisor" else None)
    if where == "supervisor":
        agent = Agent(id="a", model=model, tools=tools, middleware=[searching], retry_policy=None)
    else:
        worker = Agent(id="w", description="Finds orders.", model=model, tools=tools, retry_policy=None)
        agent = Agent(id="a", model=model, agents={"w": worker}, middleware=[searching], retry_policy=None)
    result = await agent.generate("where is order 7?")
    assert "order 7 shipped" in result.text
    asked = [r for r in anthropic.requests if "lookup_order" in {t.get("name") for t in r.get("tools") or []}]
    assert len(asked) == 2  # the agent's two calls, each with the tools deferred
    for body in asked:
        by_name = {t.get("name"): t for t in body["tools"]}
        assert by_name["lookup_order"].get("defer_loading") is (True if where == "supervisor" else None)
        assert by_name["track_parcel"].get("defer_loading") is True
        assert by_name["tool_search_tool_bm25"]["type"] == "tool_search_tool_bm25_20251119"
    if where == "subagent":
        top = [r for r in anthropic.requests if r not in asked]
        assert top and all("tool_search_tool_bm25" not in {t.get("name") for t in r["tools"]} for r in top)


# -- ModelFallbackMiddleware in a supervisor (a subagent's is in test_middleware.py) ---------


async def test_model_fallback_answers_in_the_supervisor() -> None:
    fallback = ScriptedChatModel(responses=["from the fallback"])
    agent = Agent(
        id="a", model=ScriptedChatModel(responses=[RuntimeError("503")]), middleware=[ModelFallbackMiddleware(fallback)], retry_policy=None
    )
    assert (await agent.generate("hi")).text == "from the fallback"


# -- LLMToolSelectorMiddleware picks for real among the agent's tools --------------------------


@pytest.mark.parametrize("where", ["supervisor", "subagent"])
async def test_tool_selector_offers_only_the_tools_its_model_picked(where: str) -> None:
    from langchain.agents.middleware import LLMToolSelectorMiddleware

    picker = ScriptedChatModel(responses=[tool_call("ToolSelectionResponse", {"tools": ["run"]})] * 4)
    model = ScriptedChatModel(responses=["chose"])
    agent, _ = _team(where, model, [LLMToolSelectorMiddleware(model=picker)], tools={"run": run, "lookup_order": lookup_order})
    await agent.generate("run something")
    assert [t["function"]["name"] for t in model.call_tools[0]] == ["run"]


# -- ShellToolMiddleware: one bash session an agent's run, closed when the run ends ------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "zombie" in status.read_text())


@pytest.mark.parametrize("where", ["supervisor", "subagent"])
async def test_shell_tool_keeps_one_session_for_the_run_and_closes_it_after_the_agent(where: str, tmp_path: Path) -> None:
    """Its `before_agent` starts the session (startup commands run), every call of the run
    uses it (the directory and variables persist), and its `after_agent` runs the
    shutdown commands and stops the shell when the agent's run ends."""
    down = tmp_path / "down"
    shell = ShellToolMiddleware(startup_commands=["export GREETING=hello"], shutdown_commands=[f"echo $PPID >> {down}"])
    calls = [
        tool_call("shell", {"command": f"cd {tmp_path} && echo $GREETING $$ && pwd -P >/dev/null && echo $OLDPWD"}),
        tool_call("shell", {"command": "echo $$; pwd"}),
    ]
    model = ScriptedChatModel(responses=[calls[0], calls[1], "done"])
    agent, _ = _team(where, model, [shell])
    result = await agent.generate("use the shell")
    assert result.finish_reason == "stop"
    first = _results(model, 1)[0].split()
    second = _results(model, 2)[-1].split()
    greeting, pid, workspace = first[0], int(first[1]), first[2]
    assert greeting == "hello" and int(second[0]) == pid and second[1] == str(tmp_path)  # one session, its state kept
    assert not _alive(pid)  # stopped when the run ended
    assert not Path(workspace).exists()  # its temporary workspace removed
    assert down.exists()  # the shutdown commands ran (the top agent's own session too, in a subagent's run)


# -- after_agent: once when an agent's run ends ----------------------------------------------------


class _Audited(TypedDict):
    messages: Any
    audited: NotRequired[str]


class _Audit(AgentMiddleware):
    """Once a run: records the final answer, writes a state key, and (once) sends the
    model back with a note (`jump_to="model"`)."""

    state_schema = _Audited  # type: ignore[assignment]

    def __init__(self, send_back: bool = False) -> None:
        self.seen: list[str] = []
        self.send_back = send_back

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        self.seen.append(str(state["messages"][-1].content))
        if self.send_back and len(self.seen) == 1:
            return {"messages": [HumanMessage(content="Double-check it.")], "jump_to": "model"}
        return {"audited": str(state["messages"][-1].content)}


@pytest.mark.parametrize("where", ["supervisor", "subagent"])
async def test_after_agent_runs_once_when_the_run_ends_with_its_answer(where: str) -> None:
    audit = _Audit()
    model = ScriptedChatModel(responses=[tool_call("run", {"command": "ls"}), "all listed"])
    agent, _ = _team(where, model, [audit], tools={"run": run})
    out = await agent.compile().ainvoke({"messages": [("user", "list")]}, {"configurable": {"thread_id": "t"}})
    if where == "supervisor":
        assert audit.seen == ["all listed"] and out["audited"] == "all listed"  # its update is the agent's state
    else:
        assert audit.seen == ["all listed", "done"]  # the subagent's run, then the top agent's
        assert out["audited"] == "done"


@pytest.mark.parametrize("where", ["supervisor", "subagent"])
async def test_after_agent_may_send_the_model_back(where: str) -> None:
    audit = _Audit(send_back=True)
    model = ScriptedChatModel(responses=["first try", "checked"])
    agent, _ = _team(where, model, [audit])
    result = await agent.generate("answer")
    assert str(model.calls[1][-1].content) == "Double-check it."  # the model saw its note
    assert audit.seen[:2] == ["first try", "checked"]
    assert result.text == ("checked" if where == "supervisor" else "done")
    assert result.usage.total_tokens == 15 * (2 if where == "supervisor" else 4)  # one run, every call counted
