"""Agents, inputs and checks shared by the AG-UI bridge tests (offline, scripted models)."""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import BaseEvent, ResumeEntry, RunAgentInput, Tool, UserMessage
from ag_ui.encoder import EventEncoder
from ag_ui_validate.pytest_plugin import validate_agui
from langchain_core.messages import HumanMessage, ToolMessage
from pydantic import BaseModel

from bench.aegra import free_port
from supervisor_graph import Agent, Memory, create_tool, suspend
from supervisor_graph.agui import AGUIAgent
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call

RECORDINGS = Path(tempfile.gettempdir()) / "supervisor-graph-agui-recordings"


# -- models -----------------------------------------------------------------------


def after_tool(prefix: str, call: Any) -> Any:
    """A policy: make `call`, then answer `<prefix>: <the tool result>`."""

    def policy(messages: list[Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"{prefix}: {messages[-1].content}"
        return call

    return policy


# -- tools ------------------------------------------------------------------------


class Amount(BaseModel):
    amount: int


class Question(BaseModel):
    question: str


class Account(BaseModel):
    account: str


def pay_tool(ledger: list[int]) -> Any:
    def execute(args: Amount) -> str:
        ledger.append(args.amount)
        return f"paid {args.amount}"

    return create_tool(id="pay", description="Pay an amount.", input_schema=Amount, execute=execute, require_approval=True)


def ask_tool(seen: list[Any]) -> Any:
    def execute(args: Question) -> str:
        answer = suspend({"message": args.question, "choices": ["ACME-1", "ACME-2"]})
        seen.append(answer)
        return f"using {answer.account}"

    return create_tool(id="ask_account", description="Ask which account.", input_schema=Question, execute=execute, resume_schema=Account)


# -- agents -----------------------------------------------------------------------


def solo(reply: str | ScriptedChatModel = "Hello there.", **kwargs: Any) -> Agent:
    """A single agent (no subagents) answering `reply`, or run by the given model."""
    model = reply if isinstance(reply, ScriptedChatModel) else ScriptedChatModel(responses=[reply])
    return Agent(id="solo", model=model, memory=Memory(":memory:"), **kwargs)


def payer(ledger: list[int], *, call_id: str | None = None, model_name: str = "payer-model") -> Agent:
    return Agent(
        id="payer-agent",
        description="Pays invoices.",
        tools=[pay_tool(ledger)],
        model=ScriptedChatModel(policy=after_tool("payer", tool_call("pay", {"amount": 5}, id=call_id)), model_name=model_name),
    )


def researcher(model_name: str = "research-model") -> Agent:
    return Agent(
        id="research-agent",
        description="Finds facts.",
        model=ScriptedChatModel(policy=lambda m: "- fact one", model_name=model_name),
    )


def boss(agents: dict[str, Agent], calls: Any, *, storage: str = ":memory:", model_name: str = "boss-model") -> Agent:
    """A supervisor that makes `calls` (one or a list), then answers with the results."""

    def policy(messages: list[Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            results = [m.content for m in messages if isinstance(m, ToolMessage)]
            return "final: " + " | ".join(str(r) for r in results)
        return calls

    return Agent(
        id="boss",
        agents=agents,
        model=ScriptedChatModel(policy=policy, model_name=model_name),
        memory=Memory(storage),
    )


# -- inputs and runs --------------------------------------------------------------


def make_input(
    thread: str = "t1",
    text: str | None = "go",
    *,
    messages: list[Any] | None = None,
    resume: list[dict[str, Any]] | None = None,
    tools: list[Tool] | None = None,
    protocol_version: str | None = None,
    state: Any = None,
) -> RunAgentInput:
    if messages is None:
        messages = [UserMessage(id=f"u-{uuid.uuid4().hex[:8]}", content=text)] if text is not None else []
    return RunAgentInput(
        thread_id=thread,
        run_id=f"run-{uuid.uuid4().hex[:8]}",
        messages=messages,
        state=state if state is not None else {},
        tools=tools or [],
        context=[],
        forwarded_props={},
        resume=[ResumeEntry(**entry) for entry in resume] if resume is not None else None,
        protocol_version=protocol_version,
    )


def wire(events: list[BaseEvent]) -> list[dict[str, Any]]:
    """The events as a client receives them (camelCase JSON)."""
    return [json.loads(e.model_dump_json(by_alias=True)) for e in events]


def types(events: list[BaseEvent]) -> list[str]:
    return [str(e.type.value if hasattr(e.type, "value") else e.type) for e in events]


def of_type(events: list[BaseEvent], kind: str) -> list[dict[str, Any]]:
    return [e for e in wire(events) if e["type"] == kind]


def assert_valid(events: list[BaseEvent]) -> None:
    """ag-ui-validate finds no error in the stream."""
    report = validate_agui([e.model_dump_json(by_alias=True) for e in events])
    errors = [f"{d.rule}: {d.message}" for d in report.diagnostics if d.severity == "error"]
    assert not errors, errors


def record(name: str, events: list[BaseEvent]) -> Path:
    """Write the stream as the endpoint sends it (SSE) for the validator's CLI."""
    RECORDINGS.mkdir(exist_ok=True)
    path = RECORDINGS / f"{name}.sse"
    encoder = EventEncoder()
    path.write_text("".join(encoder.encode(e) for e in events))
    return path


async def collect(bridge: AGUIAgent, input: RunAgentInput, *, validate: bool = True) -> list[BaseEvent]:
    """Run `input` through `bridge`; every stream is checked by ag-ui-validate."""
    events = [event async for event in bridge.run(input)]
    if validate:
        assert_valid(events)
    return events


def interrupts(events: list[BaseEvent]) -> list[dict[str, Any]]:
    finished = wire(events)[-1]
    assert finished["type"] == "RUN_FINISHED" and finished["outcome"]["type"] == "interrupt", finished
    return finished["outcome"]["interrupts"]


@pytest.fixture
def ledger() -> list[int]:
    return []


__all__ = [
    "AGUIAgent",
    "after_tool",
    "ask_tool",
    "assert_valid",
    "boss",
    "collect",
    "delegate",
    "interrupts",
    "make_input",
    "of_type",
    "pay_tool",
    "payer",
    "record",
    "researcher",
    "solo",
    "tool_call",
    "types",
    "wire",
]


# -- servers ------------------------------------------------------------------------


class ThreadServer:
    """uvicorn serving `app` on loopback from a background thread."""

    def __init__(self, app: Any) -> None:
        import threading

        import uvicorn

        self.port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ThreadServer:
        import time

        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="session")
def served_cli() -> Iterator[str]:
    """`supervisor-graph serve tests/agui/served.py:supervisor --subagents attributed` in a
    subprocess; yields its endpoint URL."""
    import os
    import sys

    from bench.aegra import running

    port = free_port()
    target = f"{Path(__file__).parent / 'served.py'}:supervisor"
    command = [sys.executable, "-m", "supervisor_graph.cli", "serve", target, "--port", str(port), "--subagents", "attributed"]
    url = f"http://127.0.0.1:{port}/agent"
    with running(command, f"{url}/health", env=dict(os.environ), log=RECORDINGS.parent / f"supervisor-graph-serve-{port}.log"):
        yield url


def background_team(*, research_latency: float, boss_latency: float = 0.0, quote: bool = False) -> Agent:
    """A boss whose research subagent runs as a background task: it answers the launch at
    once and the outcome when it comes (quoting the outcome's last line with `quote`)."""

    def boss(messages: list[Any]) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage) and str(last.content).startswith("[Background task"):
            return "the research is in" + (": " + str(last.content).splitlines()[-1] if quote else "")
        if isinstance(last, ToolMessage):
            return "started, will report"
        return delegate("research", str(last.content))

    research = Agent(
        id="research-agent",
        description="Researches.",
        model=ScriptedChatModel(policy=lambda m: "bees dance", latency=research_latency, record_calls=False),
    )
    return Agent(
        id="boss",
        model=ScriptedChatModel(policy=boss, latency=boss_latency, record_calls=False),
        agents={"research": research},
        memory=Memory(":memory:"),
        background_tasks={"tools": {"research": {}}},
    )
