"""The research-and-write example and the graph `langgraph.json` serves (SPEC §15-16)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

from supervisor_graph import Agent, Memory
from supervisor_graph.examples import research_write
from supervisor_graph.examples.research_write import PUBLISH_PROMPT, build_agents, topic_of

ROOT = Path(__file__).resolve().parents[2]


async def test_research_then_writing_then_the_article() -> None:
    stream = await build_agents().stream("Research AI in education and write an article", max_steps=10)
    chunks = [chunk async for chunk in stream.full_stream]
    result = await stream.result()

    starts = [c.payload for c in chunks if c.type == "delegation-start"]
    done = [c.payload for c in chunks if c.type == "delegation-complete"]
    assert [p["agent_key"] for p in starts] == ["research_agent", "writing_agent"]
    assert [p["agent_id"] for p in done] == ["research-agent", "writing-agent"]
    assert all(p["success"] for p in done)
    research, article = done[0]["text"], done[1]["text"]
    # research got a prompt derived from the request and answered with bullets on the topic
    assert "AI in education" in starts[0]["prompt"]
    bullets = [line for line in research.splitlines() if line.startswith("- ")]
    assert len(bullets) >= 3 and all("AI in education" in b for b in bullets)
    # writing got the research verbatim and built the article from it
    assert research in starts[1]["prompt"]
    assert article.startswith("# AI in education")
    assert "Cost, fairness and evidence of long-term impact" in article
    # the supervisor answered with the article
    assert result.finish_reason == "stop"
    assert article in result.text and result.text.startswith("Here is your article on AI in education.")
    assert result.usage.total_tokens == 6 * 15  # four supervisor turns (one notes the topic), two subagent turns
    [noted] = [c.payload for c in chunks if c.type == "tool-result" and c.payload["tool_name"] == "update_working_memory"]
    assert noted["working_memory"]["value"].endswith("- Topics:\n  - AI in education\n")
    order = [c.type for c in chunks if c.type.startswith("delegation")]
    assert order == ["delegation-start", "delegation-complete"] * 2


async def test_each_turn_of_a_thread_starts_from_its_own_request() -> None:
    memory = Memory(storage=":memory:")
    agent = build_agents(memory=memory)
    first = await agent.generate("Research bees", memory={"thread": "t"})
    second = await agent.generate("Write an article about owls", memory={"thread": "t"})
    assert first.text.startswith("Here is your article on bees.")
    assert second.text.startswith("Here is your article on owls.")
    assert [type(m) for m in second.messages].count(ToolMessage) == 3  # two delegations, one working-memory note
    stored = await memory.get_messages("t")
    assert [m.content for m in stored if isinstance(m, HumanMessage)] == [
        "Research bees",
        "Write an article about owls",
    ]
    await memory.aclose()


def test_a_model_string_reaches_every_agent_and_needs_no_key_to_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    parent = build_agents("openai/gpt-5-mini")
    assert parent.model == "openai/gpt-5-mini"
    assert {key: sub.model for key, sub in parent.agents.items()} == {
        "research_agent": "openai/gpt-5-mini",
        "writing_agent": "openai/gpt-5-mini",
    }
    assert all(isinstance(a.instructions, str) and a.instructions for a in [parent, *parent.agents.values()])


def test_declaration() -> None:
    parent = research_write.agent
    assert isinstance(parent, Agent) and parent.id == "parent-agent"
    assert {key: sub.id for key, sub in parent.agents.items()} == {
        "research_agent": "research-agent",
        "writing_agent": "writing-agent",
    }
    assert all(sub.description for sub in parent.agents.values())


@pytest.mark.parametrize(
    ("request_text", "topic"),
    [
        ("Research AI in education and write a short article about it.", "AI in education"),
        ("research quantum computing, then write a post", "quantum computing"),
        ("Write an article about honeybees", "honeybees"),
        ("Tell me about owls!", "owls"),
        ("Solar power in cities", "Solar power in cities"),
        ("Research bees, write an article and publish it.", "bees"),
        ("Write an article about honeybees and publish it", "honeybees"),
        ("Research owls and publish an article", "owls"),
    ],
)
def test_topic_of(request_text: str, topic: str) -> None:
    assert topic_of(request_text) == topic


async def test_publishing_waits_for_approval() -> None:
    agent = build_agents()
    paused = await agent.generate(PUBLISH_PROMPT)
    assert paused.finish_reason == "suspended" and paused.text == ""
    (item,) = paused.suspended
    assert (item.kind, item.tool_name, item.agent_path) == ("approval", "publish", ("parent-agent",))
    assert item.args["title"] == "AI in education: what we know"
    assert item.args["article"].startswith("# AI in education: what we know")
    assert agent.tools["publish"].metadata["require_approval"] is True

    done = await agent.approve_tool_call(run_id=paused.run_id, interrupt_id=item.interrupt_id)
    assert done.finish_reason == "stop"
    assert done.text.startswith("Here is your article on AI in education.")
    assert done.text.endswith("Published 'AI in education: what we know' at /blog/ai-in-education-what-we-know (93 words).")
    assert done.usage.total_tokens == 7 * 15  # five supervisor turns (one notes the topic), two subagent turns

    paused = await agent.generate(PUBLISH_PROMPT)
    declined = await agent.decline_tool_call(run_id=paused.run_id, interrupt_id=paused.suspended[0].interrupt_id)
    assert declined.text.endswith("Not published: The user declined this tool call; it did not run.")


async def test_hooks_feedback_and_rejections_do_not_confuse_the_scripted_parent() -> None:
    agent = build_agents()
    with_feedback = await agent.generate(
        "Research bees", delegation={"on_delegation_complete": lambda ctx: {"feedback": "Be brief."}}
    )
    assert with_feedback.text.startswith("Here is your article on bees.")
    assert len(with_feedback.delegations) == 2  # feedback is not a new request

    def reject_writing(ctx: object) -> dict[str, object] | None:
        return {"proceed": False, "rejection_reason": "not today"} if "writing" in ctx.primitive_id else None  # type: ignore[attr-defined]

    rejected = await agent.generate("Research bees", delegation={"on_delegation_start": reject_writing})
    assert rejected.text == "Sorry, I could not finish the article on bees: [Delegation Rejected] not today"


def test_a_failed_step_gets_an_apology_not_a_loop() -> None:
    failed = ToolMessage(
        content="[Delegation Failed] research-agent could not complete the task.",
        tool_call_id="c1",
        name="agent-research_agent",
        status="error",
    )
    reply = research_write._parent_policy([HumanMessage(content="Research bees"), failed])
    assert isinstance(reply, str) and reply.startswith("Sorry, I could not finish the article on bees")


def test_module_graph_is_compiled_without_a_checkpointer(example_nodes: set[str]) -> None:
    graph = research_write.graph
    assert isinstance(graph, CompiledStateGraph)
    assert graph.checkpointer is None
    assert example_nodes <= set(graph.get_graph().nodes)
    assert graph is not research_write.agent.graph  # its own agents: Studio and the CLI do not share models


async def test_module_graph_runs_like_studio_runs_it() -> None:
    """The platform invokes the bare graph with its own checkpointer and no run context."""
    config = {"configurable": {"thread_id": "studio"}}
    graph = research_write.graph.copy(update={"checkpointer": InMemorySaver()})
    out = await graph.ainvoke({"messages": [{"role": "user", "content": "Research bees"}]}, config)
    assert out["messages"][-1].content.startswith("Here is your article on bees.")
    out = await graph.ainvoke({"messages": [{"role": "user", "content": "Research owls"}]}, config)
    assert out["messages"][-1].content.startswith("Here is your article on owls.")
    assert sum(isinstance(m, HumanMessage) for m in out["messages"]) == 2


def test_langgraph_json_points_at_the_module_graph(example_nodes: set[str]) -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["dependencies"] == ["."]
    assert config["python_version"] == "3.11"
    path, _, attr = config["graphs"]["supervisor"].rpartition(":")
    spec = importlib.util.spec_from_file_location("_studio_entry", ROOT / path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    graph = getattr(module, attr)
    assert isinstance(graph, CompiledStateGraph) and graph.checkpointer is None
    assert example_nodes <= set(graph.get_graph().nodes)
