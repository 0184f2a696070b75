"""`serve --a2a`: the supervisor over A2A, driven by the `a2a-sdk` client over real HTTP
(uvicorn in a thread, scripted models): the card, an answer, streamed text, a paused
approval as `input-required` then resumed, cancel, one context as one thread."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import HumanMessage, ToolMessage

from supervisor_graph import Agent, Memory
from supervisor_graph.a2a import add_a2a_routes
from supervisor_graph.agui import AGUIAgent, create_app
from supervisor_graph.testing import ScriptedChatModel, delegate, tool_call
from tests.agui.conftest import ThreadServer, ask_tool, pay_tool

# Set when the slow subagent's model call begins (on the server's thread): the run then
# holds its context and has delegated, which a test waits for instead of a guessed sleep.
SLOW_BEGAN = threading.Event()


class _SlowBegan(AsyncCallbackHandler):
    async def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        SLOW_BEGAN.set()


async def _until_slow_began(client: Any, task_id: str) -> None:
    assert await asyncio.to_thread(SLOW_BEGAN.wait, 60), "the slow run never delegated"
    got = await client.get_task(GetTaskRequest(id=task_id))
    assert got.status.state == TaskState.TASK_STATE_WORKING


def _boss(ledger: list[int]) -> Agent:
    """Says hello; on "pay" it asks to pay 5 (approval); with a subagent for the card."""

    def policy(messages: list[Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"done: {messages[-1].content}"
        said = [m.content for m in messages if isinstance(m, HumanMessage)]
        if said and "account" in str(said[-1]):
            return tool_call("ask_account", {"question": "Which account?"})
        if said and "pay" in str(said[-1]):
            return tool_call("pay", {"amount": 5})
        if said and "slow" in str(said[-1]):
            return delegate("research_agent", "dig")
        return f"Hello there, turn {len(said)}."

    slow = Agent(
        id="research-agent",
        description="Finds facts.",
        model=ScriptedChatModel(policy=lambda m: "- fact", latency=30, callbacks=[_SlowBegan()]),
    )
    return Agent(
        id="boss",
        description="Answers questions and pays invoices.",
        agents={"research_agent": slow},
        tools=[pay_tool(ledger), ask_tool([])],
        model=ScriptedChatModel(policy=policy),
        memory=Memory(":memory:"),
    )


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, list[int]]]:
    ledger: list[int] = []
    bridge = AGUIAgent(_boss(ledger), resource_id="user-1")
    app = create_app(bridge)
    add_a2a_routes(app, bridge)
    with ThreadServer(app) as server:
        yield server.url, ledger


async def _client(url: str, http: httpx.AsyncClient, *, streaming: bool) -> Any:
    return await create_client(url, client_config=ClientConfig(httpx_client=http, streaming=streaming))


def _request(
    text: str | None = None, *, context_id: str = "", task_id: str = "", data: Any = None
) -> SendMessageRequest:
    parts: list[Part] = [new_text_part(text)] if text is not None else []
    if data is not None:
        parts.append(new_data_part(data))
    message = Message(
        message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=parts, context_id=context_id, task_id=task_id
    )
    return SendMessageRequest(message=message)


async def _all(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    return [event async for event in stream]


async def _send(client: Any, request: SendMessageRequest) -> Any:
    """Send, read every event, then the task as the server keeps it."""
    events = await _all(client.send_message(request))
    first = events[0]
    task_id = next(
        getattr(first, field).id if field == "task" else getattr(first, field).task_id
        for field in ("task", "status_update", "artifact_update")
        if first.HasField(field)
    )
    return await client.get_task(GetTaskRequest(id=task_id))


async def test_the_card_names_the_agent_and_a_skill_per_subagent(served: tuple[str, list[int]]) -> None:
    url, _ = served
    async with httpx.AsyncClient(timeout=30) as http:
        card = (await http.get(f"{url}/.well-known/agent-card.json")).json()
    assert card["name"] == "boss"
    assert card["description"] == "Answers questions and pays invoices."
    assert card["capabilities"]["streaming"] is True
    assert [(s["id"], s["description"]) for s in card["skills"]] == [("research_agent", "Finds facts.")]
    assert [(i["url"], i["protocolVersion"]) for i in card["supportedInterfaces"]] == [(f"{url}/a2a", "1.0")]
    assert "url" not in card  # a 0.3 field: only with compat="0.3" (test_a2a_conformance)


async def test_message_send_answers_with_a_completed_task(served: tuple[str, list[int]]) -> None:
    url, _ = served
    async with httpx.AsyncClient(timeout=30) as http:
        client = await _client(url, http, streaming=False)
        task = await _send(client, _request("hi"))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_text_parts(task.status.message.parts) == ["Hello there, turn 1."]
    assert "".join(get_text_parts(task.artifacts[0].parts)) == "Hello there, turn 1."


async def test_message_stream_streams_the_supervisors_text(served: tuple[str, list[int]]) -> None:
    url, _ = served
    async with httpx.AsyncClient(timeout=30) as http:
        client = await _client(url, http, streaming=True)
        events = await _all(client.send_message(_request("hi")))
    chunks = [
        t for e in events if e.HasField("artifact_update") for t in get_text_parts(e.artifact_update.artifact.parts)
    ]
    assert len(chunks) > 1  # streamed, not one block
    assert "".join(chunks) == "Hello there, turn 1."
    states = [e.status_update.status.state for e in events if e.HasField("status_update")]
    assert states[0] == TaskState.TASK_STATE_WORKING
    assert states[-1] == TaskState.TASK_STATE_COMPLETED


async def test_two_messages_in_one_context_continue_one_thread(served: tuple[str, list[int]]) -> None:
    url, _ = served
    context = f"ctx-{uuid.uuid4()}"
    async with httpx.AsyncClient(timeout=30) as http:
        client = await _client(url, http, streaming=False)
        first = await _send(client, _request("hi", context_id=context))
        second = await _send(client, _request("again", context_id=context))
    assert first.context_id == second.context_id == context
    assert first.id != second.id  # a task per run
    assert get_text_parts(second.status.message.parts) == ["Hello there, turn 2."]


@pytest.mark.parametrize(("answer", "paid"), [({"text": "approve"}, True), ({"data": {"approved": False}}, False)])
async def test_a_paused_approval_is_input_required_then_resumed(
    served: tuple[str, list[int]], answer: dict[str, Any], paid: bool
) -> None:
    url, ledger = served
    before = len(ledger)
    async with httpx.AsyncClient(timeout=30) as http:
        client = await _client(url, http, streaming=True)
        paused = await _send(client, _request("please pay"))
        assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        said = " ".join(get_text_parts(paused.status.message.parts))
        assert "Waiting for approval: pay" in said and '"approve"' in said
        follow = _request(answer.get("text"), context_id=paused.context_id, task_id=paused.id, data=answer.get("data"))
        done = await _send(client, follow)
    assert done.id == paused.id
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert len(ledger) == before + (1 if paid else 0)
    text = get_text_parts(done.status.message.parts)[0]
    assert text.startswith("done: ") and (("paid 5" in text) is paid)


async def test_a_data_part_edits_or_rejects_with_a_reason(served: tuple[str, list[int]]) -> None:
    """SPEC §29: the data part is the decision, in the one shape; a refused one (edited
    args of the wrong type) keeps the task input-required, saying why, and runs nothing."""
    url, ledger = served
    async with httpx.AsyncClient(timeout=30) as http:
        client = await _client(url, http, streaming=True)
        paused = await _send(client, _request("please pay"))
        [waiting] = get_data_parts(paused.status.message.parts)[0]["interrupts"]
        assert waiting["allowedDecisions"] == ["approve", "edit", "reject"]
        assert waiting["inputSchema"]["required"] == ["amount"]
        before = len(ledger)
        bad = {"approved": True, "args": {"amount": "five"}}
        again = await _send(client, _request(context_id=paused.context_id, task_id=paused.id, data=bad))
        assert again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED and len(ledger) == before
        said = get_text_parts(again.status.message.parts)[0]
        assert "amount: Input should be a valid integer" in said and "Waiting for approval: pay" in said
        edit = {"approved": True, "args": {"amount": 2}, "interruptId": waiting["interruptId"]}
        done = await _send(client, _request(context_id=paused.context_id, task_id=paused.id, data=edit))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED and ledger[before:] == [2]
        assert get_text_parts(done.status.message.parts)[0].endswith("paid 2")
        paused = await _send(client, _request("pay again"))
        reject = {"approved": False, "message": "Wrong supplier."}
        done = await _send(client, _request(context_id=paused.context_id, task_id=paused.id, data=reject))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED and ledger[before:] == [2]
    assert get_text_parts(done.status.message.parts)[0].endswith("Their reason: Wrong supplier.")


async def test_a_suspended_tool_takes_a_resume_data_part(served: tuple[str, list[int]]) -> None:
    url, _ = served
    async with httpx.AsyncClient(timeout=30) as http:
        client = await _client(url, http, streaming=True)
        paused = await _send(client, _request("which account?"))
        assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert "Waiting for input to ask_account: Which account?" in get_text_parts(paused.status.message.parts)[0]
        answer = {"resume": {"account": "ACME-2"}}
        done = await _send(client, _request(context_id=paused.context_id, task_id=paused.id, data=answer))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_text_parts(done.status.message.parts) == ["done: using ACME-2"]


async def test_an_unclear_answer_leaves_the_task_waiting(served: tuple[str, list[int]]) -> None:
    url, _ = served
    async with httpx.AsyncClient(timeout=30) as http:
        client = await _client(url, http, streaming=False)
        paused = await _send(client, _request("pay it"))
        again = await _send(client, _request("maybe", context_id=paused.context_id, task_id=paused.id))
        assert again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert "answers nothing" in get_text_parts(again.status.message.parts)[0]
        # a new message in the context is refused while the approval waits
        refused = await _send(client, _request("hi", context_id=paused.context_id))
        assert refused.status.state == TaskState.TASK_STATE_FAILED
        assert paused.id in get_text_parts(refused.status.message.parts)[0]
        cancelled = await client.cancel_task(CancelTaskRequest(id=paused.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        # the cancel declined the approval: the context takes new messages again
        fresh = await _send(client, _request("hi", context_id=paused.context_id))
        assert fresh.status.state == TaskState.TASK_STATE_COMPLETED


async def test_cancel_aborts_the_run_and_a_busy_context_fails(served: tuple[str, list[int]]) -> None:
    url, _ = served
    context = f"ctx-{uuid.uuid4()}"
    async with httpx.AsyncClient(timeout=30) as http:
        client = await _client(url, http, streaming=True)
        SLOW_BEGAN.clear()
        stream = client.send_message(_request("slow one", context_id=context))
        first = await stream.__anext__()
        task_id = first.task.id
        await _until_slow_began(client, task_id)
        other = await _client(url, http, streaming=False)
        busy = await _send(other, _request("hi", context_id=context))
        assert busy.status.state == TaskState.TASK_STATE_FAILED
        assert "Another run is in progress" in get_text_parts(busy.status.message.parts)[0]
        cancelled = await other.cancel_task(CancelTaskRequest(id=task_id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        await stream.aclose()
        got = await other.get_task(GetTaskRequest(id=task_id))
        assert got.status.state == TaskState.TASK_STATE_CANCELED
    # the thread is free again at once: a new message in the context runs
    async with httpx.AsyncClient(timeout=30) as http:
        after = await _send(await _client(url, http, streaming=False), _request("hi", context_id=context))
    assert after.status.state == TaskState.TASK_STATE_COMPLETED


async def test_the_token_guards_the_a2a_routes() -> None:
    bridge = AGUIAgent(_boss([]), resource_id="user-1")
    app = create_app(bridge, auth_token="s3cret")
    add_a2a_routes(app, bridge)
    with ThreadServer(app) as server:
        async with httpx.AsyncClient(timeout=30) as http:
            # the card is public (A2A 1.0: clients discover the scheme from it)
            public = await http.get(f"{server.url}/.well-known/agent-card.json")
            assert public.status_code == 200 and "bearer" in public.json()["securitySchemes"]
            rpc = await http.post(
                f"{server.url}/a2a", json={"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}
            )
            assert rpc.status_code == 401 and rpc.headers["www-authenticate"] == "Bearer"
        headers = {"Authorization": "Bearer s3cret"}
        async with httpx.AsyncClient(timeout=30, headers=headers) as http:
            card = (await http.get(f"{server.url}/.well-known/agent-card.json")).json()
            assert "bearer" in card["securitySchemes"]
            client = await _client(server.url, http, streaming=False)
            task = await _send(client, _request("hi"))
            assert task.status.state == TaskState.TASK_STATE_COMPLETED


async def test_the_0_3_method_names_answer(served: tuple[str, list[int]]) -> None:
    url, _ = served
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {
            "message": {"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}
        },
    }
    async with httpx.AsyncClient(timeout=30) as http:
        answer = (await http.post(f"{url}/a2a", json=body)).json()
    assert answer["result"]["status"]["state"] == "completed", answer


async def test_the_serve_command_with_a2a_answers_an_a2a_client() -> None:
    """`supervisor-graph serve tests/agui/served.py:supervisor --a2a` in a subprocess."""
    import os
    import sys
    from pathlib import Path

    from bench.aegra import free_port, running
    from tests.agui.conftest import RECORDINGS

    port = free_port()
    target = f"{Path(__file__).parents[1] / 'agui' / 'served.py'}:supervisor"
    command = [sys.executable, "-m", "supervisor_graph.cli", "serve", target, "--port", str(port), "--a2a"]
    url = f"http://127.0.0.1:{port}"
    log = RECORDINGS.parent / f"supervisor-graph-serve-a2a-{port}.log"
    with running(command, f"{url}/agent/health", env=dict(os.environ), log=log):
        async with httpx.AsyncClient(timeout=30) as http:
            client = await _client(url, http, streaming=True)
            task = await _send(client, _request("hello"))
            assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
            assert get_text_parts(task.status.message.parts)[0]


def test_the_serve_command_refuses_a2a_with_workers() -> None:
    from supervisor_graph.cli.main import main

    assert main(["serve", "tests/agui/served.py:supervisor", "--a2a", "--workers", "2"]) != 0


async def test_a_context_belongs_to_the_user_who_started_it() -> None:
    """A callable resource id gets the SDK's call context (the request headers in its state)."""
    bridge = AGUIAgent(_boss([]), resource_id=lambda call: call.state["headers"].get("x-user"))
    app = create_app(bridge)
    add_a2a_routes(app, bridge)
    context = f"ctx-{uuid.uuid4()}"
    with ThreadServer(app) as server:
        async with httpx.AsyncClient(timeout=30, headers={"x-user": "ann"}) as http:
            mine = await _send(await _client(server.url, http, streaming=False), _request("hi", context_id=context))
        async with httpx.AsyncClient(timeout=30, headers={"x-user": "bob"}) as http:
            theirs = await _send(await _client(server.url, http, streaming=False), _request("hi", context_id=context))
    assert mine.status.state == TaskState.TASK_STATE_COMPLETED
    assert theirs.status.state == TaskState.TASK_STATE_FAILED
    assert "another user" in get_text_parts(theirs.status.message.parts)[0]


async def test_message_metadata_on_busy_interrupts_the_running_task(served: tuple[str, list[int]]) -> None:
    url, _ = served
    context = f"ctx-{uuid.uuid4()}"
    async with httpx.AsyncClient(timeout=30) as http:
        client = await _client(url, http, streaming=True)
        SLOW_BEGAN.clear()
        stream = client.send_message(_request("slow one", context_id=context))
        first = await stream.__anext__()
        await _until_slow_began(client, first.task.id)
        request = _request("hi", context_id=context)
        request.message.metadata.update({"on_busy": "interrupt"})  # double texting (SPEC §29)
        other = await _client(url, http, streaming=False)
        second = await _send(other, request)
        assert second.status.state == TaskState.TASK_STATE_COMPLETED
        assert "Hello there, turn 2." in str(second)  # with the stopped run's message before it
        await _all(stream)
        request = _request("hi", context_id=context)
        request.message.metadata.update({"on_busy": "later"})
        wrong = await _send(other, request)
        assert wrong.status.state == TaskState.TASK_STATE_FAILED
        assert "enqueue" in get_text_parts(wrong.status.message.parts)[0]
