"""A per-parent-thread subagent forks with its parent (SPEC §34, nodes/delegation/lineage.py):
a run forked from checkpoint X sees the subagent as it was at X, and the branch it left
stays as it was and can be continued."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from supervisor_graph import Agent
from supervisor_graph.nodes.delegation.lineage import CHECKPOINT_KEY
from supervisor_graph.nodes.state import FEEDBACK_MARK
from supervisor_graph.nodes.steps.working_memory import WorkingMemory
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


def _lead(messages):
    last = messages[-1]
    if isinstance(last, HumanMessage):
        topics = last.content.split(",")
        return [delegate("research", f"topic {t}") for t in topics] if len(topics) > 1 else delegate("research", f"topic {last.content}")
    if isinstance(last, ToolMessage):  # this turn's results
        turn = messages[max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage)) :]
        return "done: " + " / ".join(m.content for m in turn if isinstance(m, ToolMessage))
    return "?"


def _remembers(messages):
    """What the subagent's own thread holds (it inherits nothing)."""
    return "saw " + " | ".join(m.content for m in messages if isinstance(m, HumanMessage))


def _team(research_model=None, **research) -> Agent:
    sub = Agent(
        id="research",
        description="Looks up topics.",
        model=research_model or ScriptedChatModel(policy=_remembers),
        inherit_context=False,
        **research,
    )
    return Agent(id="lead", model=ScriptedChatModel(policy=_lead), agents={"research": sub}, subagent_threads="per_parent_thread")


async def _turn(graph, config, text: str) -> str:
    values = await graph.ainvoke({"messages": [HumanMessage(text)]}, config)
    return values["messages"][-1].content


async def test_a_fork_sees_the_subagent_as_it_was_and_the_old_branch_goes_on_unchanged() -> None:
    graph = _team().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    assert await _turn(graph, config, "A") == "done: saw topic A"
    after_a = (await graph.aget_state(config)).config
    assert await _turn(graph, config, "B") == "done: saw topic A | topic B"
    old_head = (await graph.aget_state(config)).config

    assert await _turn(graph, after_a, "C") == "done: saw topic A | topic C"  # B was abandoned
    assert await _turn(graph, old_head, "D") == "done: saw topic A | topic B | topic D"  # C leaked nowhere
    # the thread's latest branch is the one just continued
    assert await _turn(graph, config, "E") == "done: saw topic A | topic B | topic D | topic E"


async def test_each_result_names_the_subagent_checkpoint_it_ended_at() -> None:
    graph = _team().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    await _turn(graph, config, "A")
    [result] = [m for m in (await graph.aget_state(config)).values["messages"] if isinstance(m, ToolMessage)]
    pointer = result.artifact[CHECKPOINT_KEY]
    sub = await graph.checkpointer.aget_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": "research", "checkpoint_id": pointer}})
    assert sub is not None  # a checkpoint of the subagent's own namespace in the parent's thread


async def test_a_turn_without_the_subagent_does_not_move_its_lineage() -> None:
    # time-ordered lookups would hand a later branch's subagent to this one
    def lead(messages):
        last = messages[-1]
        if isinstance(last, HumanMessage) and last.content == "chat":
            return "just chatting"
        return _lead(messages)

    sub = Agent(id="research", description="r", model=ScriptedChatModel(policy=_remembers), inherit_context=False)
    graph = Agent(
        id="lead", model=ScriptedChatModel(policy=lead), agents={"research": sub}, subagent_threads="per_parent_thread"
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    await _turn(graph, config, "A")
    after_a = (await graph.aget_state(config)).config
    await _turn(graph, after_a, "C")  # a fork that tells the subagent C
    assert await _turn(graph, after_a, "chat") == "just chatting"  # another fork: no delegation
    assert await _turn(graph, config, "D") == "done: saw topic A | topic D"  # continues the "chat" fork


async def test_parallel_delegations_to_it_take_turns_in_one_lineage() -> None:
    graph = _team().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    answer = await _turn(graph, config, "A,B")
    assert "saw topic A | topic B" in answer or "saw topic B | topic A" in answer  # the second saw the first
    assert (await _turn(graph, config, "C")).endswith("| topic C") and "topic A" in answer


async def test_its_thread_scoped_working_memory_forks_too() -> None:
    def notes(messages):
        # the value follows the conversation, in a notice of its own (issue 51)
        notice = messages[-1]
        assert notice.additional_kwargs.get(FEEDBACK_MARK) == "notice"
        shown = re.search(r"<working_memory>\n(.*)\n</working_memory>", notice.content, re.S).group(1)
        last = messages[-2]
        if isinstance(last, HumanMessage):
            return tool_call("update_working_memory", {"memory": f"{shown.strip()} {last.content.split()[-1]}".strip()})
        return f"memory: {shown.strip()}"

    memory = WorkingMemory(scope="thread", template="")
    graph = _team(ScriptedChatModel(policy=notes), working_memory=memory).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    assert await _turn(graph, config, "A") == "done: memory: A"
    after_a = (await graph.aget_state(config)).config
    assert await _turn(graph, config, "B") == "done: memory: A B"
    assert await _turn(graph, after_a, "C") == "done: memory: A C"


async def test_a_pause_in_the_subagent_resumes_where_it_stopped() -> None:
    from langgraph.types import Command
    from pydantic import BaseModel

    from supervisor_graph import create_tool

    calls = []

    class Amount(BaseModel):
        amount: int

    pay = create_tool(id="pay", description="Pay.", input_schema=Amount, execute=lambda a: calls.append(a.amount) or "paid", require_approval=True)

    def research(messages):
        last = messages[-1]
        if isinstance(last, HumanMessage) and last.content == "topic A":
            return tool_call("pay", {"amount": 5})
        return _remembers(messages)

    graph = _team(ScriptedChatModel(policy=research), tools=[pay]).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    paused = await graph.ainvoke({"messages": [HumanMessage("A")]}, config)
    assert "__interrupt__" in paused
    [item] = paused["__interrupt__"]
    values = await graph.ainvoke(Command(resume={item.id: {"approved": True}}), config)
    assert calls == [5] and values["messages"][-1].content == "done: saw topic A"
    assert await _turn(graph, config, "B") == "done: saw topic A | topic B"  # its lineage went on from the resumed run


# -- replays and edits: LangGraph calls them resumes, the subagent follows its branch --


async def _a_then_b(graph: Any, config: Any) -> tuple[Any, Any]:
    """Turns A and B on the thread: the config after A and the head after B."""
    await _turn(graph, config, "A")
    after_a = (await graph.aget_state(config)).config
    await _turn(graph, config, "B")
    return after_a, (await graph.aget_state(config)).config


async def test_an_edited_delegation_after_a_fork_runs_in_its_own_branch() -> None:
    graph = _team().compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    after_a, head = await _a_then_b(graph, config)
    await graph.ainvoke({"messages": [HumanMessage("C")]}, after_a)  # a fork: its subagent checkpoint is newer than B's
    out = await graph.ainvoke({"messages": [HumanMessage("D")]}, head)
    assert out["messages"][-1].content == "done: saw topic A | topic B | topic D"
    before = next(s for s in [s async for s in graph.aget_state_history(config)] if s.next == ("research",))
    call = before.values["messages"][-1]
    edited = call.model_copy(update={"tool_calls": [{**call.tool_calls[0], "args": {"prompt": "topic EDITED"}}]})
    new = await graph.aupdate_state(before.config, {"messages": [edited]}, as_node="supervisor")
    out = await graph.ainvoke(None, new)
    # the edited prompt, as a new turn of D's branch: nothing of C, nor of D's first run
    assert out["messages"][-1].content == "done: saw topic A | topic B | topic EDITED"


async def test_a_replay_of_a_forks_delegation_runs_it_again_in_the_fork() -> None:
    graph = _team().compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    after_a, _ = await _a_then_b(graph, config)
    await graph.ainvoke({"messages": [HumanMessage("C")]}, after_a)
    # the newest: the fork's delegation; B's subagent checkpoint is older than it
    before_c = next(s for s in [s async for s in graph.aget_state_history(config)] if s.next == ("research",))
    out = await graph.ainvoke(None, before_c.config)
    assert out["messages"][-1].content == "done: saw topic A | topic C"
