"""Hostile bodies on `/a2a` (issue 46 item 4), over real HTTP: deep nesting, invalid
UTF-8, numbers out of range, bodies of the wrong JSON type and a bad envelope each get a
JSON-RPC error of ours (-32700, -32600 or -32602; HTTP 200 as the SDK answers its own),
never a 500 or Python's exception text; params the SDK's parser refuses keep naming the
field; and a failure inside the SDK (here the task store) answers "Internal error" in
our words, in a plain answer and at the end of a stream, its text only in the log."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")

from a2a.server.context import ServerCallContext  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore  # noqa: E402
from a2a.types import Task  # noqa: E402

from supervisor_graph import Agent, Memory  # noqa: E402
from supervisor_graph.a2a import add_a2a_routes  # noqa: E402
from supervisor_graph.a2a.dispatch import INTERNAL_MESSAGE  # noqa: E402
from supervisor_graph.agui import AGUIAgent, create_app  # noqa: E402
from supervisor_graph.testing import ScriptedChatModel  # noqa: E402
from tests.agui.conftest import ThreadServer  # noqa: E402
from tests.agui.hostile import BODIES, python_words_in  # noqa: E402

TOKEN = "hostile-token"
HEADERS = {"content-type": "application/json", "A2A-Version": "1.0", "authorization": f"Bearer {TOKEN}"}
SECRET = "table secret_tasks is locked at /srv/data/tasks.db"


def _agent() -> Agent:
    return Agent(
        id="echo",
        description="Echoes.",
        model=ScriptedChatModel(policy=lambda messages: f"echo: {messages[-1].content}", record_calls=False),
        memory=Memory(":memory:"),
    )


class _BrokenStore(InMemoryTaskStore):
    """A task store whose every read fails with a message no client should see."""

    async def get(self, task_id: str, context: ServerCallContext | None = None) -> Task | None:  # type: ignore[override]
        raise RuntimeError(SECRET)

    async def save(self, task: Task, context: ServerCallContext | None = None) -> None:  # type: ignore[override]
        raise RuntimeError(SECRET)


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    bridge = AGUIAgent(_agent())
    app = create_app(bridge, auth_token=TOKEN)
    add_a2a_routes(app, bridge)
    with ThreadServer(app) as server:
        yield server.url


@pytest.mark.parametrize("name", list(BODIES))
@pytest.mark.parametrize("path", ["/a2a", "/a2a/"])
def test_a_hostile_body_gets_a_json_rpc_error_of_ours(served: str, name: str, path: str) -> None:
    body, codes = BODIES[name]
    answer = httpx.post(f"{served}{path}", content=body, headers=HEADERS, timeout=30)
    assert answer.status_code == 200, answer.text
    error = answer.json()["error"]
    assert error["code"] in codes, error
    assert python_words_in(error) == [], error


def _rpc(url: str, method: str, params: Any, request_id: Any = None) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": request_id or str(uuid.uuid4()), "method": method, "params": params}
    version = "0.3" if "/" in method else "1.0"
    answer = httpx.post(f"{url}/a2a", json=body, headers={**HEADERS, "A2A-Version": version}, timeout=30)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("SendMessage", {"message": "hello"}, "message"),
        ("SendMessage", {"message": {"messageId": "m", "role": "KING", "parts": [{"text": "x"}]}}, "role"),
        ("GetTask", {"id": 5}, "id"),
        ("GetTask", {"id": "t", "historyLength": "x"}, "historyLength"),  # protobuf: "invalid literal for int()"
        ("ListTasks", {"pageSize": 1e300}, "pageSize"),
        ("message/send", {"message": "hello"}, "message"),  # the 0.3 adapter (pydantic)
        ("message/send", {"message": {"role": 7}}, "role"),
    ],
)
def test_params_of_the_wrong_type_name_the_field_in_our_words(
    served: str, method: str, params: Any, field: str
) -> None:
    answer = _rpc(served, method, params, request_id="req-9")
    assert answer["id"] == "req-9"
    error = answer["error"]
    assert error["code"] in (-32600, -32602), error
    assert field in json.dumps(error.get("data")), error
    assert python_words_in(error) == [], error


def test_a_failure_inside_the_sdk_is_an_internal_error_in_our_words() -> None:
    bridge = AGUIAgent(_agent())
    app = create_app(bridge, auth_token=TOKEN)
    add_a2a_routes(app, bridge, task_store=_BrokenStore())
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    with ThreadServer(app) as server:
        got = _rpc(server.url, "GetTask", {"id": "some-task"})
        sent = _rpc(server.url, "SendMessage", {"message": message})
        old = _rpc(server.url, "tasks/get", {"id": "some-task"})
        body = {"jsonrpc": "2.0", "id": 3, "method": "SendStreamingMessage", "params": {"message": message}}
        with httpx.stream("POST", f"{server.url}/a2a", json=body, headers=HEADERS, timeout=30) as streamed:
            lines = list(streamed.iter_lines())
    # the stream fails at its first event: the SDK answers one JSON-RPC error, not a stream
    events = [json.loads(line.removeprefix("data:")) for line in lines if line.startswith(("data:", "{"))]
    assert events, lines
    for answer in (got, sent, old, events[-1]):
        assert answer["error"]["code"] == -32603, answer
        assert answer["error"]["message"] == INTERNAL_MESSAGE
        assert "secret" not in json.dumps(answer)
