"""Remote subagents (SPEC §21) against a real `langgraph dev` serving tests/remote/graphs.py:
results, streamed and attributed tokens, usage, request context, hooks, references, a
remote interrupt answered through the parent, abort, and an unreachable server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph_sdk import get_client

from supervisor_graph import AbortController, Agent, Memory, RemoteAgent
from supervisor_graph.testing import ScriptedChatModel, delegate
from tests.langgraph_dev import ROOT, langgraph_dev


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    graphs = {name: str(ROOT / "tests/remote/graphs.py") + f":{name}" for name in ("echo", "approver", "slow")}
    with langgraph_dev(tmp_path_factory.mktemp("remote"), {"dependencies": ["."], "graphs": graphs, "env": {}}) as url:
        yield url


def boss(remote: RemoteAgent, *, memory: Memory | None = None) -> tuple[Agent, ScriptedChatModel]:
    def policy(messages: list[Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"boss: {messages[-1].content}"
        return delegate("remote", "what is up?")

    model = ScriptedChatModel(policy=policy)
    return Agent(id="boss", model=model, agents={"remote": remote}, memory=memory), model


async def test_a_remote_subagent_answers_streams_and_reports_usage(server: str) -> None:
    remote = RemoteAgent(url=server, graph_id="echo", description="Echoes.", id="echo-agent")
    parent, _ = boss(remote, memory=Memory(":memory:"))
    stream = await parent.stream("go", memory={"thread": "r-1"}, request_context={"topic": "bees"})
    chunks = [c async for c in stream.full_stream]
    result = await stream.result()
    expected = "echo: what is up? (topic=bees, 1 parent messages)"
    assert result.text == f"boss: {expected}"
    [delegation] = result.delegations
    assert delegation.text == expected and delegation.agent_id == "echo-agent" and delegation.success
    assert delegation.usage.total_tokens == 10  # what the remote reported
    assert result.usage.total_tokens == 15 + 15 + 10
    # its tokens are the subagent's chunks, in the delegation's namespace
    start = next(c for c in chunks if c.type == "delegation-start")
    deltas = [c for c in chunks if c.type == "text-delta" and c.agent_path == ("boss", "echo-agent")]
    assert "".join(c.text for c in deltas) == expected and {c.namespace for c in deltas} == {start.payload["namespace"]}
    # one server thread per delegation, named by sub_agent_thread_id
    state = await get_client(url=server).threads.get_state(delegation.sub_agent_thread_id)
    assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai"]


async def test_a_remote_subagent_on_the_embedded_compiled_graph(server: str) -> None:
    """The compiled graph driven by an app (`graph.ainvoke`, a remote interrupt resumed
    with `Command(resume=...)`), as the facade drives it."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    echo = RemoteAgent(url=server, graph_id="echo", description="Echoes.", id="echo-agent")
    graph = boss(echo)[0].compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "embedded-remote"}}
    out = await graph.ainvoke({"messages": [HumanMessage("go")]}, config, context={"request_context": {"topic": "owls"}})
    assert out["messages"][-1].content == "boss: echo: what is up? (topic=owls, 1 parent messages)"
    approver = RemoteAgent(url=server, graph_id="approver", description="Approves.", id="approver-agent")
    graph = boss(approver)[0].compile(checkpointer=InMemorySaver())
    paused = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    [item] = paused["__interrupt__"]
    assert item.value["tool_name"] == "transfer"
    out = await graph.ainvoke(Command(resume={item.id: {"approved": True}}), config)
    assert out["messages"][-1].content == "boss: transfer done"


async def test_hooks_and_references_work_as_for_local_subagents(server: str) -> None:
    remote = RemoteAgent(url=server, graph_id="echo", description="Echoes.")
    parent, model = boss(remote)
    seen: list[str] = []
    result = await parent.generate(
        "go",
        delegation={
            "on_delegation_start": lambda ctx: seen.append(f"start {ctx.primitive_id}") or {"modified_prompt": "changed"},
            "on_delegation_complete": lambda ctx: seen.append(f"done {ctx.result.text[:12]}"),
            "enable_result_references": True,
        },
    )
    assert seen == ["start echo", "done echo: change"]
    assert "echo: changed" in result.text and "[ref: echo-1]" in str(model.calls[1][-1].content)


async def test_a_remote_interrupt_is_the_parents_pending_approval(server: str) -> None:
    remote = RemoteAgent(url=server, graph_id="approver", description="Transfers money.")
    parent, _ = boss(remote, memory=Memory(":memory:"))
    paused = await parent.generate("go", memory={"thread": "r-3"})
    assert paused.finish_reason == "suspended"
    [item] = paused.suspended
    assert (item.kind, item.tool_name, item.args, item.agent_path) == ("approval", "transfer", {"amount": 7}, ("boss", "approver"))
    done = await parent.approve_tool_call(interrupt_id=item.interrupt_id, memory={"thread": "r-3"})
    assert done.text == "boss: transfer done" and done.finish_reason == "stop"
    thread = done.delegations[0].sub_agent_thread_id if done.delegations else None
    state = await get_client(url=server).threads.get_state(thread or paused.suspended[0].payload["remote"]["thread_id"])
    assert not state["interrupts"] and state["values"]["messages"][-1]["content"] == "transfer done"


async def _boss_runs(client: Any) -> list[dict[str, Any]]:
    threads = await client.threads.search(metadata={"parent_agent": "boss"}, limit=100)
    return [run for t in threads for run in await client.runs.list(t["thread_id"])]


async def _until(check: Any, client: Any, what: str, timeout: float = 60.0) -> list[dict[str, Any]]:
    """Poll the server's runs until `check(runs)` holds: bounded but generous, so a busy
    machine is slow here instead of failing."""
    deadline = time.monotonic() + timeout
    while not check(runs := await _boss_runs(client)):
        assert time.monotonic() < deadline, f"{what}: {[r['status'] for r in runs]}"
        await asyncio.sleep(0.1)
    return runs


async def test_abort_cancels_the_remote_run(server: str) -> None:
    remote = RemoteAgent(url=server, graph_id="slow", description="Slow.")
    parent, _ = boss(remote, memory=Memory(":memory:"))
    client = get_client(url=server)
    earlier = {run["run_id"] for run in await _boss_runs(client)}  # the module's other tests' runs
    controller = AbortController()
    stream = await parent.stream("go", memory={"thread": "r-4"}, abort_signal=controller.signal)

    def ours(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [run for run in runs if run["run_id"] not in earlier]

    async def abort_when_started() -> None:
        async for chunk in stream.full_stream:
            if chunk.type == "delegation-start":
                # the remote run is under way on the server (its model takes 30 s), not
                # merely a guessed second after the delegation was announced
                await _until(lambda runs: any(r["status"] == "running" for r in ours(runs)), client, "never ran")
                controller.abort("enough")

    await abort_when_started()
    result = await stream.result()
    assert result.finish_reason == "abort"
    [delegation] = result.delegations  # a failure with the abort's reason, never an empty success
    assert not delegation.success and delegation.finish_reason == "abort" and delegation.error == "enough"
    runs = await _until(
        lambda runs: any(r["status"] in ("interrupted", "error", "success") for r in ours(runs)), client, "never ended"
    )
    assert [run["status"] for run in ours(runs)] == ["interrupted"], [r["status"] for r in ours(runs)]


async def test_an_unreachable_server_is_a_failed_delegation_with_a_generic_message() -> None:
    remote = RemoteAgent(url="http://127.0.0.1:9", graph_id="echo", description="Gone.", connect_timeout=2, timeout=5)
    parent, model = boss(remote)
    result = await parent.generate("go")
    [delegation] = result.delegations
    assert not delegation.success and delegation.error
    told = str(model.calls[1][-1].content)
    assert "echo" in told and "127.0.0.1" not in told and "Connect" not in told


def test_remote_agent_declaration_errors() -> None:
    with pytest.raises(ValueError, match="http"):
        RemoteAgent(url="localhost:2024", graph_id="g", description="d")
    with pytest.raises(ValueError, match="description"):
        RemoteAgent(url="http://x", graph_id="g", description="")
    remote = RemoteAgent(url="http://x/", graph_id="g", description="d")
    assert (remote.id, remote.url) == ("g", "http://x")
    with pytest.raises(ValueError, match="local subagent"):
        Agent(id="b", model=ScriptedChatModel(), agents={"r": remote}, background_tasks={"tools": {"r": {}}})


# -- AGUIAgent(RemoteAgent(...)): a remote graph served over AG-UI -----------------------


async def test_agui_serves_a_remote_graph(server: str) -> None:
    from supervisor_graph.agui import AGUIAgent
    from tests.agui.conftest import collect, make_input, of_type, types, wire

    bridge = AGUIAgent(RemoteAgent(url=server, graph_id="echo", description="Echoes."), resource_id="u1")
    assert bridge.get_capabilities().human_in_the_loop.interrupts is True
    events = await collect(bridge, make_input("agui-remote-1", "hello there"))
    assert types(events)[0] == "RUN_STARTED" and types(events)[-1] == "RUN_FINISHED"
    text = "".join(e["delta"] for e in of_type(events, "TEXT_MESSAGE_CONTENT"))
    assert text == "echo: hello there (topic=None, 0 parent messages)"
    assert wire(events)[-1]["outcome"] == {"type": "success"}
    # the thread belongs to its resource
    other = AGUIAgent(RemoteAgent(url=server, graph_id="echo", description="Echoes."), resource_id="u2")
    refused = await collect(other, make_input("agui-remote-1", "mine now"))
    assert wire(refused)[-1]["code"] == "THREAD_FORBIDDEN"
    assert AGUIAgent(RemoteAgent(url=server, graph_id="echo", description="E.", resumable=False)).get_capabilities().human_in_the_loop.interrupts is False


async def test_agui_remote_interrupt_then_resume(server: str) -> None:
    from supervisor_graph.agui import AGUIAgent
    from tests.agui.conftest import collect, interrupts, make_input, of_type, wire

    bridge = AGUIAgent(RemoteAgent(url=server, graph_id="approver", description="Transfers."), resource_id="u1")
    paused = await collect(bridge, make_input("agui-remote-2", "send 7"))
    [pending] = interrupts(paused)
    assert pending["reason"] == "supervisor_graph:tool_approval"
    again = await collect(bridge, make_input("agui-remote-2", "and another", ))
    assert wire(again)[-1]["code"] == "INTERRUPT_PENDING"
    resumed = await collect(
        bridge, make_input("agui-remote-2", None, resume=[{"interrupt_id": pending["id"], "status": "resolved", "payload": {"approved": True}}])
    )
    assert wire(resumed)[-1]["outcome"] == {"type": "success"}
    assert "".join(e["delta"] for e in of_type(resumed, "TEXT_MESSAGE_CONTENT")) == "transfer done"


# -- RemoteAgent(resumable=False): nothing answers its interrupts -----------------------


class CountingProxy:
    """A reverse proxy in front of the server that counts the requests it forwards (what
    the remote server receives from the code under test)."""

    def __init__(self, upstream: str) -> None:
        from tests.agui.conftest import ThreadServer

        self.requests: list[tuple[str, str]] = []
        self.upstream = upstream

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:  # a function: uvicorn takes it for ASGI 3
            await self.forward(scope, receive, send)

        self.server = ThreadServer(app)

    @property
    def url(self) -> str:
        return self.server.url

    async def forward(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        import httpx

        assert scope["type"] == "http"
        self.requests.append((scope["method"], scope["path"]))
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in (b"host", b"content-length")]
        target = self.upstream + scope["path"] + (f"?{scope['query_string'].decode()}" if scope["query_string"] else "")
        async with httpx.AsyncClient(timeout=60) as client:
            async with client.stream(scope["method"], target, headers=headers, content=body) as response:
                kept = [(k.encode(), v.encode()) for k, v in response.headers.items() if k.lower() not in ("content-length", "transfer-encoding")]
                await send({"type": "http.response.start", "status": response.status_code, "headers": kept})
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def __enter__(self) -> CountingProxy:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.__exit__(*exc)


async def test_agui_refuses_to_resume_a_remote_that_cannot_resume(server: str) -> None:
    """Seed 003: a handle that cannot resume reports an error to a resume; here
    `REMOTE_NOT_RESUMABLE`, and no request reaches the server."""
    from supervisor_graph.agui import AGUIAgent
    from supervisor_graph.agui.remote import RemoteBridge
    from tests.agui.conftest import collect, interrupts, make_input, wire

    with CountingProxy(server) as proxy:
        remote = RemoteAgent(url=proxy.url, graph_id="approver", description="Transfers.", resumable=False)
        bridge = AGUIAgent(remote, resource_id="u1", compat="mastra")
        [pending] = interrupts(await collect(bridge, make_input("agui-remote-fixed", "send 7")))
        before = len(proxy.requests)
        assert before > 0  # the proxy is in the way
        resumed = await collect(
            bridge,
            make_input("agui-remote-fixed", None, resume=[{"interrupt_id": pending["id"], "status": "resolved", "payload": {"approved": True}}]),
        )
        assert [e["type"] for e in wire(resumed)] == ["RUN_STARTED", "RUN_ERROR"]
        assert wire(resumed)[-1]["code"] == "REMOTE_NOT_RESUMABLE" and "cannot be resumed" in wire(resumed)[-1]["message"]
        assert len(proxy.requests) == before
    # the remote thread still waits where it stopped
    thread = RemoteBridge.thread_id("agui-remote-fixed")
    assert (await get_client(url=server).threads.get(thread))["status"] == "interrupted"
    assert len(await get_client(url=server).runs.list(thread)) == 1


async def test_a_subagent_that_cannot_resume_fails_its_delegation_on_an_interrupt(server: str) -> None:
    remote = RemoteAgent(url=server, graph_id="approver", description="Transfers money.", resumable=False)
    parent, model = boss(remote, memory=Memory(":memory:"))
    result = await parent.generate("go", memory={"thread": "r-fixed-1"})
    assert result.finish_reason == "stop" and not result.suspended  # no pause nobody could answer
    [delegation] = result.delegations
    assert not delegation.success and delegation.error == "RemoteNotResumableError"
    assert "[Delegation Failed] approver" in str(model.calls[1][-1].content)


async def test_a_pause_stored_before_a_remote_became_unresumable_is_refused(server: str) -> None:
    """The same thread, served again with `resumable=False`: the facade and AG-UI refuse to
    answer its pause, and nothing is sent to the remote server."""
    from supervisor_graph.agui import AGUIAgent
    from supervisor_graph.declaration.errors import RemoteNotResumableError
    from tests.agui.conftest import collect, interrupts, make_input, wire

    memory = Memory(":memory:")
    with CountingProxy(server) as proxy:
        before_change, _ = boss(RemoteAgent(url=proxy.url, graph_id="approver", description="Transfers."), memory=memory)
        [pending] = interrupts(await collect(AGUIAgent(before_change, resource_id="u1"), make_input("r-fixed-2", "go")))
        sent = len(proxy.requests)
        after_change, _ = boss(RemoteAgent(url=proxy.url, graph_id="approver", description="Transfers.", resumable=False), memory=memory)
        entry = {"interrupt_id": pending["id"], "status": "resolved", "payload": {"approved": True}}
        refused = await collect(AGUIAgent(after_change, resource_id="u1"), make_input("r-fixed-2", None, resume=[entry]))
        assert wire(refused)[-1]["type"] == "RUN_ERROR" and wire(refused)[-1]["code"] == "REMOTE_NOT_RESUMABLE"
        with pytest.raises(RemoteNotResumableError, match="resumable=False"):
            await after_change.approve_tool_call(tool_call_id="remote-call-1", memory={"thread": "r-fixed-2", "resource": "u1"})
        assert len(proxy.requests) == sent
        # still pending, and answerable once the declaration allows it again
        done = await before_change.approve_tool_call(tool_call_id="remote-call-1", memory={"thread": "r-fixed-2", "resource": "u1"})
        assert done.text == "boss: transfer done" and len(proxy.requests) > sent
