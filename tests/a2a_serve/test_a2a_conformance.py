"""`serve --a2a` against A2A 1.0 (what the A2A project's test kit checks), over real HTTP
with raw 1.0 JSON-RPC and the `a2a-sdk` client: the card (1.0 schema, public with a token,
cache headers, 0.3 only on request), `/a2a/`, a follow-up naming a task without its
context, refusals that change nothing, tasks owned by their user and kept in the memory's
sqlite file."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import AgentCard
from google.protobuf.json_format import ParseDict
from jsonschema.validators import Draft202012Validator
from langchain_core.messages import HumanMessage, ToolMessage
from referencing import Registry, Resource

from supervisor_graph import Agent, Memory
from supervisor_graph.a2a import add_a2a_routes
from supervisor_graph.agui import AGUIAgent, create_app
from supervisor_graph.testing import ScriptedChatModel, tool_call
from tests.agui.conftest import ThreadServer, pay_tool

SCHEMA = Path(__file__).with_name("a2a-1.0.schema.json")
V1 = {"A2A-Version": "1.0"}
# JSON-RPC error codes of A2A 1.0
TASK_NOT_FOUND, TASK_NOT_CANCELABLE, UNSUPPORTED_OPERATION, INVALID_PARAMS = -32001, -32002, -32004, -32602


def validator(definition: str) -> Draft202012Validator:
    """A validator for one definition of the 1.0 bundle, its `$ref`s resolved to the
    bundle's definitions (a2a-1.0.schema.README.md)."""
    bundle = json.loads(SCHEMA.read_text())
    resources = []
    for title, schema in bundle["definitions"].items():
        name = title.replace(" ", "")
        prefix = "google.protobuf" if title in ("Struct", "Timestamp", "Value") else "lf.a2a.v1"
        resources.append((f"{prefix}.{name}.jsonschema.json", Resource.from_contents(schema)))
    registry: Registry[Any] = Registry().with_resources(resources)
    return Draft202012Validator(bundle["definitions"][definition], registry=registry)


def _agent(ledger: list[int], storage: str) -> Agent:
    def policy(messages: list[Any]) -> Any:
        if isinstance(messages[-1], ToolMessage):
            return f"done: {messages[-1].content}"
        said = [m.content for m in messages if isinstance(m, HumanMessage)]
        if said and "pay" in str(said[-1]):
            return tool_call("pay", {"amount": 5})
        return f"Hello there, turn {len(said)}."

    return Agent(
        id="boss",
        description="Answers questions and pays invoices.",
        tools=[pay_tool(ledger)],
        model=ScriptedChatModel(policy=policy),
        memory=Memory(storage),
    )


def _user(call: Any) -> str:
    return str(call.state["headers"].get("x-user", "ann"))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[int]]]:
    """A sqlite-backed supervisor whose user is the `x-user` header (ann by default)."""
    ledger: list[int] = []
    storage = str(tmp_path_factory.mktemp("a2a") / "tasks.db")
    bridge = AGUIAgent(_agent(ledger, storage), resource_id=_user)
    app = create_app(bridge)
    add_a2a_routes(app, bridge)
    with ThreadServer(app) as server:
        yield server.url, ledger


def message(text: str | None = None, *, task_id: str = "", context_id: str = "", data: Any = None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": text}] if text is not None else []
    if data is not None:
        parts.append({"data": data})
    found: dict[str, Any] = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": parts}
    if task_id:
        found["taskId"] = task_id
    if context_id:
        found["contextId"] = context_id
    return found


async def rpc(
    http: httpx.AsyncClient, url: str, method: str, params: Any, *, path: str = "/a2a", user: str = "ann"
) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    answer = await http.post(f"{url}{path}", json=body, headers={**V1, "x-user": user})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def send(http: httpx.AsyncClient, url: str, msg: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """SendMessage; the task it answers with (fails on a JSON-RPC error)."""
    answer = await rpc(http, url, "SendMessage", {"message": msg}, **kwargs)
    assert "result" in answer, answer
    return dict(answer["result"]["task"])


async def get(http: httpx.AsyncClient, url: str, task_id: str, **kwargs: Any) -> dict[str, Any]:
    return await rpc(http, url, "GetTask", {"id": task_id}, **kwargs)


def said(task: dict[str, Any]) -> str:
    return " ".join(p.get("text", "") for p in task["status"].get("message", {}).get("parts", []))


# -- the card ------------------------------------------------------------------------


async def test_the_card_validates_against_the_1_0_schema(served: tuple[str, list[int]]) -> None:
    url, _ = served
    async with httpx.AsyncClient(timeout=30) as http:
        card = (await http.get(f"{url}/.well-known/agent-card.json")).json()
    assert list(validator("Agent Card").iter_errors(card)) == []
    ParseDict(card, AgentCard())  # the SDK's 1.0 type, unknown fields refused
    assert not {"url", "preferredTransport", "protocolVersion", "security", "additionalInterfaces"} & set(card)
    assert card["supportedInterfaces"] == [
        {"url": f"{url}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]


async def test_the_card_has_0_3_fields_only_when_asked() -> None:
    bridge = AGUIAgent(_agent([], ":memory:"))
    app = create_app(bridge)
    add_a2a_routes(app, bridge, compat="0.3")
    with ThreadServer(app) as server:
        async with httpx.AsyncClient(timeout=30) as http:
            card = (await http.get(f"{server.url}/.well-known/agent-card.json")).json()
            # a 0.3 client (its method names) works with such a card
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "message/send",
                "params": {
                    "message": {
                        "kind": "message",
                        "messageId": "m1",
                        "role": "user",
                        "parts": [{"kind": "text", "text": "hi"}],
                    }
                },
            }
            answer = (await http.post(f"{server.url}/a2a", json=body)).json()
    assert card["url"] == f"{server.url}/a2a" and card["protocolVersion"] == "0.3"
    assert [i["protocolVersion"] for i in card["supportedInterfaces"]] == ["1.0", "0.3"]
    assert answer["result"]["status"]["state"] == "completed", answer


async def test_with_a_token_the_card_is_public_and_declares_the_bearer_scheme() -> None:
    bridge = AGUIAgent(_agent([], ":memory:"))
    app = create_app(bridge, auth_token="s3cret")
    add_a2a_routes(app, bridge)
    with ThreadServer(app) as server:
        async with httpx.AsyncClient(timeout=30) as http:
            answer = await http.get(f"{server.url}/.well-known/agent-card.json")
            assert answer.status_code == 200
            card = answer.json()
            under = await http.get(f"{server.url}/a2a/.well-known/agent-card.json")
            assert under.status_code == 200 and under.json() == card
            for path in ("/a2a", "/a2a/"):
                refused = await http.post(
                    f"{server.url}{path}", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
                )
                assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        async with httpx.AsyncClient(timeout=30, headers={"Authorization": "Bearer s3cret"}) as http:
            client = await create_client(server.url, client_config=ClientConfig(httpx_client=http, streaming=False))
            assert client is not None
            done = await send(http, server.url, message("hi"))
    assert list(validator("Agent Card").iter_errors(card)) == []
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_the_card_is_also_under_the_endpoint_path(served: tuple[str, list[int]]) -> None:
    url, _ = served
    async with httpx.AsyncClient(timeout=30) as http:
        root = await http.get(f"{url}/.well-known/agent-card.json")
        under = await http.get(f"{url}/a2a/.well-known/agent-card.json")
    assert under.status_code == 200 and under.headers["content-type"] == "application/json"
    assert under.json() == root.json()
    assert list(validator("Agent Card").iter_errors(under.json())) == []
    for header in ("etag", "last-modified", "cache-control"):
        assert under.headers[header] == root.headers[header]


async def test_the_card_has_a_stable_last_modified_and_answers_if_modified_since(
    served: tuple[str, list[int]],
) -> None:
    url, _ = served
    card = f"{url}/.well-known/agent-card.json"
    async with httpx.AsyncClient(timeout=30) as http:
        first = await http.get(card)
        modified = first.headers["last-modified"]
        again = await http.get(card)
        since = await http.get(card, headers={"If-Modified-Since": modified})
        later = await http.get(card, headers={"If-Modified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"})
        earlier = await http.get(card, headers={"If-Modified-Since": "Thu, 01 Jan 1970 00:00:00 GMT"})
        garbage = await http.get(card, headers={"If-Modified-Since": "yesterday-ish"})
        # If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2)
        other_tag = await http.get(card, headers={"If-Modified-Since": modified, "If-None-Match": '"other"'})
    # RFC 9110 IMF-fixdate, e.g. "Mon, 07 Dec 2026 05:10:00 GMT"
    assert re.fullmatch(r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
                        r"\d{4} \d\d:\d\d:\d\d GMT", modified), modified  # fmt: skip
    assert parsedate_to_datetime(modified) <= datetime.now(UTC)
    assert again.headers["last-modified"] == modified
    assert (since.status_code, since.content, since.headers["last-modified"]) == (304, b"", modified)
    assert since.headers["etag"] == first.headers["etag"]
    assert later.status_code == 304
    assert earlier.status_code == 200 and earlier.json() == first.json()
    assert garbage.status_code == 200 and other_tag.status_code == 200


async def test_last_modified_is_the_one_given() -> None:
    bridge = AGUIAgent(_agent([], ":memory:"))
    app = create_app(bridge)
    add_a2a_routes(app, bridge, last_modified=datetime(2026, 3, 1, 12, 30, 5, 900_000, tzinfo=UTC))
    with ThreadServer(app) as server:
        async with httpx.AsyncClient(timeout=30) as http:
            answer = await http.get(f"{server.url}/a2a/.well-known/agent-card.json")
    assert answer.headers["last-modified"] == "Sun, 01 Mar 2026 12:30:05 GMT"


async def test_the_card_is_cached_by_max_age_and_etag(served: tuple[str, list[int]]) -> None:
    url, _ = served
    async with httpx.AsyncClient(timeout=30) as http:
        first = await http.get(f"{url}/.well-known/agent-card.json")
        etag = first.headers["etag"]
        same = await http.get(f"{url}/.well-known/agent-card.json", headers={"If-None-Match": etag})
        weak = await http.get(f"{url}/.well-known/agent-card.json", headers={"If-None-Match": f'"other", W/{etag}'})
        other = await http.get(f"{url}/.well-known/agent-card.json", headers={"If-None-Match": '"other"'})
    assert "max-age=" in first.headers["cache-control"]
    assert (same.status_code, same.content, same.headers["etag"]) == (304, b"", etag)
    assert weak.status_code == 304
    assert other.status_code == 200 and other.json() == first.json()


# -- the endpoint --------------------------------------------------------------------


async def test_a2a_with_a_slash_is_the_same_endpoint(served: tuple[str, list[int]]) -> None:
    url, _ = served
    async with httpx.AsyncClient(timeout=30) as http:
        task = await send(http, url, message("hi"), path="/a2a/")
        again = await get(http, url, task["id"], path="/a2a/")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert again["result"]["id"] == task["id"]


async def test_a_follow_up_naming_only_the_task_answers_its_approval(served: tuple[str, list[int]]) -> None:
    url, ledger = served
    before = len(ledger)
    async with httpx.AsyncClient(timeout=30) as http:
        paused = await send(http, url, message("please pay"))
        assert paused["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        done = await send(http, url, message("approve", task_id=paused["id"]))  # no contextId (1.0 allows it)
        # the context is free again: a new task in it runs (nothing is left waiting)
        fresh = await send(http, url, message("hi", context_id=paused["contextId"]))
    assert (done["id"], done["contextId"]) == (paused["id"], paused["contextId"])
    assert done["status"]["state"] == "TASK_STATE_COMPLETED", said(done)
    assert said(done) == "done: paid 5" and len(ledger) == before + 1
    assert fresh["status"]["state"] == "TASK_STATE_COMPLETED", said(fresh)


async def test_the_approval_data_part_has_camel_case_keys(served: tuple[str, list[int]]) -> None:
    """DM-SERIAL-001: A2A 1.0 JSON is camelCase, the keys of our data parts too; the old
    snake_case `interrupt_id` of an answer is still read (for one release)."""
    url, ledger = served
    before = len(ledger)
    async with httpx.AsyncClient(timeout=30) as http:
        paused = await send(http, url, message("please pay"))
        [data] = [p["data"] for p in paused["status"]["message"]["parts"] if "data" in p]
        [item] = data["interrupts"]
        answer = {"approved": True, "interrupt_id": item["interruptId"]}
        done = await send(http, url, message(task_id=paused["id"], data=answer))
    assert list(validator("Task").iter_errors(paused)) == []
    assert set(item) == {"interruptId", "kind", "toolName", "args", "message", "responseSchema",
                         "allowedDecisions", "inputSchema"}  # fmt: skip
    assert (item["toolName"], item["args"], item["allowedDecisions"]) == ("pay", {"amount": 5}, ["approve", "edit", "reject"])
    assert not [key for key in json.dumps(data).split('"') if re.fullmatch(r"[a-z]+(_[a-z]+)+", key)], data
    assert done["status"]["state"] == "TASK_STATE_COMPLETED", said(done)
    assert len(ledger) == before + 1


async def test_a_message_to_a_finished_task_is_refused_and_changes_nothing(served: tuple[str, list[int]]) -> None:
    url, _ = served
    async with httpx.AsyncClient(timeout=30) as http:
        done = await send(http, url, message("hi"))
        stored = (await get(http, url, done["id"]))["result"]
        for follow in (
            message("more", task_id=done["id"]),
            message("more", task_id=done["id"], context_id=done["contextId"]),
        ):
            refused = await rpc(http, url, "SendMessage", {"message": follow})
            assert refused["error"]["code"] == UNSUPPORTED_OPERATION, refused
            assert "terminal" in refused["error"]["message"]
        cancel = await rpc(http, url, "CancelTask", {"id": done["id"]})
        after = (await get(http, url, done["id"]))["result"]
    assert cancel["error"]["code"] == TASK_NOT_CANCELABLE, cancel
    assert after == stored


async def test_bad_input_gets_a_clear_error_and_loses_nothing(served: tuple[str, list[int]]) -> None:
    url, _ = served
    async with httpx.AsyncClient(timeout=30) as http:
        paused = await send(http, url, message("pay it"))
        before = (await get(http, url, paused["id"]))["result"]
        unknown = await get(http, url, "no-such-task")
        unknown_send = await rpc(http, url, "SendMessage", {"message": message("approve", task_id="no-such-task")})
        unknown_cancel = await rpc(http, url, "CancelTask", {"id": "no-such-task"})
        mismatch = await rpc(
            http, url, "SendMessage", {"message": message("approve", task_id=paused["id"], context_id="another")}
        )
        malformed = [
            await rpc(
                http, url, "SendMessage", {"message": {"messageId": "m", "role": "ROLE_USER", "parts": "approve"}}
            ),
            await rpc(
                http,
                url,
                "SendMessage",
                {"message": {"role": "ROLE_USER", "parts": [{"text": "x"}], "taskId": paused["id"]}},
            ),
            await rpc(
                http,
                url,
                "SendMessage",
                {"message": {"messageId": "m", "role": "KING", "parts": [{"text": "approve"}]}},
            ),
            await rpc(http, url, "SendMessage", "approve"),
        ]
        still = (await get(http, url, paused["id"]))["result"]
        done = await send(http, url, message("approve", task_id=paused["id"]))
    assert unknown["error"]["code"] == TASK_NOT_FOUND and unknown_send["error"]["code"] == TASK_NOT_FOUND
    assert unknown_cancel["error"]["code"] == TASK_NOT_FOUND
    assert mismatch["error"]["code"] == INVALID_PARAMS and "does not match" in mismatch["error"]["message"]
    # each names what is wrong in its 1.0 error details
    for answer, wrong in zip(malformed, ("parts", "message.message_id", "message.role", "params"), strict=True):
        assert answer["error"]["code"] in (INVALID_PARAMS, -32600), answer
        assert wrong in json.dumps(answer["error"]["data"]), answer
    # the paused task waits as it did, and its approval can still be given
    assert still == before and still["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert done["status"]["state"] == "TASK_STATE_COMPLETED", said(done)


async def test_a_task_belongs_to_its_user(served: tuple[str, list[int]]) -> None:
    url, ledger = served
    before = len(ledger)
    async with httpx.AsyncClient(timeout=30) as http:
        paused = await send(http, url, message("pay please"), user="ann")
        theirs = [
            await get(http, url, paused["id"], user="bob"),
            await rpc(http, url, "SendMessage", {"message": message("approve", task_id=paused["id"])}, user="bob"),
            await rpc(http, url, "CancelTask", {"id": paused["id"]}, user="bob"),
        ]
        listed = {
            user: [t["id"] for t in (await rpc(http, url, "ListTasks", {}, user=user))["result"].get("tasks", [])]
            for user in ("ann", "bob")
        }
        mine = (await get(http, url, paused["id"], user="ann"))["result"]
        done = await send(http, url, message("approve", task_id=paused["id"]), user="ann")
    assert [answer["error"]["code"] for answer in theirs] == [TASK_NOT_FOUND] * 3
    assert paused["id"] in listed["ann"] and paused["id"] not in listed["bob"]
    assert mine["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert done["status"]["state"] == "TASK_STATE_COMPLETED" and len(ledger) == before + 1


# -- restart -------------------------------------------------------------------------


async def test_tasks_outlive_a_restart_of_the_serve_command(tmp_path: Path) -> None:
    """`supervisor-graph serve tests/agui/served.py:supervisor --a2a` on a sqlite file,
    killed, then started again on the same file."""
    import os
    import sys

    from bench.aegra import free_port, running
    from tests.agui.conftest import RECORDINGS

    target = f"{Path(__file__).parents[1] / 'agui' / 'served.py'}:supervisor"
    env = {**os.environ, "SG_AGUI_STORAGE": str(tmp_path / "served.db")}

    def serve() -> tuple[list[str], str, Path]:
        port = free_port()
        command = [sys.executable, "-m", "supervisor_graph.cli", "serve", target, "--port", str(port), "--a2a"]
        return command, f"http://127.0.0.1:{port}", RECORDINGS.parent / f"supervisor-graph-serve-a2a-{port}.log"

    RECORDINGS.mkdir(exist_ok=True)
    command, url, log = serve()
    with running(command, f"{url}/agent/health", env=env, log=log) as proc:
        async with httpx.AsyncClient(timeout=30) as http:
            done = await send(http, url, message("hello"))
            paused = await send(http, url, message("please pay the invoice"))
        proc.kill()  # no shutdown: what the tasks kept is what was stored as they ran
        proc.wait(10)
    assert done["status"]["state"] == "TASK_STATE_COMPLETED" and said(done) == "echo: hello"
    assert paused["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", said(paused)

    command, url, log = serve()
    with running(command, f"{url}/agent/health", env=env, log=log):
        async with httpx.AsyncClient(timeout=30) as http:
            kept = (await get(http, url, done["id"]))["result"]
            waiting = (await get(http, url, paused["id"]))["result"]
            # a new task in the paused context is refused, naming the task that waits
            refused = await send(http, url, message("hello again", context_id=paused["contextId"]))
            answered = await send(http, url, message("approve", task_id=paused["id"]))
    assert kept["status"]["state"] == "TASK_STATE_COMPLETED" and said(kept) == "echo: hello"
    assert [p["text"] for m in kept["history"] for p in m["parts"] if "text" in p][0] == "hello"
    assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED" and "Waiting for approval: pay" in said(waiting)
    assert refused["status"]["state"] == "TASK_STATE_FAILED" and paused["id"] in said(refused)
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED", said(answered)
    assert said(answered) == "final: payer: paid 12"
