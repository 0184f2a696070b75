"""Working memory (SPEC §8): the scratchpad an agent reads in its system prompt and
changes with `update_working_memory`."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from pydantic import BaseModel

from supervisor_graph import Agent, Memory
from supervisor_graph.nodes.steps.working_memory import DEFAULT_TEMPLATE, WORKING_MEMORY_NAMESPACE, WorkingMemoryError
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


class Profile(BaseModel):
    name: str | None = None
    city: str | None = None
    diet: dict[str, bool] = {}
    visits: int = 0


def update(memory: Any, id: str | None = None) -> dict[str, Any]:
    return tool_call("update_working_memory", {"memory": memory}, id=id)


def system_of(call: list[BaseMessage]) -> str:
    """What the model read of its working memory: the guide in the system prompt, the value
    after the conversation (issue 51: an update changes no byte before it)."""
    assert isinstance(call[0], SystemMessage)
    tail = str(call[-1].content) if "<working_memory>" in str(call[-1].content) else ""
    return f"{call[0].content}\n{tail}"


async def test_template_mode_resource_scope_persists_across_threads(store) -> None:
    model = ScriptedChatModel(responses=[update("# User\n- Name: Ada\n"), "Noted.", "Hello Ada."])
    agent = Agent(id="assistant", instructions="Be brief.", model=model, memory=store.memory, working_memory=True)
    first = await agent.generate("I am Ada", memory={"thread": "wm-a", "resource": "ada"})
    assert first.text == "Noted."
    # the template until something is written, then the value, on every call
    assert system_of(model.calls[0]).startswith("Be brief.\n\n") and DEFAULT_TEMPLATE in system_of(model.calls[0])
    assert "- Name: Ada" in system_of(model.calls[1])
    second = await agent.generate("Who am I?", memory={"thread": "wm-b", "resource": "ada"})
    assert second.text == "Hello Ada." and "- Name: Ada" in system_of(model.calls[2])
    assert await store.memory.get_working_memory(resource="ada") == "# User\n- Name: Ada\n"
    assert await store.memory.get_working_memory(resource="someone-else") is None


async def test_schema_mode_merges_deletes_and_refuses_bad_updates(store) -> None:
    model = ScriptedChatModel(
        responses=[
            update({"name": "Ada", "diet": {"vegan": True, "nuts": False}}),
            [update({"diet": {"nuts": None}, "city": "Paris"}), update({"visits": "many"})],
            "Done.",
        ]
    )
    agent = Agent(id="assistant", model=model, memory=store.memory, working_memory={"schema": Profile})
    result = await agent.generate("remember me", memory={"thread": "wm-s", "resource": "ada"})
    assert result.text == "Done."
    value = await store.memory.get_working_memory(agent_id="assistant", resource="ada")
    assert value == {"name": "Ada", "city": "Paris", "diet": {"vegan": True}}
    # the bad update is a tool error the model sees; it changed nothing
    results = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert [r.status for r in results] == ["success", "success", "error"]
    assert "visits" in str(results[2].content) and "unchanged" in str(results[2].content)
    assert any(isinstance(m, ToolMessage) and m.status == "error" for m in model.calls[2])
    # the tool takes an object in schema mode
    schema = next(t for t in model.call_tools[0] if t["function"]["name"] == "update_working_memory")
    assert schema["function"]["parameters"]["properties"]["memory"]["type"] == "object"


async def test_thread_scope_lives_in_the_thread(store) -> None:
    model = ScriptedChatModel(responses=[update("goal: ship"), "ok", "fresh"])
    agent = Agent(id="planner", model=model, memory=store.memory, working_memory={"scope": "thread", "template": "goal:"})
    await agent.generate("plan", memory={"thread": "wm-t1", "resource": "ada"})
    await agent.generate("plan", memory={"thread": "wm-t2", "resource": "ada"})
    assert "goal: ship" not in system_of(model.calls[2]) and "goal:" in system_of(model.calls[2])
    assert await store.memory.get_working_memory(thread="wm-t1") == "goal: ship"
    assert await store.memory.get_working_memory(thread="wm-t2") is None
    # written from outside, read by the next run on the thread
    await store.memory.set_working_memory("goal: rest", thread="wm-t2")
    agent.model.responses.append("rested")  # type: ignore[union-attr]
    await agent.generate("again", memory={"thread": "wm-t2"})
    assert "goal: rest" in system_of(model.calls[3])
    assert [m.content for m in await store.memory.get_messages("wm-t2")][-1] == "rested"


async def test_a_subagents_memory_persists_across_delegations(store) -> None:
    notes_model = ScriptedChatModel(responses=[update("- likes tea"), "saved", "recalled"])
    notes = Agent(id="notes-agent", description="Keeps notes.", model=notes_model, working_memory=True)
    per_thread = Agent(
        id="scratch-agent",
        description="Thinks.",
        model=ScriptedChatModel(responses=[update("step 1"), "thought"]),
        working_memory={"scope": "thread"},
    )
    parent = Agent(
        id="parent",
        model=ScriptedChatModel(
            responses=[[delegate("notes", "remember tea"), delegate("scratch", "think")], "ok", delegate("notes", "recall"), "ok"]
        ),
        agents={"notes": notes, "scratch": per_thread},
        memory=store.memory,
    )
    first = await parent.generate("one", memory={"thread": "wm-p1", "resource": "ada"})
    await parent.generate("two", memory={"thread": "wm-p2", "resource": "ada"})
    # the second delegation (another thread, same resource) reads what the first wrote
    assert "- likes tea" in system_of(notes_model.calls[2])
    assert await store.memory.get_working_memory(agent_id="notes-agent", resource="ada/notes") == "- likes tea"
    scratch = next(d for d in first.delegations if d.agent_id == "scratch-agent")
    assert await store.memory.get_working_memory(agent_id="scratch-agent", thread=scratch.sub_agent_thread_id) == "step 1"
    before = await store.memory.get_messages(scratch.sub_agent_thread_id)
    await store.memory.set_working_memory("step 2", agent_id="scratch-agent", thread=scratch.sub_agent_thread_id)
    assert await store.memory.get_working_memory(agent_id="scratch-agent", thread=scratch.sub_agent_thread_id) == "step 2"
    assert await store.memory.get_messages(scratch.sub_agent_thread_id) == before
    # the parent's thread holds none of it
    assert not any(isinstance(m, ToolMessage) and m.name == "update_working_memory" for m in first.messages)


async def test_updates_are_not_iterations_hooks_or_scored_turns(store) -> None:
    seen_iterations: list[int] = []
    judged: list[list[str]] = []

    class Judge:
        id = name = "judge"

        async def score(self, context):
            from supervisor_graph import Score

            judged.append([type(m).__name__ for m in context.run.messages])
            return Score(scorer_id="judge", name="judge", score=1.0)

    model = ScriptedChatModel(responses=[update("a"), update("b"), "answer"])
    agent = Agent(id="a", model=model, memory=store.memory, working_memory=True)
    result = await agent.generate(
        "go",
        **store.call(
            max_steps=1,
            on_iteration_complete=lambda ctx: seen_iterations.append(ctx.iteration),
            is_task_complete={"scorers": [Judge()]},
        ),
    )
    assert result.text == "answer" and result.finish_reason == "stop"
    assert seen_iterations == [1]  # one hook call, for the answer
    assert judged == [["HumanMessage", "AIMessage"]]


async def test_a_model_that_only_updates_cannot_loop_forever(store) -> None:
    model = ScriptedChatModel(policy=lambda messages: update("again"))
    agent = Agent(id="a", model=model, memory=store.memory, working_memory=True)
    result = await agent.generate("go", **store.call(max_steps=2))
    assert result.finish_reason == "max_steps"
    assert len(model.calls) == 6  # max_steps + 2 free update turns, then max_steps counted ones


async def test_a_run_without_memory_keeps_it_for_that_run_only() -> None:
    sub_model = ScriptedChatModel(policy=lambda m: update("MARK-7") if "MARK-7" not in system_of(m) else "I remember")
    sub = Agent(id="sub", description="Remembers.", working_memory=True, model=sub_model)
    parent = Agent(
        id="p",
        model=ScriptedChatModel(responses=[delegate("sub", "a"), delegate("sub", "b"), "done", delegate("sub", "c"), "done"]),
        agents={"sub": sub},
    )
    first = await parent.generate("go", max_steps=5)
    assert [d.text for d in first.delegations] == ["I remember", "I remember"]
    assert len(sub_model.calls) == 3  # the second delegation of the run found the value
    await parent.generate("go")
    assert len(sub_model.calls) == 5  # a new run started empty and wrote it again


async def test_stream_reports_the_new_value() -> None:
    agent = Agent(id="a", model=ScriptedChatModel(responses=[update("v1"), "ok"]), working_memory=True)
    stream = await agent.stream("go")
    chunks = [c async for c in stream.full_stream]
    results = [c for c in chunks if c.type == "tool-result" and c.payload.get("tool_name") == "update_working_memory"]
    assert [r.payload["working_memory"] for r in results] == [{"scope": "resource", "value": "v1"}]


class CountingStore(InMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def abatch(self, ops):  # type: ignore[no-untyped-def]
        ops = list(ops)
        self.reads += sum(1 for op in ops if getattr(op, "namespace", None) == WORKING_MEMORY_NAMESPACE and type(op).__name__ == "GetOp")
        return await super().abatch(ops)


async def test_cost_nothing_without_it_one_read_per_model_call_with_it() -> None:
    counting = CountingStore()
    memory = Memory(InMemorySaver(), store=counting)
    plain = Agent(id="plain", model=ScriptedChatModel(responses=["hi"]), memory=memory)
    assert "working_memory" not in plain.compile().channels
    await plain.generate("x", memory={"thread": "c1", "resource": "r"})
    assert counting.reads == 0
    model = ScriptedChatModel(responses=[update("v"), "ok"])
    with_memory = Agent(id="with", model=model, memory=memory, working_memory=True)
    await with_memory.generate("x", memory={"thread": "c2", "resource": "r"})
    assert counting.reads == len(model.calls) == 2
    assert "working_memory" not in with_memory.compile().channels  # resource scope: not in state
    assert "working_memory" in Agent(
        id="t", model=ScriptedChatModel(), working_memory={"scope": "thread"}
    ).compile().channels


async def test_memory_api_validates_and_explains() -> None:
    memory = Memory(":memory:")
    Agent(id="profiled", model=ScriptedChatModel(), memory=memory, working_memory={"schema": Profile})
    Agent(id="noted", model=ScriptedChatModel(), memory=memory, working_memory=True)
    with pytest.raises(ValueError, match="pass agent_id"):
        await memory.get_working_memory(resource="r")
    with pytest.raises(ValueError, match="'nobody' has no working memory"):
        await memory.get_working_memory(agent_id="nobody", resource="r")
    with pytest.raises(WorkingMemoryError, match="visits"):
        await memory.set_working_memory({"visits": "lots"}, agent_id="profiled", resource="r")
    assert await memory.get_working_memory(agent_id="profiled", resource="r") is None
    assert await memory.set_working_memory({"visits": "3"}, agent_id="profiled", resource="r") == {"visits": 3}
    with pytest.raises(WorkingMemoryError, match="string"):
        await memory.set_working_memory({"x": 1}, agent_id="noted", resource="r")
    await memory.set_working_memory(None, agent_id="profiled", resource="r")
    assert await memory.get_working_memory(agent_id="profiled", resource="r") is None


def test_declaration_errors_name_what_to_fix() -> None:
    with pytest.raises(ValueError, match="template or a schema, not both"):
        Agent(id="a", model=ScriptedChatModel(), working_memory={"template": "x", "schema": Profile})
    with pytest.raises(ValueError, match="update_working_memory"):
        Agent(id="a", model=ScriptedChatModel(), working_memory=True, tools={"update_working_memory": lambda x: x})
    with pytest.raises(ValueError, match="scope"):
        Agent(id="a", model=ScriptedChatModel(), working_memory={"scope": "forever"})
    # the memory's setting applies to the agent declared with it
    agent = Agent(id="a", model=ScriptedChatModel(), memory=Memory(":memory:", working_memory={"scope": "thread"}))
    assert agent.effective_working_memory is not None and agent.effective_working_memory.scope == "thread"


async def test_resource_memory_survives_reopening_the_database(shared_storage: str) -> None:
    model = ScriptedChatModel(responses=[update({"name": "Ada"}), "ok", "hi"])
    first = Memory(shared_storage)
    agent = Agent(id="a", model=model, memory=first, working_memory={"schema": Profile})
    await agent.generate("x", memory={"thread": "wm-db1", "resource": "ada"})
    await first.aclose()
    second = Memory(shared_storage)
    again = agent.model_copy(update={"memory": second})
    await again.generate("y", memory={"thread": "wm-db2", "resource": "ada"})
    assert '"name": "Ada"' in system_of(model.calls[2])
    assert await second.get_working_memory(resource="ada") == {"name": "Ada"}
    await second.aclose()


async def test_a_paused_thread_is_not_written_behind_its_back(store) -> None:
    from supervisor_graph import create_tool

    class Nothing(BaseModel):
        pass

    gated = create_tool(id="pay", description="Pays.", input_schema=Nothing, execute=lambda args: "paid", require_approval=True)
    agent = Agent(
        id="a",
        model=ScriptedChatModel(responses=[tool_call("pay", {})]),
        tools={"pay": gated},
        memory=store.memory,
        working_memory={"scope": "thread"},
    )
    result = await agent.generate("pay", memory={"thread": "wm-paused"})
    assert result.finish_reason == "suspended"
    with pytest.raises(ValueError, match="waits for answers"):
        await store.memory.set_working_memory("x", thread="wm-paused")
    assert await store.memory.get_working_memory(thread="wm-paused") is None


def test_the_update_turn_keeps_the_transcript_well_formed() -> None:
    agent = Agent(id="a", model=ScriptedChatModel(responses=[update("x", id="c1"), "ok"]), working_memory=True)
    result = agent.generate_sync("go")
    ai, tool, answer = result.messages
    assert isinstance(ai, AIMessage) and ai.tool_calls[0]["id"] == "c1"
    assert isinstance(tool, ToolMessage) and tool.tool_call_id == "c1" and tool.content == "Working memory updated."
    assert answer.content == "ok"


async def test_a_graph_compiled_without_a_store_refuses_resource_updates_and_warns_once(caplog) -> None:
    """SPEC §23: an update that could not be kept is a tool error, never "updated" then gone."""
    model = ScriptedChatModel(
        policy=lambda m: "noted" if isinstance(m[-2], ToolMessage) else tool_call("update_working_memory", {"memory": "# User\n- Name: Ada"})
    )
    agent = Agent(id="storeless-agent", model=model, working_memory={"scope": "resource"})
    graph = agent.compile(checkpointer=InMemorySaver())
    with caplog.at_level("WARNING", logger="supervisor_graph"):
        for thread in ("a", "b"):
            out = await graph.ainvoke({"messages": [("user", "I am Ada")]}, {"configurable": {"thread_id": thread}})
            [result] = [m for m in out["messages"] if isinstance(m, ToolMessage)]
            assert result.status == "error" and "compile(store=...)" in result.content
    assert sum("compile(checkpointer=..., store=...)" in r.getMessage() for r in caplog.records) == 1
    with_store = agent.compile(checkpointer=InMemorySaver(), store=InMemoryStore())
    out = await with_store.ainvoke({"messages": [("user", "I am Ada")]}, {"configurable": {"thread_id": "c"}})
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == ["Working memory updated."]


# -- consistent writes outside runs, and limits (SPEC §19) -------------------------


async def test_writing_a_threads_memory_keeps_its_owner(storage: str) -> None:
    """`set_working_memory(thread=...)` writes a checkpoint; it carries the thread's owner
    (and the caller's metadata), so the owner's next AG-UI run is not THREAD_FORBIDDEN."""
    from tests.agui.conftest import AGUIAgent, collect, make_input, wire

    memory = Memory(storage)
    try:
        scratch = Agent(
            id="scratch-agent",
            description="Thinks.",
            model=ScriptedChatModel(responses=[update("step 1"), "thought"]),
            working_memory={"scope": "thread"},
        )
        agent = Agent(
            id="owned",
            model=ScriptedChatModel(responses=[delegate("scratch", "think"), "one", "two"]),
            agents={"scratch": scratch},
            memory=memory,
            working_memory={"scope": "thread"},
        )
        alice = AGUIAgent(agent, resource_id="alice")
        assert wire(await collect(alice, make_input("wm-owned")))[-1]["outcome"] == {"type": "success"}
        [before] = await memory.list_threads({"resource_id": "alice"})
        [sub_before] = await memory.list_threads({"agent_id": "scratch-agent"})

        await memory.set_working_memory("goal: ship", agent_id="owned", thread="wm-owned")
        await memory.set_working_memory("step 2", agent_id="scratch-agent", thread=sub_before.thread_id)

        [after] = await memory.list_threads({"resource_id": "alice"})
        assert after == before
        [sub_after] = await memory.list_threads({"agent_id": "scratch-agent"})
        assert sub_after == sub_before and sub_after.parent_thread_id == "wm-owned"
        again = wire(await collect(alice, make_input("wm-owned", "again")))
        assert again[-1]["type"] == "RUN_FINISHED" and again[-1]["outcome"] == {"type": "success"}, again[-1]
        assert "goal: ship" in system_of(agent.model.calls[-1])  # type: ignore[union-attr]
        mallory = AGUIAgent(agent, resource_id="mallory")
        assert wire(await collect(mallory, make_input("wm-owned", "mine?")))[-1]["code"] == "THREAD_FORBIDDEN"
    finally:
        await memory.aclose()


class Trip(BaseModel):
    class Stay(BaseModel):
        hotel: str | None = None
        nights: int = 0

    city: str | None = None
    stay: Stay | None = None


class Open(BaseModel):
    model_config = {"extra": "allow"}
    city: str | None = None


async def test_keys_the_schema_does_not_know_are_refused_and_change_nothing(store) -> None:
    model = ScriptedChatModel(
        responses=[[update({"city": "Lyon", "bogus": 1}), update({"stay": {"hotle": "Ibis"}})], "ok"]
    )
    memory = store.memory
    Agent(id="trip", model=model, memory=memory, working_memory={"schema": Trip})
    Agent(id="open", model=ScriptedChatModel(), memory=memory, working_memory={"schema": Open})
    await memory.set_working_memory({"city": "Paris"}, agent_id="trip", resource="r")
    with pytest.raises(WorkingMemoryError, match="bogus"):
        await memory.set_working_memory({"bogus": 1}, agent_id="trip", resource="r")
    with pytest.raises(WorkingMemoryError, match=r"stay\.hotle"):
        await memory.set_working_memory({"stay": {"hotle": "Ibis"}}, agent_id="trip", resource="r")
    assert await memory.get_working_memory(agent_id="trip", resource="r") == {"city": "Paris"}
    # a schema that allows extra keys keeps them
    assert await memory.set_working_memory({"bogus": 1}, agent_id="open", resource="r") == {"bogus": 1}
    # the model's update tool refuses them too: a tool error it sees, nothing written
    result = await Agent(id="trip", model=model, memory=memory, working_memory={"schema": Trip}).generate(
        "go", memory={"thread": "wm-keys", "resource": "r"}
    )
    errors = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert [m.status for m in errors] == ["error", "error"]
    assert "bogus" in str(errors[0].content) and "stay.hotle" in str(errors[1].content)
    assert await memory.get_working_memory(agent_id="trip", resource="r") == {"city": "Paris"}


async def test_values_over_the_size_limit_are_refused(store) -> None:
    big = "x" * (64 * 1024 + 1)  # one byte over
    model = ScriptedChatModel(responses=[update(big), "ok"])
    memory = store.memory
    agent = Agent(id="noted", model=model, memory=memory, working_memory=True)
    Agent(id="profiled", model=ScriptedChatModel(), memory=memory, working_memory={"schema": Profile})
    await memory.set_working_memory("small", agent_id="noted", resource="r")
    with pytest.raises(WorkingMemoryError, match="65,536 bytes"):
        await memory.set_working_memory(big, agent_id="noted", resource="r")
    with pytest.raises(WorkingMemoryError, match="limit"):
        await memory.set_working_memory({"name": big}, agent_id="profiled", resource="r")
    assert await memory.get_working_memory(agent_id="noted", resource="r") == "small"
    assert await memory.get_working_memory(agent_id="profiled", resource="r") is None
    # the model's update: a tool error it sees, nothing written
    result = await agent.generate("go", memory={"thread": "wm-big", "resource": "r"})
    [error] = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert error.status == "error" and "65,536 bytes" in str(error.content) and "unchanged" in str(error.content)
    assert await memory.get_working_memory(agent_id="noted", resource="r") == "small"
    # adjustable per agent
    roomy = Memory(":memory:")
    Agent(id="roomy", model=ScriptedChatModel(), memory=roomy, working_memory={"max_bytes": 128 * 1024})
    assert await roomy.set_working_memory(big, resource="r") == big
    tight = Memory(":memory:")
    Agent(id="tight", model=ScriptedChatModel(), memory=tight, working_memory={"max_bytes": 10})
    with pytest.raises(WorkingMemoryError, match="10 bytes"):
        await tight.set_working_memory("eleven char", resource="r")


@pytest.mark.parametrize("scope", ["resource", "thread"])
async def test_set_working_memory_merges_like_the_models_updates_unless_told_to_replace(scope: str) -> None:
    """Issue 26: `set_working_memory({"city": "Paris"})` changes the city and keeps the
    rest, as the model's own updates do; `replace=True` stores the whole value."""
    memory = Memory(":memory:")
    agent = Agent(id="profiled", model=ScriptedChatModel(policy=lambda m: "ok"), memory=memory, working_memory={"schema": Profile, "scope": scope})
    where: dict[str, Any] = {"resource": "r"} if scope == "resource" else {"thread": "wm-merge"}
    if scope == "thread":
        await agent.generate("hi", memory={"thread": "wm-merge", "resource": "r"})
    await memory.set_working_memory({"name": "Ada", "city": "Lyon", "diet": {"vegan": True}}, **where)
    merged = await memory.set_working_memory({"city": "Paris", "diet": {"nuts": False}}, **where)
    assert merged == {"name": "Ada", "city": "Paris", "diet": {"vegan": True, "nuts": False}}
    assert await memory.get_working_memory(**where) == merged
    assert await memory.set_working_memory({"city": "Nice"}, replace=True, **where) == {"city": "Nice"}
    assert await memory.get_working_memory(**where) == {"city": "Nice"}


class Booking(BaseModel):
    city: str  # required: a partial update holds only what changes
    nights: int = 0


async def test_a_merged_update_need_not_hold_the_schemas_required_fields() -> None:
    """Like the model's own update, `set_working_memory` checks the merged value, not the
    fields it is given on their own; unknown keys and bad types are still refused."""
    memory = Memory(":memory:")
    Agent(id="booked", model=ScriptedChatModel(), memory=memory, working_memory={"schema": Booking})
    await memory.set_working_memory({"city": "Lyon"}, resource="r")
    assert await memory.set_working_memory({"nights": 3}, resource="r") == {"city": "Lyon", "nights": 3}
    with pytest.raises(WorkingMemoryError, match="nights"):
        await memory.set_working_memory({"nights": "many"}, resource="r")
    with pytest.raises(WorkingMemoryError, match="no field hotel"):
        await memory.set_working_memory({"hotel": "Ritz"}, resource="r")
    with pytest.raises(WorkingMemoryError, match="an object here"):
        await memory.set_working_memory("Lyon", resource="r")
    with pytest.raises(WorkingMemoryError, match="city"):  # nothing stored yet: the merge lacks the city
        await memory.set_working_memory({"nights": 1}, resource="other")
    assert await memory.get_working_memory(resource="r") == {"city": "Lyon", "nights": 3}
