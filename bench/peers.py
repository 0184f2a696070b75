"""Contenders a user would pick instead of supervisor-graph (issue 17), making the same
model calls as `ours` (n delegations, one per supervisor turn, then the answer) and
checked the same way (call counts, final answer):

- `create_agent`: LangChain's `create_agent` supervisor with each subagent (itself a
  `create_agent`) wrapped as a tool, the pattern LangChain's docs and
  langgraph-supervisor's README recommend;
- `openai_agents`: openai-agents' agents-as-tools, on a scripted `Model`, tracing off,
  with a `SQLiteSession` (in memory, or on the sqlite file) as its memory;
- `deepagents`: deepagents' `task` tool with its default middleware, and
  `deepagents_min`: `create_agent` with only deepagents' `SubAgentMiddleware`.

Peers whose package is not installed are left out of a run, saying so.
"""

from __future__ import annotations

import importlib.util
import uuid
import warnings
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from bench.contenders import (
    INSTRUCTIONS,
    PROMPT,
    WORKER_DESCRIPTION,
    Contender,
    Script,
    _GraphContender,
    _this_turn,
    delegation_policy,
)
from bench.savers import Storage
from bench.stats import round_order
from supervisor_graph.testing import tool_call

__all__ = ["PEERS", "available_peers", "build_peer"]

PEERS = ("create_agent", "openai_agents", "deepagents", "deepagents_min")
_PACKAGES = {"create_agent": "langchain", "openai_agents": "agents", "deepagents": "deepagents", "deepagents_min": "deepagents"}


def available_peers() -> tuple[str, ...]:
    return tuple(name for name in PEERS if importlib.util.find_spec(_PACKAGES[name]) is not None)


class CreateAgent(_GraphContender):
    name = "create_agent"

    def build_graph(self) -> Any:
        from langchain.agents import create_agent
        from langchain_core.tools import StructuredTool

        tools = []
        for i, worker_model in enumerate(self.workers):
            worker = create_agent(model=worker_model, tools=self.worker_tools(), name=f"worker_{i}")

            async def call(prompt: str, worker: Any = worker) -> str:
                out = await worker.ainvoke({"messages": [HumanMessage(content=prompt)]})
                return str(out["messages"][-1].content)

            tools.append(StructuredTool.from_function(coroutine=call, name=f"agent-worker_{i}", description=WORKER_DESCRIPTION))
        return _Prebuilt(create_agent(model=self.supervisor, tools=tools, system_prompt=INSTRUCTIONS, checkpointer=self._saver))


class _Prebuilt:
    """A graph compiled by its library (with the saver): `compile()` hands it back."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph

    def compile(self, checkpointer: Any = None) -> Any:
        return self.graph


def task_policy(n: int, script: Script) -> Any:
    """Supervisor policy for deepagents: its `task` tool, one worker per turn."""

    def policy(messages: list[Any]) -> Any:
        done = sum(isinstance(m, ToolMessage) and m.name == "task" for m in _this_turn(messages))
        if done < n:
            return tool_call("task", {"description": PROMPT, "subagent_type": f"worker_{done}"})
        return script.final_answer

    return policy


def as_tool_policy(n: int, script: Script) -> Any:
    """Supervisor policy for openai-agents: `as_tool()` tools take `input`."""

    def policy(messages: list[Any]) -> Any:
        done = sum(isinstance(m, ToolMessage) for m in _this_turn(messages))
        return tool_call(f"agent-worker_{done}", {"input": PROMPT}) if done < n else script.final_answer

    return policy


class DeepAgents(_GraphContender):
    name = "deepagents"
    minimal = False

    def build_graph(self) -> Any:
        subagents = [
            {"name": f"worker_{i}", "description": WORKER_DESCRIPTION, "system_prompt": "Do the task.", "model": w, "tools": self.worker_tools()}
            for i, w in enumerate(self.workers)
        ]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not self.minimal:
                from deepagents import create_deep_agent

                return _Prebuilt(
                    create_deep_agent(model=self.supervisor, system_prompt=INSTRUCTIONS, subagents=subagents, checkpointer=self._saver)
                )
            from deepagents.backends import StateBackend
            from deepagents.middleware.subagents import SubAgentMiddleware
            from langchain.agents import create_agent

            for sub in subagents:
                sub["middleware"] = []
            middleware = SubAgentMiddleware(backend=StateBackend, subagents=subagents)
            return _Prebuilt(
                create_agent(model=self.supervisor, system_prompt=INSTRUCTIONS, middleware=[middleware], checkpointer=self._saver)
            )


class DeepAgentsMinimal(DeepAgents):
    name = "deepagents_min"
    minimal = True


class OpenAIAgents(Contender):
    """openai-agents: the workers `as_tool()`, a scripted `Model`, tracing off."""

    name = "openai_agents"

    async def setup(self) -> None:
        from agents import Agent as OAgent
        from agents import RunConfig, function_tool

        self._config = RunConfig(tracing_disabled=True)
        counted = self.lookup

        def lookup(q: str) -> str:
            """Looks a fact up."""
            return counted(q)

        tools = [function_tool(lookup)] if self.script.worker_tool else []
        workers = [
            OAgent(name=f"worker_{i}", instructions="Do the task.", model=_scripted_model(w), tools=tools).as_tool(
                tool_name=f"agent-worker_{i}", tool_description=WORKER_DESCRIPTION
            )
            for i, w in enumerate(self.workers)
        ]
        self.agent = OAgent(name="parent", instructions=INSTRUCTIONS, model=_scripted_model(self.supervisor), tools=workers)
        self._db = str(self.storage.path) if self.storage.path is not None else ":memory:"
        self._sessions: dict[str, Any] = {}

    async def run(self, prompt: str, thread: str) -> str:
        from agents import Runner, SQLiteSession

        session = self._sessions.get(thread)
        if session is None:
            session = self._sessions[thread] = SQLiteSession(thread, self._db)
        result = await Runner.run(self.agent, prompt, session=session, run_config=self._config, max_turns=self.n + 2)
        if len(self._sessions) > 64:  # one-shot threads: keep the connections few
            for old in list(self._sessions)[:-8]:
                self._sessions.pop(old).close()
        return str(result.final_output)

    async def saver(self) -> Any:
        raise NotImplementedError("openai-agents keeps no LangGraph checkpoints")

    async def aclose(self) -> None:
        for session in self._sessions.values():
            session.close()
        await super().aclose()


def _items_as_messages(items: Any) -> list[Any]:
    """openai-agents' input items as the LangChain messages a scripted policy reads."""
    from langchain_core.messages import AIMessage

    if isinstance(items, str):
        return [HumanMessage(content=items)]
    out: list[Any] = []
    names: dict[str, str] = {}
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "function_call":
            names[item["call_id"]] = item["name"]
        if kind == "function_call_output":
            call_id = item.get("call_id", "")
            out.append(ToolMessage(content=str(item.get("output")), tool_call_id=call_id, name=names.get(call_id, "tool")))
        elif kind == "function_call":
            out.append(AIMessage(content="", tool_calls=[{"name": item["name"], "args": {}, "id": item["call_id"]}]))
        elif isinstance(item, dict) and item.get("role") == "user":
            out.append(HumanMessage(content=str(item.get("content"))))
    return out


def _scripted_model(chat: Any) -> Any:
    """An openai-agents `Model` answering from a `ScriptedChatModel`'s policy."""
    import json

    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    class ScriptedModel(Model):
        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
            reply = await chat.ainvoke(_items_as_messages(input))
            if reply.tool_calls:
                call = reply.tool_calls[0]
                output: list[Any] = [
                    ResponseFunctionToolCall(
                        type="function_call", call_id=call["id"], name=call["name"], arguments=json.dumps(call["args"]),
                        id=f"fc_{uuid.uuid4().hex[:12]}", status="completed",
                    )
                ]
            else:
                output = [
                    ResponseOutputMessage(
                        id=f"msg_{uuid.uuid4().hex[:12]}", type="message", role="assistant", status="completed",
                        content=[ResponseOutputText(type="output_text", text=str(reply.content), annotations=[])],
                    )
                ]
            return ModelResponse(output=output, usage=Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - the bench never streams
            raise NotImplementedError

    return ScriptedModel()


_CLASSES: dict[str, tuple[type[Any], Any]] = {
    "create_agent": (CreateAgent, delegation_policy),
    "openai_agents": (OpenAIAgents, as_tool_policy),
    "deepagents": (DeepAgents, task_policy),
    "deepagents_min": (DeepAgentsMinimal, task_policy),
}


async def build_peer(name: str, n: int, storage: Storage, script: Script | None = None) -> Contender:
    from bench.contenders import build

    return await build(name, n, storage, script, classes=_CLASSES)


# -- the scenario -------------------------------------------------------------------------


PEER_BASE = ("ours", "ours_graph", "incumbent", "floor", "floor_stock")


async def peer_timing(
    kinds: tuple[str, ...],
    ns: tuple[int, ...],
    runs: int,
    warmup: int,
    workdir: Any,
    names: tuple[str, ...] | None = None,
    script: Script | None = None,
    cpu: bool = False,
) -> dict[str, Any]:
    """Per-run medians of ours, the incumbent, the floor and every installed peer, runs
    interleaved round-robin on fresh threads, each run checked (call counts, answer).
    Returns {"cells": {(kind, n): {name: [seconds]}}, "missing": [names]}: wall seconds,
    or the process's CPU seconds with `cpu` (steadier on a machine shared with other work)."""
    import gc

    from bench.contenders import build
    from bench.scenarios import run_measured

    names = names or (*PEER_BASE, *available_peers())
    cells: dict[tuple[str, int], dict[str, list[float]]] = {}
    for kind in kinds:
        for n in ns:
            contenders = []
            for name in names:
                label = f"peer-{name}-{n}{'-tools' if script is not None and script.worker_tool else ''}"
                storage = Storage(kind, workdir / f"{label}.db" if kind == "sqlite" else None, False)
                if storage.path is not None:
                    for suffix in ("", "-wal", "-shm"):
                        (workdir / f"{label}.db{suffix}").unlink(missing_ok=True)
                contenders.append(
                    await (build(name, n, storage, script) if name in PEER_BASE else build_peer(name, n, storage, script))
                )
            samples: dict[str, list[float]] = {c.name: [] for c in contenders}
            # what exists now lives for the whole cell: the collection before each run then
            # only walks what the runs made, not every contender's graphs and models
            gc.collect()
            gc.freeze()
            try:
                for i in range(warmup + runs):
                    for contender in round_order(contenders, i):
                        gc.collect()
                        wall, cpu_s = await run_measured(contender, PROMPT, f"peer-{kind}-{n}-{i}")
                        if i >= warmup:
                            samples[contender.name].append(cpu_s if cpu else wall)
                        if contender.script.record_calls and hasattr(contender, "forget_calls"):
                            contender.forget_calls()
            finally:
                gc.unfreeze()
                for contender in contenders:
                    await contender.aclose()
            cells[(kind, n)] = samples
    return {"cells": cells, "missing": [p for p in PEERS if p not in names]}
