"""Compaction (SPEC §25, issue 29): an agent's model input kept under `max_tokens` by a
summary of its older turns, written once, checkpointed with the step that needed it and
reused; the thread keeps every original message.

The models here refuse an input over a fixed size, as a provider with a context window
does: a long conversation fails without compaction and keeps working with it."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import START, StateGraph
from pydantic import ValidationError

from supervisor_graph import Agent, Memory, ModelCallError
from supervisor_graph.checkpointers.compat import namespaced_config
from supervisor_graph.checkpointers.naming import split_thread_id
from supervisor_graph.nodes.background.tasks import FullState
from supervisor_graph.nodes.steps import compaction as compaction_module
from supervisor_graph.nodes.steps.compaction import (
    SUMMARY_KWARG,
    CompactionSettings,
    Compactor,
    choose_cut,
    with_compaction,
)
from supervisor_graph.nodes.steps.tokens import counter_for
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

WINDOW = 4000  # characters a model accepts (its "context window")
SETTINGS = {"max_tokens": 700, "keep_last": 4}  # ~2800 characters at 4 a token: under the window


class ContextLengthError(ValueError):
    """What a provider raises for an input over its window."""


def size(messages: list[BaseMessage]) -> int:
    return sum(len(str(m.content)) + sum(len(str(c["args"])) for c in getattr(m, "tool_calls", [])) for m in messages)


def windowed(policy: Any, window: int = WINDOW) -> ScriptedChatModel:
    """A scripted model that refuses inputs over `window` characters."""

    def answer(messages: list[BaseMessage]) -> Any:
        if size(messages) > window:
            return ContextLengthError(f"input of {size(messages)} characters is over the window")
        return policy(messages)

    return ScriptedChatModel(policy=answer)


def summariser() -> ScriptedChatModel:
    """Writes a short summary naming how much it read (its calls are counted)."""
    return ScriptedChatModel(policy=lambda m: f"the user asked {str(m[-1].content).count('User:')} questions")


def chatty(messages: list[BaseMessage]) -> str:
    return "answer " + "x" * 200


def question(turn: int) -> str:
    return f"question {turn} " + "y" * 200


def calls_and_results(messages: list[BaseMessage]) -> list[str]:
    """What is out of step in a model input: results without their call before them, calls
    without exactly one result."""
    calls: set[str] = set()
    answered: dict[str, int] = {}
    found = []
    for m in messages:
        if isinstance(m, AIMessage):
            calls.update(c["id"] for c in m.tool_calls)
        elif isinstance(m, ToolMessage):
            if m.tool_call_id not in calls:
                found.append(f"result without its call: {m.tool_call_id}")
            answered[m.tool_call_id] = answered.get(m.tool_call_id, 0) + 1
    found.extend(f"call {c} answered {answered.get(c, 0)} times" for c in calls if answered.get(c, 0) != 1)
    return found


async def record_of(memory: Memory, thread_id: str) -> Any:
    """The compaction record stored in a thread (a delegation thread too), read as a graph
    that has the `compaction` channel reads it."""
    reader = StateGraph(with_compaction(FullState, Compactor(CompactionSettings(), "reader")))
    reader.add_node("read", lambda state: None)
    reader.add_edge(START, "read")
    saver = await memory.checkpointer()
    thread, ns = split_thread_id(thread_id)
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
    snapshot = await reader.compile(checkpointer=saver).aget_state(namespaced_config(config, saver) if ns else config)
    return snapshot.values.get("compaction") or None


# -- a long conversation ----------------------------------------------------------------


async def test_forty_turns_keep_working_with_compaction_and_fail_without(memory: Memory) -> None:
    thread = {"thread": "long", "resource": "u"}
    summaries = summariser()
    model = windowed(chatty)
    agent = Agent(id="chat", model=model, memory=memory, compaction={**SETTINGS, "model": summaries})
    for turn in range(42):
        result = await agent.generate(question(turn), memory=thread)
        assert result.text.startswith("answer")
    assert all(size(call) <= WINDOW for call in model.calls)
    assert 5 <= len(summaries.calls) <= 20  # one summary every few turns, never one per turn
    # every original message stays in the thread, the summary is no message of it
    stored = await memory.get_messages("long")
    assert len(stored) == 84
    assert [m.content for m in stored if isinstance(m, HumanMessage)] == [question(t) for t in range(42)]
    assert not any(m.additional_kwargs.get(SUMMARY_KWARG) for m in stored)
    assert result.messages[-1].content == result.text
    # the model saw the summary first, then the latest turns as they are
    last = model.calls[-1]
    assert last[0].additional_kwargs.get(SUMMARY_KWARG) and "the user asked" in str(last[0].content)
    assert last[-1].content == question(41)
    record = await record_of(memory, "long")
    assert record["upto"] == stored[record["count"] - 1].id and record["summary"].startswith("the user asked")

    plain = Agent(id="plain", model=windowed(chatty), memory=memory)
    with pytest.raises(ModelCallError):
        for turn in range(42):
            await plain.generate(question(turn), memory={"thread": "plain", "resource": "u"})
    assert turn < 41  # noqa: B007 - it failed before the end


async def test_a_summary_is_stored_with_its_step_and_reused_not_recomputed(memory: Memory) -> None:
    summaries = summariser()

    def build() -> tuple[Agent, ScriptedChatModel]:
        model = windowed(chatty)
        return Agent(id="chat", model=model, memory=memory, compaction={**SETTINGS, "model": summaries}), model

    agent, _ = build()
    turn = 0
    while not summaries.calls:
        await agent.generate(question(turn), memory={"thread": "t", "resource": "u"})
        turn += 1
    record = await record_of(memory, "t")
    assert record is not None and len(summaries.calls) == 1
    # a new agent and graph (as after a restart) reads the summary from the thread, also
    # after a reader that knows only the messages loaded the thread
    compaction_module._RECENT.clear()
    assert len(await memory.get_messages("t")) == 2 * turn
    again, model = build()
    await again.generate(question(turn), memory={"thread": "t", "resource": "u"})
    assert len(summaries.calls) == 1  # reused, not recomputed
    assert str(model.calls[0][0].content).endswith(record["summary"])
    assert await record_of(memory, "t") == record


async def test_the_summary_extends_the_previous_one(memory: Memory) -> None:
    summaries = ScriptedChatModel(policy=lambda m: f"summary {sum('Summary so far' in str(x.content) for x in m)}")
    agent = Agent(id="chat", model=windowed(chatty), memory=memory, compaction={**SETTINGS, "model": summaries})
    for turn in range(20):
        await agent.generate(question(turn), memory={"thread": "t", "resource": "u"})
    assert len(summaries.calls) >= 2
    first, second = summaries.calls[0], summaries.calls[1]
    assert "Summary so far" not in str(first[-1].content)
    assert "Summary so far:\nsummary 0" in str(second[-1].content)  # the earlier summary, then what followed
    assert "question 0 " not in str(second[-1].content)  # turns summarised once are not read again


async def test_the_stream_shows_a_compaction_chunk(memory: Memory) -> None:
    agent = Agent(id="chat", model=windowed(chatty), memory=memory, compaction={**SETTINGS, "model": summariser()})
    chunks = []
    for turn in range(8):
        stream = await agent.stream(question(turn), memory={"thread": "s", "resource": "u"})
        chunks += [c async for c in stream.full_stream if c.type in ("compaction", "text-delta")]
    compactions = [c for c in chunks if c.type == "compaction"]
    assert compactions
    chunk = compactions[0]
    assert chunk.agent_path == ("chat",)
    assert chunk.payload["tokens_before"] > SETTINGS["max_tokens"] >= chunk.payload["tokens_after"]
    assert chunk.payload["summarized_messages"] > 0 and chunk.payload["usage"]["output_tokens"] == 5
    # the summariser's words are not streamed as the agent's text
    assert not any("the user asked" in c.text for c in chunks if c.type == "text-delta")


async def test_under_the_threshold_nothing_is_added() -> None:
    """No summariser call, no `compaction` key, no extra checkpoint."""
    summaries = summariser()
    written: dict[str, int] = {}
    for name, setting in (("off", None), ("on", {**SETTINGS, "model": summaries})):
        memory = Memory(":memory:")
        model = windowed(chatty)
        agent = Agent(id=f"chat-{name}", model=model, memory=memory, compaction=setting)
        for turn in range(3):
            await agent.generate(question(turn), memory={"thread": name, "resource": "u"})
        saver = await memory.checkpointer()
        checkpoints = [c async for c in saver.alist({"configurable": {"thread_id": name}})]
        written[name] = len(checkpoints)
        assert not any(w[1] == "compaction" for c in checkpoints for w in c.pending_writes or ())
        assert await record_of(memory, name) is None
        assert len(model.calls) == 3
    assert not summaries.calls
    assert written["on"] == written["off"]


# -- what is kept --------------------------------------------------------------------------


def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"notes on {topic}: " + "z" * 150


async def test_a_tool_call_and_its_results_are_never_split(memory: Memory) -> None:
    """Turns with one and with parallel tool calls: every model input has each call's
    results after it, and at least the last `keep_last` messages as they are."""

    def policy(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage) and not last.additional_kwargs.get(SUMMARY_KWARG):
            turn = int(str(last.content).split()[1])
            calls = [tool_call("lookup", {"topic": f"t{turn}-{i}"}) for i in range(1 + turn % 3)]
            return calls if len(calls) > 1 else calls[0]
        return "answer " + "x" * 100

    model = windowed(policy)
    agent = Agent(
        id="tooled", model=model, tools=[lookup], memory=memory, compaction={"max_tokens": 600, "keep_last": 3, "model": summariser()}
    )
    for turn in range(30):
        await agent.generate(question(turn), memory={"thread": "tools", "resource": "u"})
    stored = await memory.get_messages("tools")
    assert any(m.additional_kwargs.get(SUMMARY_KWARG) for call in model.calls for m in call)
    for call in model.calls:
        assert not calls_and_results(call), calls_and_results(call)
        assert not isinstance(call[1] if len(call) > 1 else None, ToolMessage)
    assert not calls_and_results(stored)
    # the last three messages of the input the model was given are the thread's last three
    assert [m.id for m in model.calls[-1][-3:]] == [m.id for m in stored[-4:-1]]


def test_the_cut_moves_back_to_keep_a_call_with_its_results() -> None:
    call = AIMessage(content="", id="a", tool_calls=[tool_call("x", id="c1"), tool_call("x", id="c2")])
    history: list[BaseMessage] = [
        HumanMessage(content="q", id="h"),
        call,
        ToolMessage(content="r1", tool_call_id="c1", id="r1"),
        ToolMessage(content="r2", tool_call_id="c2", id="r2"),
        AIMessage(content="done", id="d"),
    ]
    assert choose_cut([], history, keep_last=2) == 1  # not 3: the call goes with both results
    assert choose_cut([], history, keep_last=1) == 4
    assert choose_cut([], history, keep_last=4) == 1
    assert choose_cut([], history, keep_last=5) == 0
    assert choose_cut([], history, keep_last=2, floor=2) == 2  # never less than what is summarised


# -- subagents --------------------------------------------------------------------------


def lookups(n: int = 30) -> Any:
    """A worker's policy: `n` tool calls, one per turn, then its answer."""
    made = 0

    def policy(messages: list[BaseMessage]) -> Any:
        nonlocal made
        made += 1
        return tool_call("lookup", {"topic": f"part {made}"}) if made <= n else "worked"

    return policy


async def test_a_subagent_compacts_its_own_loop(memory: Memory) -> None:
    """A worker that calls a tool many times in one delegation: its input outgrows its
    window unless it compacts; the summary lives in the delegation's thread."""
    summaries = summariser()

    worker_model = windowed(lookups())
    worker = Agent(
        id="worker",
        description="Works.",
        model=worker_model,
        tools=[lookup],
        compaction={**SETTINGS, "model": summaries},
        default_options={"max_steps": 40},
    )
    boss = Agent(
        id="boss",
        model=ScriptedChatModel(policy=lambda m: "done" if isinstance(m[-1], ToolMessage) else delegate("worker", "dig")),
        agents={"worker": worker},
        memory=memory,
    )
    stream = await boss.stream("go", memory={"thread": "sub", "resource": "u"}, max_steps=3)
    chunks = [c async for c in stream.full_stream]
    result = await stream.result()
    assert result.text == "done"
    assert all(size(call) <= WINDOW for call in worker_model.calls)
    assert summaries.calls
    compactions = [c for c in chunks if c.type == "compaction"]
    assert compactions and all(c.agent_path == ("boss", "worker") for c in compactions)
    [delegation] = result.delegations
    assert delegation.text == "worked"
    sub_thread = delegation.sub_agent_thread_id
    assert sub_thread is not None
    stored = await memory.get_messages(sub_thread)
    assert sum(isinstance(m, ToolMessage) for m in stored) == 30  # every original message
    assert size(stored) > WINDOW  # more than the model could have taken at once
    assert (await record_of(memory, sub_thread))["summary"].startswith("the user asked")


async def test_a_subagent_run_as_a_subgraph_compacts_across_delegations(memory: Memory) -> None:
    """`subagent_threads="per_parent_thread"`: the worker keeps one thread and its own
    `compaction` state key; each delegation adds to it."""
    summaries = summariser()
    worker_model = windowed(chatty)
    worker = Agent(
        id="worker", description="Works.", model=worker_model, inherit_context=False, compaction={**SETTINGS, "model": summaries}
    )
    boss = Agent(
        id="boss",
        model=ScriptedChatModel(policy=lambda m: "ok" if isinstance(m[-1], ToolMessage) else delegate("worker", question(0))),
        agents={"worker": worker},
        subagent_threads="per_parent_thread",
        memory=memory,
    )
    for turn in range(15):
        result = await boss.generate(f"turn {turn}", memory={"thread": "stable", "resource": "u"})
        assert result.text == "ok"
    assert summaries.calls and all(size(call) <= WINDOW for call in worker_model.calls)
    sub_thread = result.delegations[0].sub_agent_thread_id
    assert sub_thread is not None
    stored = await memory.get_messages(sub_thread)
    assert len(stored) == 30 and size(stored) > WINDOW
    assert (await record_of(memory, sub_thread)) is not None


async def test_a_subagent_of_a_compacted_agent_inherits_the_summary(memory: Memory) -> None:
    worker_model = ScriptedChatModel(policy=lambda m: "worked")
    worker = Agent(id="worker", description="Works.", model=worker_model)

    def boss_policy(messages: list[BaseMessage]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return "answer " + "x" * 200
        return delegate("worker", "dig") if "delegate" in str(messages[-1].content) else chatty(messages)

    boss = Agent(
        id="boss", model=windowed(boss_policy), agents={"worker": worker}, memory=memory, compaction={**SETTINGS, "model": summariser()}
    )
    for turn in range(15):
        await boss.generate(question(turn), memory={"thread": "inherit", "resource": "u"})
    await boss.generate("now delegate", memory={"thread": "inherit", "resource": "u"})
    seen = worker_model.calls[-1]
    assert seen[0].additional_kwargs.get(SUMMARY_KWARG)  # the parent's summary, then its latest turns
    assert "question 0 " not in " ".join(str(m.content) for m in seen)


async def test_the_compiled_graph_compacts_without_the_facade() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    summaries = summariser()
    model = windowed(chatty)
    agent = Agent(id="chat", model=model, compaction={**SETTINGS, "model": summaries})
    graph = agent.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "g"}}
    for turn in range(20):
        await graph.ainvoke({"messages": [HumanMessage(question(turn))]}, config)
    state = await graph.aget_state(config)
    assert summaries.calls and state.values["compaction"]["summary"].startswith("the user asked")
    assert len(state.values["messages"]) == 40


# -- counting and settings ------------------------------------------------------------------


class Counting(ScriptedChatModel):
    """A model with a counter of its own: one token per word."""

    counted: int = 0

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Any = None) -> int:
        self.counted += 1
        return sum(len(str(m.content).split()) for m in messages)


class Broken(ScriptedChatModel):
    """A model whose counter needs a package that is not installed."""

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Any = None) -> int:
        raise ImportError("tiktoken is not installed")


async def test_a_models_own_counter_is_used_only_near_the_limit() -> None:
    model = Counting(policy=lambda m: "a short answer")
    agent = Agent(id="words", model=model, compaction={"max_tokens": 60, "keep_last": 2, "model": summariser()})
    memory = Memory(":memory:")
    agent.memory = memory
    await agent.generate("hello there", memory={"thread": "w", "resource": "u"})
    assert model.counted == 0  # far under the limit: the byte bound says so, no counting
    for _ in range(12):
        await agent.generate("one two three four five six seven eight nine ten", memory={"thread": "w", "resource": "u"})
    assert model.counted > 0
    assert counter_for(model).model is model
    assert all(sum(len(str(m.content).split()) for m in call) <= 60 + 12 for call in model.calls)


async def test_a_counter_that_cannot_count_falls_back_to_characters() -> None:
    model = Broken(policy=lambda m: "answer " + "x" * 200)
    summaries = summariser()
    agent = Agent(id="broken", model=model, compaction={**SETTINGS, "model": summaries}, memory=Memory(":memory:"))
    for turn in range(12):
        await agent.generate(question(turn), memory={"thread": "b", "resource": "u"})
    assert counter_for(model).approximate
    assert summaries.calls and all(size(call) <= WINDOW for call in model.calls)


def test_four_characters_a_token_without_a_counter() -> None:
    counter = counter_for(ScriptedChatModel())
    assert counter.approximate
    assert counter.exact([HumanMessage("x" * 400), SystemMessage("y" * 41)]) == [100, 11]


async def test_the_agents_own_model_summarises_by_default(memory: Memory) -> None:
    def policy(messages: list[BaseMessage]) -> Any:
        if isinstance(messages[0], SystemMessage) and "condense a conversation" in str(messages[0].content):
            return "my own summary"
        return chatty(messages)

    model = windowed(policy)
    agent = Agent(id="self", model=model, memory=memory, compaction=SETTINGS)
    for turn in range(12):
        await agent.generate(question(turn), memory={"thread": "own", "resource": "u"})
    assert any(str(call[0].content).startswith("You condense") for call in model.calls)
    assert (await record_of(memory, "own"))["summary"] == "my own summary"


async def test_a_failing_summariser_is_a_model_error() -> None:
    agent = Agent(
        id="chat",
        model=windowed(chatty),
        memory=Memory(":memory:"),
        compaction={**SETTINGS, "model": ScriptedChatModel(responses=[RuntimeError("secret provider text")])},
    )
    with pytest.raises(ModelCallError) as caught:
        for turn in range(12):
            await agent.generate(question(turn), memory={"thread": "f", "resource": "u"})
    assert "secret" not in str(caught.value)


def test_settings() -> None:
    agent = Agent(id="a", model=ScriptedChatModel(), compaction=True)
    assert agent.compaction == CompactionSettings(max_tokens=8000, keep_last=6, model=None)
    assert Agent(id="a", model=ScriptedChatModel(), compaction={"max_tokens": 100}).compaction.keep_last == 6  # type: ignore[union-attr]
    for bad in ({"max_tokens": 0}, {"keep_last": -1}, {"max_tokens": "8000"}, {"model": "gpt"}, {"tokens": 5}):
        with pytest.raises(ValidationError):
            Agent(id="a", model=ScriptedChatModel(), compaction=bad)
    summariser_model = ScriptedChatModel()
    assert isinstance(CompactionSettings(model=summariser_model).model, BaseChatModel)


async def test_a_background_task_compacts_too(tmp_path) -> None:
    """A subagent run in the background runs the same nodes: it compacts its loop."""
    summaries = summariser()

    worker_model = windowed(lookups())
    worker = Agent(
        id="worker",
        description="Works.",
        model=worker_model,
        tools=[lookup],
        compaction={**SETTINGS, "model": summaries},
        default_options={"max_steps": 40},
    )

    def boss_policy(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage) and "[Background task" in str(last.content):
            return "reported"
        return "started" if isinstance(last, ToolMessage) else delegate("worker", "dig")

    boss = Agent(
        id="boss",
        model=ScriptedChatModel(policy=boss_policy),
        agents={"worker": worker},
        background_tasks={"tools": {"worker": {}}},
        memory=Memory(f"file:{tmp_path / 'bg.db'}"),
    )
    stream = await boss.stream_until_idle("go", memory={"thread": "bg", "resource": "u"})
    chunks = [c async for c in stream.full_stream]
    assert summaries.calls and all(size(call) <= WINDOW for call in worker_model.calls)
    assert any(c.type == "background-task-completed" for c in chunks)


async def test_the_summarisers_tokens_count_against_a_budget() -> None:
    """A turn of two model calls fits a budget of 100 tokens (15 a call); the turn whose
    first call compacts (long questions, short answers: a new question crosses the
    threshold) also pays the summariser's 1,005 tokens and stops before its second call."""

    def ping() -> str:
        """Ping."""
        return "pong"

    def policy(messages: list[BaseMessage]) -> Any:
        return "ok" if isinstance(messages[-1], ToolMessage) else tool_call("ping", {})

    summaries = ScriptedChatModel(policy=lambda m: "short", input_tokens=1000)
    agent = Agent(
        id="budgeted", model=windowed(policy), tools=[ping], memory=Memory(":memory:"), compaction={**SETTINGS, "model": summaries}
    )
    reasons = []
    while not summaries.calls:
        prompt = f"question {len(reasons)} " + "y" * 800
        result = await agent.generate(prompt, memory={"thread": "b", "resource": "u"}, budget={"tokens": 100})
        reasons.append(result.finish_reason)
    assert reasons[-1] == "budget" and set(reasons[:-1]) == {"stop"}
