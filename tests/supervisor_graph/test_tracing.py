"""Traces (SPEC §24): `config=` on the facade, agent identity on every run, the library's
events in `astream_events`, background tasks in a trace of their own."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from pydantic import BaseModel

from supervisor_graph import Agent, Memory, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


class Query(BaseModel):
    q: str


class Runs(BaseCallbackHandler):
    """Every run a trace would get: name, kind, parent, metadata, tags; and its end."""

    def __init__(self) -> None:
        self.runs: dict[UUID, dict[str, Any]] = {}
        self.ended: set[UUID] = set()

    def _start(self, kind: str, run_id: UUID, parent_run_id: UUID | None, kwargs: dict[str, Any], name: str | None) -> None:
        self.runs[run_id] = {
            "kind": kind,
            "name": kwargs.get("name") or name,
            "parent": parent_run_id,
            "metadata": dict(kwargs.get("metadata") or {}),
            "tags": list(kwargs.get("tags") or []),
        }

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any) -> None:
        self._start("chain", run_id, parent_run_id, kw, (serialized or {}).get("name"))

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any) -> None:
        self._start("llm", run_id, parent_run_id, kw, (serialized or {}).get("name"))

    def on_tool_start(self, serialized: Any, input_str: str, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any) -> None:
        self._start("tool", run_id, parent_run_id, kw, (serialized or {}).get("name"))

    def _end(self, *args: Any, run_id: UUID, **kw: Any) -> None:
        self.ended.add(run_id)

    on_chain_end = on_chain_error = on_llm_end = on_llm_error = on_tool_end = on_tool_error = _end

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [run for run in self.runs.values() if run["kind"] == kind]

    def root(self) -> dict[str, Any]:
        [root] = [run for run in self.runs.values() if run["parent"] is None]
        return root


def team(model_calls: list[Any] | None = None) -> Agent:
    search = create_tool(id="search", description="Searches.", input_schema=Query, execute=lambda q: f"found {q.q}")
    researcher = Agent(
        id="research-agent",
        name="Researcher",
        description="Finds facts.",
        model=ScriptedChatModel(responses=[tool_call("search", {"q": "bees"}), "bees dance"]),
        tools=[search],
    )
    writer = Agent(id="writer-agent", description="Writes.", model=ScriptedChatModel(responses=["a poem"]))
    return Agent(
        id="parent-agent",
        name="Boss",
        model=ScriptedChatModel(responses=model_calls or [delegate("research", "bees"), delegate("write", "poem"), "done"]),
        agents={"research": researcher, "write": writer},
    )


def _identity(runs: Runs) -> set[tuple[str, str, str, str]]:
    """(kind, name, agent_path, agent_name) of every model and tool run."""
    return {
        (run["kind"], str(run["name"]), run["metadata"].get("agent_path"), run["metadata"].get("agent_name"))
        for run in runs.runs.values()
        if run["kind"] in ("llm", "tool")
    }


EXPECTED = {
    ("llm", "ScriptedChatModel", "parent-agent", "Boss"),
    ("llm", "ScriptedChatModel", "parent-agent/research-agent", "Researcher"),
    ("tool", "search", "parent-agent/research-agent", "Researcher"),
    ("llm", "ScriptedChatModel", "parent-agent/writer-agent", "writer-agent"),
}


async def test_the_facade_takes_a_runnable_config_as_graph_ainvoke_does() -> None:
    runs = Runs()
    result = await team().generate(
        "bees?", config={"callbacks": [runs], "tags": ["nightly"], "metadata": {"user": "u1"}, "run_name": "my-run"}
    )
    assert result.text == "done"
    root = runs.root()
    assert root["name"] == "my-run" and "nightly" in root["tags"] and root["metadata"]["user"] == "u1"
    assert _identity(runs) == EXPECTED
    assert runs.ended == set(runs.runs)  # every run closed
    # every run of the tree carries the caller's metadata and tags, as under graph.ainvoke
    assert all(run["metadata"].get("user") == "u1" and "nightly" in run["tags"] for run in runs.runs.values())


async def test_the_facade_and_the_compiled_graph_trace_the_same_agents() -> None:
    facade, graph = Runs(), Runs()
    await team().generate("bees?", config={"callbacks": [facade]})
    await team().compile().ainvoke({"messages": [("user", "bees?")]}, {"callbacks": [graph]})
    assert _identity(facade) == _identity(graph) == EXPECTED
    for runs in (facade, graph):
        # the subagent's model and tool runs hang under its delegation's run
        for run in runs.runs.values():
            if run["kind"] in ("llm", "tool") and run["metadata"]["agent_path"] == "parent-agent/research-agent":
                assert runs.runs[run["parent"]]["name"] == "Researcher"
        # a delegation's run is named after the subagent and says which call and thread
        [delegation] = [r for r in runs.of("chain") if r["name"] == "Researcher"]
        assert delegation["metadata"]["agent_id"] == "research-agent"
        assert delegation["metadata"]["tool_call_id"]
        assert "sub_agent_thread_id" in delegation["metadata"] and "thread_id" in delegation["metadata"]
        assert runs.ended == set(runs.runs)


async def test_a_subagent_run_as_a_subgraph_is_named_and_identified_too() -> None:
    leaf = Agent(id="leaf-agent", description="Leaf.", model=ScriptedChatModel(responses=["leaf says"]))
    middle = Agent(
        id="middle-agent",
        description="Middle.",
        model=ScriptedChatModel(responses=[delegate("leaf", "go"), "middle says"]),
        agents={"leaf": leaf},
    )
    top = Agent(id="top-agent", model=ScriptedChatModel(responses=[delegate("middle", "go"), "top says"]), agents={"middle": middle})
    runs = Runs()
    assert (await top.generate("go", config={"callbacks": [runs]})).text == "top says"
    paths = {run["metadata"].get("agent_path") for run in runs.of("llm")}
    assert paths == {"top-agent", "top-agent/middle-agent", "top-agent/middle-agent/leaf-agent"}
    names = {run["name"] for run in runs.of("chain")}
    assert {"middle-agent", "leaf-agent"} <= names


async def test_config_reaches_streams_approvals_and_until_idle_calls(tmp_path: Any) -> None:
    pay = create_tool(id="pay", description="Pays.", input_schema=Query, execute=lambda q: "paid", require_approval=True)
    cashier = Agent(
        id="cashier",
        model=ScriptedChatModel(responses=[tool_call("pay", {"q": "5"}), "paid it"]),
        tools=[pay],
        memory=Memory(storage=str(tmp_path / "m.db")),
    )
    first, second = Runs(), Runs()
    stream = await cashier.stream("pay", memory={"thread": "t1"}, config={"callbacks": [first], "run_name": "ask"})
    paused = await stream.result()
    assert paused.finish_reason == "suspended" and first.root()["name"] == "ask"
    done = await cashier.approve_tool_call(
        tool_call_id=paused.suspended[0].tool_call_id, memory={"thread": "t1"}, config={"callbacks": [second], "run_name": "approve"}
    )
    assert done.text == "paid it" and second.root()["name"] == "approve"
    assert any(run["kind"] == "tool" and run["name"] == "pay" for run in second.runs.values())
    idle = Runs()
    await team().generate_until_idle("bees?", config={"callbacks": [idle]})
    assert _identity(idle) == EXPECTED


@pytest.mark.parametrize("config", [{"thread_id": "x"}, {"max_concurrency": 0}, {"callbacks": [], "recursion_limit": 3}])
async def test_a_config_key_the_facade_does_not_take_is_a_clear_error(config: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"(?s)invalid run options: config: .*callbacks, tags, metadata, run_name and max_concurrency"):
        await team().generate("bees?", config=config)


async def test_delegations_appear_as_custom_events_in_astream_events() -> None:
    graph = team().compile()
    events = [e async for e in graph.astream_events({"messages": [("user", "bees?")]}, version="v2")]
    custom = [(e["name"], e["data"]) for e in events if e["event"] == "on_custom_event"]
    names = [name for name, _ in custom]
    assert names == ["delegation-start", "delegation-complete", "delegation-start", "delegation-complete"]
    start = custom[0][1]
    assert start["agent_key"] == "research" and start["agent_id"] == "research-agent" and start["prompt"] == "bees"
    assert start["agent_path"] == "parent-agent"
    assert custom[1][1]["success"] is True


async def test_a_run_without_listeners_dispatches_no_custom_event(monkeypatch: pytest.MonkeyPatch) -> None:
    import supervisor_graph.nodes.observability.tracing as tracing

    sent: list[str] = []

    async def spy(name: str, data: Any, *, config: Any = None) -> None:
        sent.append(name)

    monkeypatch.setattr(tracing, "adispatch_custom_event", spy)
    assert (await team().generate("bees?")).text == "done"
    assert sent == []
    await team().generate("bees?", config={"callbacks": [Runs()]})
    assert sent.count("delegation-start") == 2


async def test_a_background_task_traces_apart_linked_to_the_run_that_started_it(tmp_path: Any) -> None:
    slow = Agent(id="slow-agent", description="Slow.", model=ScriptedChatModel(responses=["slow result"]))
    parent = Agent(
        id="bg-parent",
        model=ScriptedChatModel(responses=[delegate("slow", "work"), "started it", "reported it"]),
        agents={"slow": slow},
        background_tasks={"tools": {"slow": {"enabled": True}}},
        memory=Memory(storage=str(tmp_path / "bg.db")),
    )
    runs = Runs()
    result = await parent.generate_until_idle("go", memory={"thread": "bg"}, config={"callbacks": [runs]})
    assert "reported it" in result.text
    task_roots = [
        run for run in runs.runs.values() if run["parent"] is None and run["metadata"].get("agent_id") == "slow-agent"
    ]
    assert len(task_roots) == 1
    link = task_roots[0]["metadata"]["parent_run_id"]
    assert UUID(link) in runs.runs  # the node run of the delegation that launched it
    assert runs.ended == set(runs.runs)  # nothing left open
