"""Time travel across the delegation tree (SPEC §34): LangGraph's own operations on the
compiled graph (an edited delegation call runs, an edited result is read), the facade's
`history` / `memory={..., "checkpoint": ...}` / `edit=`, and the CLI's."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from supervisor_graph import Agent, Memory
from supervisor_graph.cli.main import main
from supervisor_graph.testing import ScriptedChatModel, delegate


def _lead(messages):
    last = messages[-1]
    if isinstance(last, HumanMessage):
        return delegate("research", f"topic {last.content}")
    return f"done: {last.content}" if isinstance(last, ToolMessage) else "?"


def _remembers(messages):
    return "saw " + " | ".join(m.content for m in messages if isinstance(m, HumanMessage))


def team(memory: Memory | None = None, threads: str = "per_parent_thread") -> Agent:
    research = Agent(id="research", description="Looks up topics.", model=ScriptedChatModel(policy=_remembers), inherit_context=False)
    return Agent(
        id="lead",
        model=ScriptedChatModel(policy=_lead),
        agents={"research": research},
        subagent_threads=threads,  # type: ignore[arg-type]
        memory=memory,
    )


# -- LangGraph's operations on the compiled graph ----------------------------------------


async def _first(graph, config, found):
    async for snapshot in graph.aget_state_history(config):
        if found(snapshot):
            return snapshot
    raise AssertionError("no such checkpoint")


@pytest.mark.parametrize("threads", ["per_delegation", "per_parent_thread"])
async def test_an_edited_delegation_call_runs_with_its_new_prompt(threads: str) -> None:
    graph = team(threads=threads).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"messages": [HumanMessage("A")]}, config)
    waiting = await _first(graph, config, lambda s: s.next == ("research",))
    call = waiting.values["messages"][-1]
    edited = call.model_copy(update={"tool_calls": [{**call.tool_calls[0], "args": {"prompt": "topic EDITED"}}]})

    forked = await graph.aupdate_state(waiting.config, {"messages": [edited]}, as_node="supervisor")
    assert (await graph.aget_state(forked)).next == ("research",)
    values = await graph.ainvoke(None, forked)
    assert values["messages"][-1].content == "done: saw topic EDITED"
    assert [m.content for m in values["messages"] if isinstance(m, HumanMessage)] == ["A"]


@pytest.mark.parametrize("as_node", [None, "supervisor", "research"])
async def test_an_edited_result_is_what_the_supervisor_reads(as_node: str | None) -> None:
    graph = team().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"messages": [HumanMessage("A")]}, config)
    read = await _first(graph, config, lambda s: isinstance(s.values["messages"][-1], ToolMessage))
    result = read.values["messages"][-1].model_copy(update={"content": "RESULT EDITED"})

    forked = await graph.aupdate_state(read.config, {"messages": [result]}, as_node=as_node)
    assert (await graph.aget_state(forked)).next == ("supervisor",)
    values = await graph.ainvoke(None, forked)
    assert values["messages"][-1].content == "done: RESULT EDITED"


async def test_a_replay_and_the_history_with_subgraphs() -> None:
    graph = team().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"messages": [HumanMessage("A")]}, config)
    history = [s async for s in graph.aget_state_history(config)]
    before = next(s for s in history if s.next == ("research",))
    replayed = await graph.ainvoke(None, before.config)  # the delegation runs again, once
    assert replayed["messages"][-1].content == "done: saw topic A"
    state = await graph.aget_state(config, subgraphs=True)
    assert state.values["messages"][-1].content == "done: saw topic A"


async def test_the_routes_after_outside_updates_cost_a_run_nothing() -> None:
    # every node's run returns a Command: the added routes write nothing, so the checkpoint
    # count per delegation is what it was (3: the call, the result, the answer)
    graph = team(threads="per_delegation").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"messages": [HumanMessage("A")]}, config)
    assert [s.metadata["source"] async for s in graph.aget_state_history(config)] == ["loop", "loop", "loop", "loop", "input"]


# -- the facade ---------------------------------------------------------------------------


async def test_history_lists_checkpoints_and_a_fork_sees_the_subagent_as_it_was(tmp_path) -> None:
    agent = team(Memory(f"file:{tmp_path / 'm.db'}"))
    memory = {"thread": "t"}
    await agent.generate("A", memory=memory)
    after_a = await agent.history(memory=memory)
    assert [e["step"] for e in after_a] == sorted((e["step"] for e in after_a), reverse=True)
    entry = after_a[0]
    assert set(entry) >= {"checkpoint_id", "created_at", "step", "messages", "delegations"}
    [done] = [d for e in after_a for d in e["delegations"]]
    assert done["agent_id"] == "research" and done["prompt"] == "topic A" and done["text"] == "saw topic A"
    assert (await agent.generate("B", memory=memory)).text == "done: saw topic A | topic B"

    fork = await agent.generate("C", memory={**memory, "checkpoint": entry["checkpoint_id"]})
    assert fork.text == "done: saw topic A | topic C"
    assert (await agent.generate("D", memory=memory)).text == "done: saw topic A | topic C | topic D"  # the fork is latest
    assert len(await agent.history(memory=memory, limit=3)) == 3
    await agent.memory.aclose()


async def test_an_unknown_or_foreign_checkpoint_is_refused_and_nothing_is_written(tmp_path) -> None:
    agent = team(Memory(f"file:{tmp_path / 'm.db'}"))
    await agent.generate("A", memory={"thread": "mine"})
    await agent.generate("A", memory={"thread": "other"})
    foreign = (await agent.history(memory={"thread": "other"}))[0]["checkpoint_id"]
    before = len(await agent.history(memory={"thread": "mine"}))
    for checkpoint in ("no-such-checkpoint", foreign):
        with pytest.raises(ValueError, match="is not a checkpoint of thread 'mine'"):
            await agent.generate("X", memory={"thread": "mine", "checkpoint": checkpoint})
    assert len(await agent.history(memory={"thread": "mine"})) == before
    assert (await agent.generate("B", memory={"thread": "mine"})).text.startswith("done: ")  # the thread was given back
    await agent.memory.aclose()


async def test_edit_runs_a_delegation_again_with_a_new_prompt(tmp_path) -> None:
    agent = team(Memory(f"file:{tmp_path / 'm.db'}"))
    memory = {"thread": "t"}
    await agent.generate("A", memory=memory)
    await agent.generate("B", memory=memory)
    b_call = next(d for e in await agent.history(memory=memory) for d in e["delegations"] if d["prompt"] == "topic B")

    rerun = await agent.generate(None, memory=memory, edit={"tool_call_id": b_call["tool_call_id"], "prompt": "topic B2"})
    assert rerun.text == "done: saw topic A | topic B2"  # the subagent as it was before the call
    stream = await agent.stream(None, memory=memory, edit={"tool_call_id": b_call["tool_call_id"], "prompt": "topic B3"})
    assert (await stream.result()).text == "done: saw topic A | topic B3"
    with pytest.raises(ValueError, match="no call 'nope' waits to run"):
        await agent.generate(None, memory=memory, edit={"tool_call_id": "nope", "prompt": "x"})
    with pytest.raises(ValueError, match="pass memory="):
        await agent.generate(None, edit={"tool_call_id": "nope", "prompt": "x"})
    await agent.memory.aclose()


# -- the CLI --------------------------------------------------------------------------------

the_team = team()


def test_cli_history_and_run_from_a_checkpoint(tmp_path, capsys) -> None:
    target, db = f"{__file__}:the_team", str(tmp_path / "cli.db")
    assert main(["run", target, "A", "--thread", "t", "--db", db, "--json"]) == 0
    assert main(["run", target, "B", "--thread", "t", "--db", db, "--json"]) == 0
    capsys.readouterr()
    assert main(["history", target, "--thread", "t", "--db", db, "--json"]) == 0
    import json

    entries = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    after_a = next(e for e in entries if e["messages"] and e["messages"][-1]["content"] == "done: saw topic A")
    assert main(["run", target, "C", "--thread", "t", "--db", db, "--checkpoint", after_a["checkpoint_id"], "--json"]) == 0
    assert "saw topic A | topic C" in capsys.readouterr().out
    assert main(["run", target, "C", "--thread", "t", "--db", db, "--checkpoint", "nope"]) == 2
    assert "is not a checkpoint of thread 't'" in capsys.readouterr().err
    assert main(["history", target, "--thread", "t", "--db", db, "--limit", "2"]) == 0
    assert capsys.readouterr().out.count("step ") == 2
