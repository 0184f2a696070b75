"""Hostile bodies on `/mcp` (issue 46 item 4), over real HTTP against the app the serve
command builds: deep nesting, invalid UTF-8, numbers out of range, bodies of the wrong
JSON type and a bad envelope each get HTTP 400 with a JSON-RPC error of ours (-32700,
-32600 or -32602), never a 500, a closed connection or Python's exception text; the
server answers a real call afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

pytest.importorskip("mcp")

from supervisor_graph import Agent, Memory  # noqa: E402
from supervisor_graph.cli.workers import build_app  # noqa: E402
from supervisor_graph.testing import ScriptedChatModel  # noqa: E402
from tests.agui.hostile import BODIES, python_words_in  # noqa: E402
from tests.mcp.serving import Served, call_tool, serve_settings  # noqa: E402

TOKEN = "hostile-token"
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def _agent() -> Agent:
    return Agent(
        id="echo",
        description="Echoes.",
        model=ScriptedChatModel(policy=lambda messages: f"echo: {messages[-1].content}", record_calls=False),
        memory=Memory(":memory:"),
    )


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with Served(build_app(_agent(), serve_settings(TOKEN))) as url:
        yield url


@pytest.mark.parametrize("name", list(BODIES))
def test_a_hostile_body_gets_a_json_rpc_error_of_ours(served: str, name: str) -> None:
    body, codes = BODIES[name]
    answer = httpx.post(
        f"{served}/mcp", content=body, headers={**HEADERS, "authorization": f"Bearer {TOKEN}"}, timeout=30
    )
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] in codes, error
    assert python_words_in(error) == [], error
    assert answer.json()["jsonrpc"] == "2.0"


def test_without_the_token_a_hostile_body_is_refused_before_it_is_read(served: str) -> None:
    answer = httpx.post(f"{served}/mcp", content=b"[" * 10_000, headers=HEADERS, timeout=30)
    assert answer.status_code == 401
    assert answer.json()["code"] == "AUTH_REQUIRED"


def test_the_id_of_a_request_with_a_wrong_member_is_echoed(served: str) -> None:
    body = b'{"jsonrpc":"2.0","id":"req-7","method":"tools/call","params":"x"}'
    answer = httpx.post(
        f"{served}/mcp", content=body, headers={**HEADERS, "authorization": f"Bearer {TOKEN}"}, timeout=30
    ).json()
    assert answer["id"] == "req-7"
    assert answer["error"] == {
        "code": -32600,
        "message": 'Invalid Request: "params" must be an object, not a JSON string.',
        "data": {"field": "params"},
    }


def test_a_byte_order_mark_and_null_params_are_taken(served: str) -> None:
    for body in (
        b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}',
    ):
        answer = httpx.post(
            f"{served}/mcp", content=body, headers={**HEADERS, "authorization": f"Bearer {TOKEN}"}, timeout=30
        )
        assert answer.status_code == 200, answer.text
        assert '"name":"ask_echo"' in answer.text


async def test_the_server_still_answers_a_call_after_them(served: str) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        for body, _ in BODIES.values():
            await http.post(f"{served}/mcp", content=body, headers={**HEADERS, "authorization": f"Bearer {TOKEN}"})
    result = await call_tool(served, "ask_echo", {"prompt": "still here"}, {"authorization": f"Bearer {TOKEN}"})
    assert not result.isError
    assert result.content[0].text == "echo: still here"


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"prompt": 5}, "INVALID_ARGUMENTS: prompt: Input should be a valid string"),
        ({}, "INVALID_ARGUMENTS: prompt: Field required"),
        ({"prompt": "hi", "on_busy": "never"}, "INVALID_ARGUMENTS: on_busy: Input should be 'reject'"),
        ({"prompt": "hi", "thread_id": ".."}, "INVALID_THREAD_ID: The thread id '..' is a path step"),
    ],
)
async def test_arguments_of_the_wrong_type_are_a_tool_error_in_our_words(
    served: str, arguments: dict[str, object], said: str
) -> None:
    """FastMCP words these "Error executing tool ...: 1 validation error for askArguments ...
    [type=string_type, input_value=5, ...] For further information visit
    https://errors.pydantic.dev/..."."""
    result = await call_tool(served, "ask_echo", arguments, {"authorization": f"Bearer {TOKEN}"})
    assert result.isError
    text = result.content[0].text
    assert text.startswith(said), text
    assert python_words_in(text) == [], text
