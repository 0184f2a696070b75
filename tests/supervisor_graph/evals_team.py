"""Scripted teams the evaluation tests run cases against: parallel and nested
delegations, tools at every level, an approval, a scorer; importable by path
(`tests.supervisor_graph.evals_team:team`) for the command-line tests."""

from __future__ import annotations

import itertools
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from supervisor_graph import Agent, create_scorer, create_tool
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


class Topic(BaseModel):
    topic: str


class Post(BaseModel):
    title: str


def _turn(messages: list[BaseMessage]) -> tuple[str, dict[str, ToolMessage]]:
    """The latest user message and the tool results after it, by tool name."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return str(messages[i].content), {m.name or "": m for m in messages[i + 1 :] if isinstance(m, ToolMessage)}
    return "", {}


def _fact(messages: list[BaseMessage]) -> Any:
    prompt, done = _turn(messages)
    return "checked" if "lookup" in done else tool_call("lookup", {"topic": prompt.split()[-1]})


def _research(messages: list[BaseMessage]) -> Any:
    prompt, done = _turn(messages)
    topic = prompt.split()[-1]
    if "lookup" not in done:
        return tool_call("lookup", {"topic": topic})
    if "agent-fact_agent" not in done:
        return delegate("fact_agent", f"check {topic}")
    return f"- {topic} facts"


def _parent(messages: list[BaseMessage]) -> Any:
    request, done = _turn(messages)
    topic = request.split()[-1]
    if "agent-research_agent" not in done:  # research and writing at once, in one turn
        return AIMessage(content="", tool_calls=[delegate("research_agent", f"Find facts on {topic}"), delegate("writer_agent", f"Outline {topic}")])
    if "publish" in request and "publish" not in done:
        return tool_call("publish", {"title": topic.title()})
    if "publish" in done:
        return f"Done: {done['publish'].content}"
    return f"Done with {topic}."


def build_team() -> Agent:
    lookup = create_tool(id="lookup", description="Look up.", input_schema=Topic, execute=lambda t: f"facts on {t.topic}")
    publish = create_tool(
        id="publish", description="Publish.", input_schema=Post, execute=lambda p: f"published {p.title}", require_approval=True
    )
    fact = Agent(id="fact-agent", description="Checks facts.", model=ScriptedChatModel(policy=_fact), tools={"lookup": lookup})
    research = Agent(
        id="research-agent",
        description="Finds facts.",
        model=ScriptedChatModel(policy=_research),
        tools={"lookup": lookup},
        agents={"fact_agent": fact},
    )
    writer = Agent(id="writer-agent", description="Writes.", model=ScriptedChatModel(policy=lambda m: "An outline"))
    return Agent(
        id="parent-agent",
        model=ScriptedChatModel(policy=_parent),
        agents={"research_agent": research, "writer_agent": writer},
        tools={"lookup": lookup, "publish": publish},
    )


team = build_team()

_flips = itertools.count()
# passes every other time it is asked (the repeat tests' flaky case)
flaky = Agent(id="flaky", model=ScriptedChatModel(policy=lambda m: "yes" if next(_flips) % 2 == 0 else "no"))

mentions_done = create_scorer(id="mentions-done").generate_score(lambda ctx: 1.0 if "Done" in ctx.run.output else 0.0)
_votes = itertools.cycle([1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
# a judge that changes its mind on every sample
wavering = create_scorer(id="wavering").generate_score(lambda ctx: next(_votes))
not_a_scorer = 42
