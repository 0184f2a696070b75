"""The contenders, each making the same model calls per run: ours through the facade
(`ours`, `generate`) and through the compiled graph (`ours_graph`, `graph.ainvoke`, as
Studio, `langgraph dev`, Aegra and embedding apps run it), the incumbent and the floor.

A run asks the supervisor model for `n` sequential delegations (one per supervisor turn,
to `worker_0` ... `worker_{n-1}`), each worker model answers ``"result"`` once, and the
supervisor model answers ``"done"``: `n + 1` supervisor calls and `n` worker calls.
Policies look at the messages each model receives, so runs on fresh threads and turns
of one long conversation both work. A `Script` changes the answers (longer messages for
the long conversation) and adds a simulated model latency (the concurrency scenario).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph

from bench.savers import Storage, open_saver
from supervisor_graph import Agent, Memory
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

__all__ = ["CONTENDERS", "Contender", "Script", "build"]

CONTENDERS = ("ours", "ours_graph", "incumbent", "floor")
INSTRUCTIONS = "Delegate each part of the task to a worker, one at a time, then answer."
WORKER_DESCRIPTION = "Worker"
WORKER_ANSWER = "result"
FINAL_ANSWER = "done"
PROMPT = "do it"
RESOURCE = "bench"
RECURSION_LIMIT = 10_000
TOOL_NAME = "lookup"


def _this_turn(messages: Sequence[BaseMessage]) -> Sequence[BaseMessage]:
    """Messages after the last human message (the current turn of the conversation)."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return messages[i + 1 :]
    return messages


@dataclass(frozen=True)
class Script:
    """What the scripted models answer, and how long each model call takes."""

    worker_answer: str = WORKER_ANSWER
    final_answer: str = FINAL_ANSWER
    latency: float = 0.0  # seconds per model call (`asyncio.sleep`), the same for every contender
    record_calls: bool = True  # keep each call's input messages (off for many concurrent runs)
    worker_tool: bool = False  # each worker calls `lookup` once, then answers (issue 23)

    @property
    def worker_calls(self) -> int:
        """Model calls per delegation."""
        return 2 if self.worker_tool else 1


class Lookup:
    """The workers' tool: counts its runs, so a run can check each worker called it once."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self, q: str) -> str:
        self.runs += 1
        return f"fact about {q}"

    def as_tool(self) -> Any:
        from langchain_core.tools import StructuredTool

        def lookup(q: str) -> str:
            """Looks a fact up."""
            return self(q)

        return StructuredTool.from_function(func=lookup, name=TOOL_NAME)


class _Counted:
    """A model policy that counts its calls (the models' `calls` lists may be off)."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.count = 0

    def __call__(self, messages: list[BaseMessage]) -> Any:
        self.count += 1
        return self.policy(messages)


def _worker_policy(script: Script) -> Any:
    if not script.worker_tool:
        return lambda messages: script.worker_answer

    def policy(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if isinstance(last, ToolMessage) and last.name == TOOL_NAME:
            return script.worker_answer
        return tool_call(TOOL_NAME, {"q": "the task"})

    return policy


def delegation_policy(n: int, script: Script) -> Any:
    """Supervisor policy for `ours` and `floor`: tools `agent-worker_<i>`, results are ToolMessages."""

    def policy(messages: list[BaseMessage]) -> Any:
        done = sum(isinstance(m, ToolMessage) for m in _this_turn(messages))
        return delegate(f"worker_{done}", PROMPT) if done < n else script.final_answer

    return policy


def handoff_policy(n: int, script: Script) -> Any:
    """Supervisor policy for the incumbent: tools `transfer_to_worker_<i>`."""

    def policy(messages: list[BaseMessage]) -> Any:
        done = sum(
            isinstance(m, ToolMessage) and (m.name or "").startswith("transfer_to_") for m in _this_turn(messages)
        )
        return tool_call(f"transfer_to_worker_{done}", {}) if done < n else script.final_answer

    return policy


class Contender:
    """One contender built for `n` delegations per run on one storage."""

    name: str

    def __init__(
        self,
        n: int,
        storage: Storage,
        supervisor: ScriptedChatModel,
        workers: list[ScriptedChatModel],
        script: Script,
    ) -> None:
        self.n = n
        self.storage = storage
        self.supervisor = supervisor
        self.workers = workers
        self.script = script
        self.lookup = Lookup()
        self._stack = AsyncExitStack()

    def worker_tools(self) -> list[Any]:
        """The tools each worker gets (none unless the script has worker tools)."""
        return [self.lookup.as_tool()] if self.script.worker_tool else []

    async def setup(self) -> None:
        raise NotImplementedError

    async def run(self, prompt: str, thread: str) -> str:
        """One run on `thread`; returns the final answer text."""
        raise NotImplementedError

    async def saver(self) -> BaseCheckpointSaver:
        raise NotImplementedError

    async def aclose(self) -> None:
        await self._stack.aclose()

    def call_counts(self) -> tuple[int, int]:
        """(supervisor model calls, worker model calls) so far."""
        return _count(self.supervisor), sum(_count(w) for w in self.workers)

    def forget_calls(self) -> None:
        """Drop the recorded model inputs (keeps long timing loops from hoarding memory)."""
        self.supervisor.calls.clear()
        for w in self.workers:
            w.calls.clear()


def _count(model: ScriptedChatModel) -> int:
    assert isinstance(model.policy, _Counted)
    return model.policy.count


def _models(n: int, policy: Any, script: Script) -> tuple[ScriptedChatModel, list[ScriptedChatModel]]:
    def model(policy: Any) -> ScriptedChatModel:
        return ScriptedChatModel(policy=_Counted(policy), latency=script.latency, record_calls=script.record_calls)

    return model(policy), [model(_worker_policy(script)) for _ in range(n)]


class Ours(Contender):
    name = "ours"

    async def setup(self) -> None:
        if self.storage.counting:  # hand it the counting saver; otherwise the URL a user would write
            storage: Any = await open_saver(self.storage, self._stack)
        else:
            storage = self.storage.url
        self.memory = Memory(storage=storage)
        self.agent = self.declare(self.memory)

    def declare(self, memory: Memory | None) -> Agent:
        return Agent(
            id="parent",
            instructions=INSTRUCTIONS,
            model=self.supervisor,
            agents={
                f"worker_{i}": Agent(id=f"worker-{i}", description=WORKER_DESCRIPTION, model=w, tools=self.worker_tools())
                for i, w in enumerate(self.workers)
            },
            memory=memory,
            default_options={"max_steps": self.n + 1},
        )

    async def run(self, prompt: str, thread: str) -> str:
        result = await self.agent.generate(prompt, memory={"thread": thread, "resource": RESOURCE})
        if result.finish_reason != "stop":
            raise RuntimeError(f"ours finished with {result.finish_reason!r}, expected 'stop'")
        return result.text

    async def saver(self) -> BaseCheckpointSaver:
        return await self.memory.checkpointer()

    async def aclose(self) -> None:
        if not self.storage.counting:
            await self.memory.aclose()
        await super().aclose()


class OursGraph(Ours):
    """Ours as Studio, `langgraph dev`, Aegra and embedding apps run it: the compiled graph
    driven by `graph.ainvoke`, on the saver the floor uses (no facade: no lease, no
    transcript repair, default durability)."""

    name = "ours_graph"

    async def setup(self) -> None:
        self.storage = replace(self.storage, saver="sg")
        self._saver = await open_saver(self.storage, self._stack)
        self.agent = self.declare(None)
        self.graph = self.agent.compile(checkpointer=self._saver)

    async def run(self, prompt: str, thread: str) -> str:
        out = await self.graph.ainvoke(
            {"messages": [HumanMessage(content=prompt)]},
            {"configurable": {"thread_id": thread}, "recursion_limit": RECURSION_LIMIT},
        )
        if out.get("finish_reason") != "stop":
            raise RuntimeError(f"ours_graph finished with {out.get('finish_reason')!r}, expected 'stop'")
        last = out["messages"][-1]
        return last.content if isinstance(last.content, str) else str(last.content)

    async def saver(self) -> BaseCheckpointSaver:
        return self._saver

    async def aclose(self) -> None:
        await Contender.aclose(self)


class _GraphContender(Contender):
    """A contender that is a compiled LangGraph graph on a saver we open."""

    graph: Any
    _saver: BaseCheckpointSaver

    async def setup(self) -> None:
        self._saver = await open_saver(self.storage, self._stack)
        self.graph = self.build_graph().compile(checkpointer=self._saver)

    def build_graph(self) -> StateGraph:
        raise NotImplementedError

    async def run(self, prompt: str, thread: str) -> str:
        out = await self.graph.ainvoke(
            {"messages": [HumanMessage(content=prompt)]},
            {"configurable": {"thread_id": thread}, "recursion_limit": RECURSION_LIMIT},
        )
        last = out["messages"][-1]
        return last.content if isinstance(last.content, str) else str(last.content)

    async def saver(self) -> BaseCheckpointSaver:
        return self._saver


def _react_worker(model: ScriptedChatModel, name: str, tools: list[Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from langgraph.prebuilt import create_react_agent

            return create_react_agent(model=model, tools=tools, name=name)
        except ImportError:  # pragma: no cover - newer stacks
            from langchain.agents import create_agent  # type: ignore[import-not-found]

            return create_agent(model=model, tools=tools, name=name)


class Incumbent(_GraphContender):
    """`langgraph_supervisor.create_supervisor` with its defaults (output_mode="last_message",
    handoff messages on, tools named `transfer_to_<worker>`)."""

    name = "incumbent"

    def build_graph(self) -> StateGraph:
        from langgraph_supervisor import create_supervisor

        workers = [_react_worker(w, f"worker_{i}", self.worker_tools()) for i, w in enumerate(self.workers)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return create_supervisor(workers, model=self.supervisor, prompt=INSTRUCTIONS)


def _worker_context(message: BaseMessage) -> bool:
    """The parent messages a worker sees (as ours does by default): no tool traffic, no empty ones."""
    if isinstance(message, ToolMessage):
        return False
    if isinstance(message, AIMessage) and message.tool_calls:
        return False
    return bool(message.content)


class Floor(_GraphContender):
    """The least a LangGraph graph can do for the same model calls, on the saver ours
    uses (so that ours/floor is the cost of the design, not of the storage)."""

    name = "floor"

    async def setup(self) -> None:
        self.storage = replace(self.storage, saver="sg")
        await super().setup()

    def build_graph(self) -> StateGraph:
        tools = [
            {
                "type": "function",
                "function": {
                    "name": f"agent-worker_{i}",
                    "description": WORKER_DESCRIPTION,
                    "parameters": {
                        "type": "object",
                        "properties": {"prompt": {"type": "string"}},
                        "required": ["prompt"],
                    },
                },
            }
            for i in range(len(self.workers))
        ]
        model = self.supervisor.bind_tools(tools)
        system = SystemMessage(content=INSTRUCTIONS)
        worker_tools = {t.name: t for t in self.worker_tools()}
        workers = {f"agent-worker_{i}": w.bind_tools(list(worker_tools.values())) if worker_tools else w for i, w in enumerate(self.workers)}

        async def answer(worker: Any, messages: list[BaseMessage]) -> Any:
            # the least a worker that may call tools does: call, run each tool, call again
            while True:
                reply = await worker.ainvoke(messages)
                if not reply.tool_calls:
                    return reply
                messages = [*messages, reply, *[await worker_tools[c["name"]].ainvoke(c) for c in reply.tool_calls]]

        async def supervisor(state: MessagesState) -> dict[str, Any]:
            return {"messages": [await model.ainvoke([system, *state["messages"]])]}

        async def worker(state: MessagesState) -> dict[str, Any]:
            messages = state["messages"]
            context = [m for m in messages if _worker_context(m)]
            out = []
            for call in messages[-1].tool_calls:  # type: ignore[attr-defined]
                reply = await answer(workers[call["name"]], [*context, HumanMessage(content=call["args"]["prompt"])])
                out.append(ToolMessage(content=reply.content, tool_call_id=call["id"], name=call["name"]))
            return {"messages": out}

        def route(state: MessagesState) -> str:
            last = state["messages"][-1]
            return "worker" if isinstance(last, AIMessage) and last.tool_calls else END

        graph = StateGraph(MessagesState)
        graph.add_node("supervisor", supervisor)
        graph.add_node("worker", worker)
        graph.add_edge(START, "supervisor")
        graph.add_conditional_edges("supervisor", route, ["worker", END])
        graph.add_edge("worker", "supervisor")
        return graph


class StockFloor(Floor):
    """The floor on LangGraph's `AsyncSqliteSaver`, what a hand-written graph would use."""

    name = "floor_stock"

    async def setup(self) -> None:
        await _GraphContender.setup(self)


_CLASSES: dict[str, tuple[type[Any], Any]] = {
    "ours": (Ours, delegation_policy),
    "ours_graph": (OursGraph, delegation_policy),
    "incumbent": (Incumbent, handoff_policy),
    "floor": (Floor, delegation_policy),
    "floor_stock": (StockFloor, delegation_policy),
}


async def build(
    name: str,
    n: int,
    storage: Storage,
    script: Script | None = None,
    classes: dict[str, tuple[type[Any], Any]] | None = None,
) -> Contender:
    """Contender `name` ("ours", "incumbent", "floor", or one of `classes`: a name's class
    and supervisor policy) for `n` delegations per run."""
    cls, policy = (classes or _CLASSES)[name]
    script = script or Script()
    supervisor, workers = _models(n, policy(n, script), script)
    contender = cls(n, storage, supervisor, workers, script)
    await contender.setup()
    return contender  # type: ignore[no-any-return]
