"""The compiled supervisor inside other LangChain / LangGraph code (SPEC §15): as a node
of another `StateGraph`, as a tool of a plain LangChain agent, under `astream_events`,
under `astream(..., subgraphs=True)`, and with LangChain callbacks."""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Any

from langchain.agents import create_agent
from langchain_core._api import LangChainBetaWarning
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command

from supervisor_graph import Agent
from supervisor_graph.examples.research_write import PUBLISH_PROMPT, build_agents
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call


def models_of(agent: Agent) -> dict[str, ScriptedChatModel]:
    """Every scripted model in an agent tree, by agent id."""
    found = {agent.id: agent.model}
    for sub in agent.agents.values():
        found.update(models_of(sub))
    assert all(isinstance(m, ScriptedChatModel) for m in found.values())
    return found  # type: ignore[return-value]


def calls(agent: Agent) -> dict[str, int]:
    return {agent_id: len(model.calls) for agent_id, model in models_of(agent).items()}


def tool_messages(messages: list[BaseMessage], name: str) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage) and m.name == name]


# -- as a node of another StateGraph ----------------------------------------------


async def test_a_node_of_another_graph_whose_caller_answers_the_approval() -> None:
    team = build_agents()
    seen: list[str] = []

    def intake(state: MessagesState) -> dict[str, Any]:
        seen.append("intake")
        return {}

    def review(state: MessagesState) -> dict[str, Any]:
        seen.append("review")
        return {"messages": [AIMessage(content=f"Reviewed ({len(state['messages'][-1].content)} characters).")]}

    outer = StateGraph(MessagesState)
    outer.add_node("intake", intake)
    outer.add_node("team", team.compile())  # the compiled supervisor, as is
    outer.add_node("review", review)
    outer.add_edge(START, "intake")
    outer.add_edge("intake", "team")
    outer.add_edge("team", "review")
    outer.add_edge("review", END)
    app = outer.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "outer-1"}}

    out = await app.ainvoke({"messages": [HumanMessage(PUBLISH_PROMPT)]}, config)
    # the supervisor's approval request is an interrupt of the outer graph
    (pending,) = out["__interrupt__"]
    assert pending.value["tool_name"] == "publish" and pending.value["agent_path"] == ["parent-agent"]
    state = await app.aget_state(config)
    assert state.next == ("team",) and [i.id for i in state.interrupts] == [pending.id]
    assert seen == ["intake"]
    assert calls(team) == {"parent-agent": 4, "research-agent": 1, "writing-agent": 1}

    # ... and the outer caller resumes it, the LangGraph way
    out = await app.ainvoke(Command(resume={pending.id: {"approved": True}}), config)
    assert "__interrupt__" not in out
    assert seen == ["intake", "review"]
    answer = out["messages"][-2].content
    assert answer.startswith("Here is your article on AI in education.") and "Published 'AI in education" in answer
    assert out["messages"][-1].content.startswith("Reviewed (")
    assert len(tool_messages(out["messages"], "publish")) == 1
    # nothing ran twice: only the supervisor's last turn was new
    assert calls(team) == {"parent-agent": 5, "research-agent": 1, "writing-agent": 1}


async def test_nested_namespaces_reach_the_outer_stream() -> None:
    outer = StateGraph(MessagesState)
    outer.add_node("team", build_agents().compile())
    outer.add_edge(START, "team")
    app = outer.compile()
    namespaces = set()
    custom = []
    async for ns, mode, data in app.astream(
        {"messages": [HumanMessage("Research owls")]}, stream_mode=["updates", "custom", "messages"], subgraphs=True
    ):
        namespaces.add((mode, tuple(part.split(":")[0] for part in ns)))
        if mode == "custom":
            custom.append((data["type"], tuple(data["agent_path"]), data.get("namespace", "").split("|")[-1].split(":")[0]))
    assert ("updates", ("team",)) in namespaces
    # leaf subagents run inside their delegation's node (SPEC §23): their tokens keep the
    # delegation's namespace, their events name it
    assert {("messages", ("team", "research_agent")), ("messages", ("team", "writing_agent"))} <= namespaces
    assert ("delegation-start", ("parent-agent",), "") in custom
    assert ("step-finish", ("parent-agent", "writing-agent"), "writing_agent") in custom


# -- as a tool of a plain LangChain agent -----------------------------------------


def _assistant_policy(messages: list[BaseMessage]) -> Any:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return f"My writing team says: {last.content}"
    return tool_call("research_and_write", {"request": last.content})


def _as_tool(team: Agent) -> Any:
    """The graph as a tool taking a request string and returning the answer's text (a
    bare `graph.as_tool()` would ask the calling model for the whole graph state)."""
    graph = team.compile()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainBetaWarning)  # `as_tool` is marked beta
        return (
            RunnableLambda(lambda args: {"messages": [HumanMessage(args["request"])]})
            | graph
            | RunnableLambda(lambda state: state["messages"][-1].content)
        ).as_tool(
            name="research_and_write",
            description="Researches a topic and writes a short article about it.",
            arg_types={"request": str},
        )


class CountingHandler(BaseCallbackHandler):
    def __init__(self) -> None:
        self.model_starts: list[str] = []
        self.tokens = 0

    def on_chat_model_start(self, serialized: Any, messages: Any, *, metadata: Any = None, **kwargs: Any) -> None:
        self.model_starts.append((metadata or {}).get("ls_model_name", "?"))

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        message = response.generations[0][0].message
        self.tokens += (message.usage_metadata or {}).get("total_tokens", 0)


async def test_a_tool_of_a_langchain_agent() -> None:
    team = build_agents()
    writer = _as_tool(team)
    assert writer.args == {"request": {"title": "Request", "type": "string"}}
    outer_model = ScriptedChatModel(policy=_assistant_policy, model_name="scripted-assistant")
    assistant = create_agent(outer_model, tools=[writer], checkpointer=InMemorySaver())
    handler = CountingHandler()
    config = {"configurable": {"thread_id": "a-1"}, "callbacks": [handler]}

    out = await assistant.ainvoke({"messages": [HumanMessage("Research owls and write an article")]}, config)
    assert [type(m).__name__ for m in out["messages"]] == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert out["messages"][2].content.startswith("Here is your article on owls.\n\n# Owls: what we know")
    assert out["messages"][-1].content.startswith("My writing team says: Here is your article on owls.")
    # the outer agent's callbacks saw every model call, the team's included
    assert Counter(handler.model_starts) == {
        "scripted-assistant": 2,
        "scripted-parent": 4,  # one turn notes the topic in its working memory
        "scripted-research": 1,
        "scripted-writing": 1,
    }
    assert handler.tokens == 8 * 15


async def test_an_approval_inside_the_tool_reaches_the_agents_caller() -> None:
    team = build_agents()
    assistant = create_agent(
        ScriptedChatModel(policy=_assistant_policy), tools=[_as_tool(team)], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "a-2"}}
    out = await assistant.ainvoke({"messages": [HumanMessage(PUBLISH_PROMPT)]}, config)
    (pending,) = out["__interrupt__"]
    assert pending.value["kind"] == "approval" and pending.value["tool_name"] == "publish"
    out = await assistant.ainvoke(Command(resume={"approved": False}), config)
    assert out["messages"][-2].content.endswith("Not published: The user declined this tool call; it did not run.")
    assert calls(team) == {"parent-agent": 5, "research-agent": 1, "writing-agent": 1}


# -- streaming --------------------------------------------------------------------


async def test_astream_events_v2() -> None:
    team = build_agents()
    graph = team.compile()
    counts: Counter[tuple[str, str]] = Counter()
    model_namespaces = []
    final = ""
    async for event in graph.astream_events({"messages": [HumanMessage("Research owls")]}, version="v2"):
        counts[(event["event"], event["name"])] += 1
        if event["event"] == "on_chat_model_start":
            model_namespaces.append(event["metadata"]["langgraph_checkpoint_ns"].split(":")[0])
        if event["event"] == "on_chat_model_stream" and event["metadata"]["ls_model_name"] == "scripted-parent":
            final += event["data"]["chunk"].content
        if event["event"] == "on_chain_end" and event["name"] == "parent-agent":
            assert event["data"]["output"]["messages"][-1].content == final
    # every model call, the subagents' included, in order
    assert model_namespaces == ["supervisor", "research_agent", "supervisor", "writing_agent", "supervisor", "supervisor"]
    assert counts[("on_chat_model_end", "ScriptedChatModel")] == 6
    # the graph, its subagent nodes and the subagents' own graphs are chains
    for name in ("parent-agent", "research_agent", "writing_agent", "research-agent", "writing-agent"):
        assert counts[("on_chain_start", name)] == 1 and counts[("on_chain_end", name)] == 1, name
    assert final.startswith("Here is your article on owls.")
    assert calls(team) == {"parent-agent": 4, "research-agent": 1, "writing-agent": 1}


async def test_stream_modes_updates_messages_custom_with_subgraphs() -> None:
    graph = build_agents().compile()
    updates: dict[str, list[str]] = {}
    text: dict[str, str] = {}
    custom = []
    async for ns, mode, data in graph.astream(
        {"messages": [HumanMessage("Research owls")]},
        stream_mode=["updates", "messages", "custom"],
        subgraphs=True,
    ):
        where = ns[0].split(":")[0] if ns else "parent"
        if mode == "updates":
            updates.setdefault(where, []).extend(data)
        elif mode == "messages":
            chunk, meta = data
            if meta["langgraph_node"] == "supervisor" and chunk.type == "AIMessageChunk":
                text[where] = text.get(where, "") + chunk.content
        else:
            custom.append((data["type"], data["agent_path"][-1]))
    assert updates == {
        # the third turn notes the topic in working memory: answered in the same step
        "parent": ["supervisor", "research_agent", "supervisor", "writing_agent", "supervisor", "supervisor"],
    }  # leaf subagents run inside their delegation's node: no steps of their own (SPEC §23)
    assert text["research_agent"].startswith("- What it is: owls")  # subagent tokens, attributed by namespace
    assert text["writing_agent"].startswith("# Owls: what we know")
    assert text["parent"].startswith("Here is your article on owls.")
    assert [c for c in custom if c[0].startswith("delegation")] == [
        ("delegation-start", "parent-agent"),
        ("delegation-complete", "parent-agent"),
        ("delegation-start", "parent-agent"),
        ("delegation-complete", "parent-agent"),
    ]
    assert ("step-start", "research-agent") in custom and ("step-start", "writing-agent") in custom


# -- callbacks at every depth -----------------------------------------------------


def three_levels() -> Agent:
    """parent -> research -> fact checker, each on its own scripted model."""

    def research(messages: list[BaseMessage]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"- Owls hunt at night ({messages[-1].content})."
        return delegate("fact_checker", "Check: owls hunt at night.")

    def parent(messages: list[BaseMessage]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"Summary: {messages[-1].content}"
        return [delegate("research_agent", "Facts about owls"), delegate("research_agent", "More facts about owls")]

    checker = Agent(
        id="fact-checker",
        description="Checks one claim.",
        model=ScriptedChatModel(policy=lambda m: "confirmed", model_name="checker"),
    )
    researcher = Agent(
        id="research-agent",
        description="Finds facts and has them checked.",
        model=ScriptedChatModel(policy=research, model_name="research"),
        agents={"fact_checker": checker},
    )
    return Agent(
        id="parent-agent",
        model=ScriptedChatModel(policy=parent, model_name="parent"),
        agents={"research_agent": researcher},
    )


class AsyncCountingHandler(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.namespaces: list[str] = []

    async def on_chat_model_start(self, serialized: Any, messages: Any, *, metadata: Any = None, **kwargs: Any) -> None:
        ns = (metadata or {}).get("langgraph_checkpoint_ns", "")
        self.namespaces.append("/".join(part.split(":")[0] for part in ns.split("|")))


async def test_callbacks_receive_every_model_call_of_every_subagent() -> None:
    parent = three_levels()
    sync_handler, async_handler = CountingHandler(), AsyncCountingHandler()
    out = await parent.compile().ainvoke(
        {"messages": [HumanMessage("Tell me about owls")]}, {"callbacks": [sync_handler, async_handler]}
    )
    assert out["messages"][-1].content.startswith("Summary: - Owls hunt at night (confirmed).")
    made = calls(parent)
    # two parallel delegations, each delegating once more
    assert made == {"parent-agent": 2, "research-agent": 4, "fact-checker": 2}
    assert len(sync_handler.model_starts) == sum(made.values()) == 8
    assert Counter(sync_handler.model_starts) == {"parent": 2, "research": 4, "checker": 2}
    assert Counter(async_handler.namespaces) == {
        "supervisor": 2,
        "research_agent/supervisor": 4,
        "research_agent/fact_checker/supervisor": 2,
    }
    assert sync_handler.tokens == 8 * 15


async def test_the_request_context_comes_from_the_runs_context() -> None:
    """SPEC §23: `context={"request_context": {...}}` (what Studio, `langgraph dev` and Aegra
    send) reaches the tools of the agent and of its subagents (a copy at each delegation)."""
    from langchain_core.messages import ToolMessage as Result

    from supervisor_graph import current_request_context

    def whoami() -> str:
        """Who asks."""
        return str(current_request_context().get("user"))

    worker = Agent(
        id="worker-agent", description="Says who asks.", tools=[whoami],
        model=ScriptedChatModel(policy=lambda m: f"it is {m[-1].content}" if isinstance(m[-1], Result) else tool_call("whoami")),
    )
    boss = Agent(
        id="boss", agents={"worker": worker},
        model=ScriptedChatModel(policy=lambda m: m[-1].content if isinstance(m[-1], Result) else delegate("worker", "who?")),
    )
    out = await boss.compile().ainvoke({"messages": [HumanMessage("go")]}, context={"request_context": {"user": "ada"}})
    assert out["messages"][-1].content == "it is ada"
