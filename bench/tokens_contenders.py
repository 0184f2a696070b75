"""The contenders of `python -m bench tokens` (issue 51), each through its REAL OpenAI
client pointed at the recording server, so what is counted is what would be sent:
`langchain_openai.ChatOpenAI(base_url=...)` for supervisor-graph, `create_agent` and
langgraph-supervisor; openai-agents' `OpenAIChatCompletionsModel` over an
`AsyncOpenAI(base_url=...)`. Each is the pattern its docs show for a supervisor with a
`research` and a `writing` subagent, with the instructions and descriptions of
bench/tokens_server.py, and keeps one conversation per thread in memory.
"""

from __future__ import annotations

import importlib.util
import random
import uuid
import warnings
from types import SimpleNamespace
from typing import Any
from unittest import mock

from langchain_core.messages import HumanMessage

from bench.tokens_server import AGENTS, DESCRIPTIONS, MODEL, SUPERVISOR

__all__ = ["CONTENDERS", "LABELS", "OURS", "available", "build"]

OURS = ("ours", "ours_no_inherit")
CONTENDERS = (*OURS, "create_agent", "openai_agents", "langgraph_supervisor")
LABELS = {
    "ours": "supervisor-graph (defaults)",
    "ours_no_inherit": "supervisor-graph, `inherit_context=False`",
    "create_agent": "LangChain `create_agent`, subagents as tools",
    "openai_agents": "openai-agents, `Agent.as_tool`",
    "langgraph_supervisor": "langgraph-supervisor",
}
_PACKAGES = {"create_agent": "langchain", "openai_agents": "agents", "langgraph_supervisor": "langgraph_supervisor"}
API_KEY = "sk-bench"  # the fake server checks none; the clients want one
SUBAGENTS = ("research", "writing")


def available(names: tuple[str, ...] = CONTENDERS) -> tuple[str, ...]:
    """The contenders whose package is installed."""
    return tuple(n for n in names if n not in _PACKAGES or importlib.util.find_spec(_PACKAGES[n]) is not None)


def _chat(url: str) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=MODEL, base_url=url, api_key=API_KEY, max_retries=0, timeout=30)  # type: ignore[arg-type]


class TokenContender:
    """One contender: `run(prompt, thread)` is one user turn on `thread`."""

    def __init__(self, url: str) -> None:
        self.url = url

    async def run(self, prompt: str, thread: str) -> str:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass


class Ours(TokenContender):
    inherit_context = True

    def __init__(self, url: str) -> None:
        super().__init__(url)
        from supervisor_graph import Agent, Memory

        self.memory = Memory(storage=":memory:")
        subagents: dict[str, Any] = {
            key: Agent(
                id=key,
                description=DESCRIPTIONS[key],
                instructions=AGENTS[key],
                model=_chat(url),
                inherit_context=self.inherit_context,
            )
            for key in SUBAGENTS
        }
        self.agent = Agent(id="supervisor", instructions=SUPERVISOR, model=_chat(url), agents=subagents, memory=self.memory)

    async def run(self, prompt: str, thread: str) -> str:
        result = await self.agent.generate(prompt, memory={"thread": thread, "resource": "bench"})
        if result.finish_reason != "stop":
            raise RuntimeError(f"supervisor-graph finished with {result.finish_reason!r}")
        return result.text

    async def aclose(self) -> None:
        await self.memory.aclose()


class OursNoInherit(Ours):
    inherit_context = False


class _Graph(TokenContender):
    graph: Any

    async def run(self, prompt: str, thread: str) -> str:
        out = await self.graph.ainvoke({"messages": [HumanMessage(content=prompt)]}, {"configurable": {"thread_id": thread}})
        return str(out["messages"][-1].content)


class CreateAgent(_Graph):
    """LangChain's subagents-as-tools: each subagent a `create_agent` behind a tool."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        from langchain.agents import create_agent
        from langchain_core.tools import StructuredTool
        from langgraph.checkpoint.memory import InMemorySaver

        def as_tool(key: str) -> Any:
            sub = create_agent(model=_chat(url), system_prompt=AGENTS[key], name=key)

            async def call(prompt: str) -> str:  # the subagent from the closure: a default would be in the schema
                out = await sub.ainvoke({"messages": [HumanMessage(content=prompt)]})
                return str(out["messages"][-1].content)

            return StructuredTool.from_function(coroutine=call, name=key, description=DESCRIPTIONS[key])

        tools = [as_tool(key) for key in SUBAGENTS]
        self.graph = create_agent(model=_chat(url), tools=tools, system_prompt=SUPERVISOR, checkpointer=InMemorySaver())


class LanggraphSupervisor(_Graph):
    """`langgraph_supervisor.create_supervisor` over `create_react_agent` workers, defaults."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph_supervisor import create_supervisor

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_react_agent is deprecated in LangGraph 1.x
            from langgraph.prebuilt import create_react_agent

            workers: list[Any] = [create_react_agent(model=_chat(url), tools=[], name=key, prompt=AGENTS[key]) for key in SUBAGENTS]
            self.graph = create_supervisor(workers, model=_chat(url), prompt=SUPERVISOR).compile(checkpointer=InMemorySaver())
        self.ids = random.Random(0)

    async def run(self, prompt: str, thread: str) -> str:
        from langgraph_supervisor import handoff

        # its handoff messages' ids are uuid4s, whose token counts vary: seeded, a rerun counts the same
        seeded = SimpleNamespace(uuid4=lambda: uuid.UUID(int=self.ids.getrandbits(128), version=4))
        with mock.patch.object(handoff, "uuid", seeded):
            return await super().run(prompt, thread)


class OpenAIAgents(TokenContender):
    """openai-agents' agents as tools, on its chat-completions model, one `SQLiteSession` a thread."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        from agents import Agent, OpenAIChatCompletionsModel, RunConfig
        from openai import AsyncOpenAI

        self.client = AsyncOpenAI(base_url=url, api_key=API_KEY, max_retries=0)
        model = OpenAIChatCompletionsModel(model=MODEL, openai_client=self.client)
        tools: list[Any] = [
            Agent(name=key, instructions=AGENTS[key], model=model).as_tool(tool_name=key, tool_description=DESCRIPTIONS[key])
            for key in SUBAGENTS
        ]
        self.agent = Agent(name="supervisor", instructions=SUPERVISOR, model=model, tools=tools)
        self.config = RunConfig(tracing_disabled=True)
        self.sessions: dict[str, Any] = {}

    async def run(self, prompt: str, thread: str) -> str:
        from agents import Runner, SQLiteSession

        session = self.sessions.setdefault(thread, SQLiteSession(thread))
        result = await Runner.run(self.agent, prompt, session=session, run_config=self.config)
        return str(result.final_output)

    async def aclose(self) -> None:
        for session in self.sessions.values():
            session.close()
        await self.client.close()


_CLASSES: dict[str, type[TokenContender]] = {
    "ours": Ours,
    "ours_no_inherit": OursNoInherit,
    "create_agent": CreateAgent,
    "openai_agents": OpenAIAgents,
    "langgraph_supervisor": LanggraphSupervisor,
}


def build(name: str, url: str) -> TokenContender:
    """Contender `name`, its clients pointed at `url`."""
    return _CLASSES[name](url)
