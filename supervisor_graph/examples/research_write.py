"""The research-and-write supervisor: a parent agent that delegates research, then
writing, then answers with the article (SPEC §15-16).

`build_agents()` builds it on a scripted demo model that needs no key and no network;
`build_agents("openai/gpt-5-mini")` builds the same agents on a real model.

When the request asks for it ("... and publish it"), the parent also calls its
`publish` tool, which needs a person's approval (`require_approval=True`): the run
pauses with a `tool-call-approval` chunk (an `interrupt()` on the thread) until someone
approves or declines.

Example:
    >>> from supervisor_graph.examples.research_write import build_agents
    >>> result = build_agents().generate_sync("Research AI in education and write an article")
    >>> result.text.splitlines()[0]
    'Here is your article on AI in education.'

`graph` (compiled without a checkpointer, as LangGraph Studio wants) is what
`langgraph.json` serves; `agent` is what `supervisor-graph run` and `draw` take:
`supervisor-graph run supervisor_graph.examples.research_write:agent "..."`.

The parent keeps a working memory (SPEC §8): the topics it has written about for this
user (the thread's id stands in for the user where runs name no resource). It notes
each new topic with `update_working_memory` before answering; Studio and the demo show
the update, and the AG-UI bridge sends it as shared state.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from supervisor_graph.agent import Agent
from supervisor_graph.declaration.tools import create_tool
from supervisor_graph.memory.memory import Memory
from supervisor_graph.nodes.state import is_run_input
from supervisor_graph.nodes.steps.working_memory import WorkingMemory
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

__all__ = ["DEFAULT_PROMPT", "PUBLISH_PROMPT", "agent", "build_agents", "graph", "publish_tool"]

DEFAULT_PROMPT = "Research AI in education and write a short article about it."
PUBLISH_PROMPT = "Research AI in education, write a short article and publish it."

RESEARCH_KEY = "research_agent"
WRITING_KEY = "writing_agent"
PUBLISH = "publish"

PARENT_INSTRUCTIONS = """You coordinate two specialists to answer the user's request.
1. Call agent-research_agent with a prompt naming the topic and asking for bullet points.
2. Call agent-writing_agent with a prompt that contains the research notes verbatim and asks for a short article.
3. Only if the user asks for it, call publish with the article's title and text (a person approves it first).
4. If the topic is not yet listed in your working memory, add it with update_working_memory.
5. Answer the user with the article, unchanged, after one introductory sentence; say whether it was published.
Do not write the article yourself and do not skip the research step."""

ARTICLES_TEMPLATE = "# Articles written for this user\n- Topics:\n"
_MEMORY = re.compile(r"<working_memory>\n(.*)\n</working_memory>", re.DOTALL)

RESEARCH_INSTRUCTIONS = """You are a careful researcher. Answer with 3 to 5 bullet points (lines starting with "- "),
each one factual, specific and at most two sentences long. No introduction and no conclusion."""

WRITING_INSTRUCTIONS = """You are a clear, engaging writer. Turn the research notes in the request into a short
article (a Markdown title and two or three paragraphs, under 300 words). Use only facts from the notes."""


class PublishInput(BaseModel):
    title: str = Field(description="The article's title.")
    article: str = Field(description="The article, in Markdown.")


def _publish(args: PublishInput) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", args.title.lower()).strip("-") or "article"
    return f"Published {args.title!r} at /blog/{slug} ({len(args.article.split())} words)."


def publish_tool() -> BaseTool:
    """The `publish` tool: pretends to post the article (offline); needs approval."""
    return create_tool(
        id=PUBLISH,
        description="Publish a finished article on the blog. A person approves each call before it runs.",
        input_schema=PublishInput,
        execute=_publish,
        require_approval=True,
    )


def build_agents(model: str | None = None, memory: Memory | None = None, *, latency: float = 0.0) -> Agent:
    """The parent agent with its `research_agent` and `writing_agent` subagents and its
    `publish` tool (which needs approval, and is called only when the request asks to publish).

    Args:
        model: `"openai/<name>"` for every agent, or None for the offline scripted demo.
        memory: the parent's `Memory` (needed to continue threads).
        latency: seconds each scripted model call takes (makes the demo look like a
            provider); ignored with a real model.
    """

    def scripted(policy: Any, name: str) -> ScriptedChatModel:
        return ScriptedChatModel(policy=policy, latency=latency, model_name=name)

    research = Agent(
        id="research-agent",
        description="Gathers factual information and returns bullet-point summaries.",
        instructions=RESEARCH_INSTRUCTIONS,
        model=model or scripted(_research_policy, "scripted-research"),
    )
    writing = Agent(
        id="writing-agent",
        description="Writes a short, readable article from research notes given in the prompt.",
        instructions=WRITING_INSTRUCTIONS,
        model=model or scripted(_writing_policy, "scripted-writing"),
    )
    return Agent(
        id="parent-agent",
        description="Researches a topic and writes a short article about it.",
        instructions=PARENT_INSTRUCTIONS,
        model=model or scripted(_parent_policy, "scripted-parent"),
        agents={RESEARCH_KEY: research, WRITING_KEY: writing},
        tools={PUBLISH: publish_tool()},
        memory=memory,
        default_options={"max_steps": 10},
        working_memory=WorkingMemory(scope="resource", template=ARTICLES_TEMPLATE),
    )


# -- the scripted demo model ------------------------------------------------------

_REQUEST = re.compile(
    r"^(?:please\s+)?(?:research|investigate|look\s+into|tell\s+me\s+about|"
    r"write\s+(?:me\s+)?(?:an?\s+)?(?:short\s+)?(?:article|post|piece|essay)\s+(?:about|on))\s+"
    r"(?P<topic>.+?)(?:\s*(?:,|and)\s+(?:then\s+)?(?:write|publish)\b.*)?$",
    re.IGNORECASE | re.DOTALL,
)
_PUBLISH = re.compile(r"\bpublish", re.IGNORECASE)
_RESEARCH_PROMPT = "Gather the key facts about {topic}. Answer with 3 to 5 short bullet points."
_WRITING_PROMPT = "Write a short article about {topic} using these research notes:\n{notes}"


def topic_of(request: str) -> str:
    """The topic of a request: "Research AI in education and write an article" -> "AI in education"."""
    text = " ".join(request.split()).rstrip(".!?")
    match = _REQUEST.match(text)
    topic = match.group("topic") if match else text
    return topic[:80].rstrip() or "the topic"


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else str(message.content)


def _last_request(messages: list[BaseMessage]) -> tuple[str, list[BaseMessage]]:
    """The latest user message and what followed it (feedback from hooks and scorers is
    part of the turn, not a new request)."""
    for i in range(len(messages) - 1, -1, -1):
        if is_run_input(messages[i]):
            return _text(messages[i]), messages[i + 1 :]
    return "", messages


def _working_memory(messages: list[BaseMessage]) -> str | None:
    """The working memory shown after the conversation (None: the agent has none)."""
    if messages:
        found = _MEMORY.search(_text(messages[-1]))
        if found:
            return found.group(1)
    return None


def _parent_policy(messages: list[BaseMessage]) -> Any:
    request, turn = _last_request(messages)
    topic = topic_of(request)
    results = {m.name: m for m in turn if isinstance(m, ToolMessage)}
    research = results.get(f"agent-{RESEARCH_KEY}")
    writing = results.get(f"agent-{WRITING_KEY}")
    for step in (research, writing):
        if step is not None and (step.status == "error" or _text(step).startswith("[Delegation Rejected]")):
            return f"Sorry, I could not finish the article on {topic}: {_text(step)}"
    if research is None:
        return delegate(RESEARCH_KEY, _RESEARCH_PROMPT.format(topic=topic))
    if writing is None:
        return delegate(WRITING_KEY, _WRITING_PROMPT.format(topic=topic, notes=_text(research)))
    noted = _working_memory(messages)
    if noted is not None and topic not in noted and f"agent-{RESEARCH_KEY}" in results and "update_working_memory" not in results:
        return tool_call("update_working_memory", {"memory": f"{noted.rstrip()}\n  - {topic}\n"})
    article = _text(writing)
    answer = f"Here is your article on {topic}.\n\n{article}"
    if not _PUBLISH.search(request):
        return answer
    published = results.get(PUBLISH)
    if published is None:
        title = article.splitlines()[0].lstrip("# ").strip() if article else topic
        return tool_call(PUBLISH, {"title": title, "article": article})
    if published.status == "error":
        return f"{answer}\n\nNot published: {_text(published)}"
    return f"{answer}\n\n{_text(published)}"


def _research_policy(messages: list[BaseMessage]) -> str:
    prompt, _ = _last_request(messages)
    match = re.search(r"key facts about (.+?)\. Answer with", prompt, re.DOTALL)
    topic = match.group(1) if match else topic_of(prompt)
    return "\n".join(
        [
            f"- What it is: {topic} covers the ideas, tools and practices that people group under that name.",
            f"- Current use: schools, companies and public bodies already run pilots and daily work built on {topic}.",
            f"- Benefits: supporters of {topic} point to time saved, wider access and better-informed decisions.",
            f"- Open questions: cost, fairness and evidence of long-term impact of {topic} are still debated.",
        ]
    )


def _writing_policy(messages: list[BaseMessage]) -> str:
    prompt, _ = _last_request(messages)
    match = re.search(r"article about (.+?) using these research notes", prompt, re.DOTALL)
    topic = match.group(1) if match else "this topic"
    points = [line[2:].strip() for line in prompt.splitlines() if line.startswith("- ")]
    facts = [point.split(": ", 1)[-1] for point in points]
    facts = [fact[0].upper() + fact[1:] for fact in facts if fact]
    title = topic[0].upper() + topic[1:] if topic else "Notes"
    if not facts:
        return f"# {title}\n\nThe research notes were empty, so there is nothing reliable to write yet."
    half = (len(facts) + 1) // 2
    return "\n\n".join(
        [
            f"# {title}: what we know",
            f"What should you know about {topic}? " + " ".join(facts[:half]),
            " ".join(facts[half:]) if facts[half:] else "There is more to learn.",
            f"In short, {topic} is worth following closely: the promise is real, and so are the open questions.",
        ]
    )


# -- module-level objects for Studio (langgraph.json) and the CLI ----------------

agent = build_agents()
graph = build_agents().compile()
