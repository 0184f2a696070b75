"""`A2AAgent` subagents (SPEC §27, issue 31 item 3) against A2A servers built with `a2a-sdk`
alone, over real HTTP in a thread: the result, streamed and attributed text, reported
usage, request context, an `input-required` task answered through the parent's approval,
abort (the server sees the cancel), and an unreachable agent."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("a2a.server", reason="the a2a extra: pip install 'supervisor-graph[a2a]'")

import uvicorn  # noqa: E402
from a2a.helpers.proto_helpers import get_data_parts, new_task, new_text_message, new_text_part  # noqa: E402
from a2a.server.agent_execution import AgentExecutor, RequestContext  # noqa: E402
from a2a.server.events import EventQueue  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater  # noqa: E402
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, TaskState  # noqa: E402
from google.protobuf.json_format import MessageToDict  # noqa: E402
from langchain_core.messages import ToolMessage  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

from supervisor_graph import A2AAgent, AbortController, Agent, Memory  # noqa: E402
from supervisor_graph.nodes.remote import a2a as a2a_node  # noqa: E402
from supervisor_graph.testing import ScriptedChatModel, delegate  # noqa: E402


async def _start(context: RequestContext, queue: EventQueue) -> TaskUpdater:
    """The task of a new request, submitted and working."""
    updater = TaskUpdater(queue, context.task_id or "", context.context_id or "")
    if context.current_task is None:
        task = new_task(
            context.task_id or "", context.context_id or "", TaskState.TASK_STATE_SUBMITTED, history=[context.message]
        )  # type: ignore[list-item]
        await queue.enqueue_event(task)
    await updater.start_work()
    return updater


class Echo(AgentExecutor):
    """Streams `echo: <prompt> (topic=<request context topic>)` a word at a time, and
    reports its usage in the final status's metadata."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _start(context, event_queue)
        metadata = (
            MessageToDict(context.message.metadata) if context.message and context.message.HasField("metadata") else {}
        )
        topic = (metadata.get("request_context") or {}).get("topic")
        words = f"echo: {context.get_user_input()} (topic={topic})".split(" ")
        for i, word in enumerate(words):
            await updater.add_artifact(
                [new_text_part(word + (" " if i < len(words) - 1 else ""))], artifact_id="answer", append=i > 0
            )
            await asyncio.sleep(0.01)
        await updater.update_status(
            TaskState.TASK_STATE_COMPLETED,
            metadata={"usage": {"input_tokens": 4, "output_tokens": 6, "total_tokens": 10}},
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        pass


class Asker(AgentExecutor):
    """Asks for input first; completes with `transfer done` when the answer approves."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.current_task is None:
            updater = await _start(context, event_queue)
            await updater.requires_input(
                new_text_message("May I transfer 7?", context_id=context.context_id, task_id=context.task_id)
            )
            return
        updater = await _start(context, event_queue)
        data = get_data_parts(context.message.parts) if context.message else []
        approved = bool(data and isinstance(data[0], dict) and data[0].get("approved"))
        await updater.add_artifact([new_text_part("transfer done" if approved else "transfer declined")])
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        pass


class Slow(AgentExecutor):
    """Streams one word, then works for a minute unless cancelled (which it records)."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await _start(context, event_queue)
        await updater.add_artifact([new_text_part("thinking ")], artifact_id="answer")
        await asyncio.sleep(60)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self.cancelled.append(context.task_id or "")
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def _serve(executor: AgentExecutor, *, streaming: bool) -> tuple[str, uvicorn.Server, threading.Thread]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name=type(executor).__name__,
        description="a test agent",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="main", name="main", description="what it does", tags=["test"])],
    )
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the A2A test server did not start"
        time.sleep(0.05)
    return url, server, thread


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Any]]:
    slow = Slow()
    started = {
        "echo": _serve(Echo(), streaming=True),
        "echo-blocking": _serve(Echo(), streaming=False),
        "asker": _serve(Asker(), streaming=True),
        "slow": _serve(slow, streaming=True),
    }
    yield {**{name: url for name, (url, _, _) in started.items()}, "slow_executor": slow}
    for _, server, thread in started.values():
        server.should_exit = True
        thread.join(timeout=10)


def boss(sub: A2AAgent, *, memory: Memory | None = None) -> tuple[Agent, ScriptedChatModel]:
    def policy(messages: list[Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"boss: {messages[-1].content}"
        return delegate("remote", "what is up?")

    model = ScriptedChatModel(policy=policy)
    return Agent(id="boss", model=model, agents={"remote": sub}, memory=memory), model


async def test_an_a2a_subagent_answers_streams_and_reports_usage(servers: dict[str, Any]) -> None:
    sub = A2AAgent(url=servers["echo"], description="Echoes.", id="echo-agent")
    parent, _ = boss(sub, memory=Memory(":memory:"))
    stream = await parent.stream("go", memory={"thread": "a2a-1"}, request_context={"topic": "bees"})
    chunks = [c async for c in stream.full_stream]
    result = await stream.result()
    expected = "echo: what is up? (topic=bees)"
    assert result.text == f"boss: {expected}"
    [delegation] = result.delegations
    assert delegation.text == expected and delegation.agent_id == "echo-agent" and delegation.success
    assert delegation.usage.total_tokens == 10  # what the agent reported
    # its text is the subagent's chunks, in the delegation's namespace, more than one
    start = next(c for c in chunks if c.type == "delegation-start")
    deltas = [c for c in chunks if c.type == "text-delta" and c.agent_path == ("boss", "echo-agent")]
    assert "".join(c.text for c in deltas) == expected and len(deltas) > 1
    assert {c.namespace for c in deltas} == {start.payload["namespace"]}


async def test_an_agent_that_does_not_stream_answers_with_message_send(servers: dict[str, Any]) -> None:
    parent, _ = boss(A2AAgent(url=servers["echo-blocking"], description="Echoes."))
    stream = await parent.stream("go", request_context={"topic": "owls"})
    chunks = [c async for c in stream.full_stream]
    result = await stream.result()
    assert result.text == "boss: echo: what is up? (topic=owls)"
    deltas = [c.text for c in chunks if c.type == "text-delta" and len(c.agent_path) == 2]
    assert deltas == ["echo: what is up? (topic=owls)"]


async def test_input_required_is_the_parents_pending_approval(servers: dict[str, Any]) -> None:
    sub = A2AAgent(url=servers["asker"], description="Transfers money.", id="banker")
    parent, _ = boss(sub, memory=Memory(":memory:"))
    paused = await parent.generate("go", memory={"thread": "a2a-3"})
    assert paused.finish_reason == "suspended"
    [item] = paused.suspended
    assert (item.kind, item.tool_name, item.agent_path) == ("approval", "banker", ("boss", "banker"))
    assert item.args == {"question": "May I transfer 7?"}
    done = await parent.approve_tool_call(interrupt_id=item.interrupt_id, memory={"thread": "a2a-3"})
    assert done.text == "boss: transfer done" and done.finish_reason == "stop"
    # declined: the answer reaches the same task, which decides; a node resumed in another
    # process (no task id remembered) finds its task by the delegation's context
    paused = await parent.generate("go", memory={"thread": "a2a-4"})
    [item] = paused.suspended
    a2a_node._TASKS.clear()
    done = await parent.decline_tool_call(interrupt_id=item.interrupt_id, memory={"thread": "a2a-4"})
    assert done.text == "boss: transfer declined"


async def test_abort_cancels_the_remote_task(servers: dict[str, Any]) -> None:
    slow: Slow = servers["slow_executor"]
    parent, _ = boss(A2AAgent(url=servers["slow"], description="Slow."), memory=Memory(":memory:"))
    controller = AbortController()
    stream = await parent.stream("go", memory={"thread": "a2a-5"}, abort_signal=controller.signal)
    async for chunk in stream.full_stream:
        if chunk.type == "text-delta" and len(chunk.agent_path) == 2:
            controller.abort("enough")  # the remote task is under way
    result = await stream.result()
    assert result.finish_reason == "abort"
    for _ in range(100):
        if slow.cancelled:
            break
        await asyncio.sleep(0.05)
    assert len(slow.cancelled) == 1


async def test_an_unreachable_agent_is_a_failed_delegation_with_a_generic_message() -> None:
    sub = A2AAgent(url="http://127.0.0.1:9", description="Gone.", id="gone", connect_timeout=2, timeout=5)
    parent, model = boss(sub)
    result = await parent.generate("go")
    [delegation] = result.delegations
    assert not delegation.success and delegation.error
    told = str(model.calls[1][-1].content)
    assert "gone" in told and "127.0.0.1" not in told and "Connect" not in told


def test_a2a_agent_declaration() -> None:
    with pytest.raises(ValueError, match="http"):
        A2AAgent(url="localhost:9999", description="d")
    with pytest.raises(ValueError, match="description"):
        A2AAgent(url="http://x", description="")
    sub = A2AAgent(url="http://agents.example:9999/travel/", description="Books trips.")
    assert (sub.id, sub.url) == ("a2a-agents-example-9999-travel", "http://agents.example:9999/travel")
    assert sub.agents == {} and sub.tools == {}
    with pytest.raises(ValueError, match="local subagent"):
        Agent(id="b", model=ScriptedChatModel(), agents={"r": sub}, background_tasks={"tools": {"r": {}}})
    # a callable team may choose it too
    parent = Agent(id="b", model=ScriptedChatModel(), agents=lambda ctx: {"r": sub})
    assert parent.agents["r"] is sub
