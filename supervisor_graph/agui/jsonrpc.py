"""The JSON-RPC 2.0 body check that `/mcp` and `/a2a` run before their SDKs read a request.

The SDKs parse a body with `json.loads` and answer what goes wrong with the exception's
text, or not at all: 10,000 nested brackets raise `RecursionError` (a 500 from the MCP
SDK, `-32603 maximum recursion depth exceeded...` from the A2A SDK), invalid UTF-8
`UnicodeDecodeError` (`'utf-8' codec can't decode byte 0xff...`), a 5,000-digit number
`ValueError` (`Exceeds the limit (4300 digits)...`), and a body of the wrong JSON type a
pydantic or protobuf report. Checked here first, each gets the protocol's own code with a
message of ours:

- `-32700` Parse error: not UTF-8, not JSON, nested deeper than `MAX_JSON_DEPTH`, a
  number out of range (`1e999`, `NaN`, thousands of digits), a lone surrogate escape
  (`"\\ud800"`: no Unicode text, it would fail later when stored or written out).
- `-32600` Invalid Request: not one request object (an array, i.e. a batch, which
  neither protocol takes; a string, a number, `null`), `jsonrpc` not `"2.0"`, an `id`
  or `method` of the wrong type, `params` that are not structured.
- `-32602` Invalid params: `params` given as an array (both protocols name their
  parameters).

Only what the body check lets through reaches the SDK, so the SDK's parser never meets
a body it would fail on in its own words.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

__all__ = [
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_JSON_DEPTH",
    "PARSE_ERROR",
    "BodyProblem",
    "check_jsonrpc_body",
    "parse_json_body",
    "read_body",
    "with_checked_body",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

# Deeper than any request either protocol defines (an A2A data part is free JSON, and
# protobuf's own parser stops at 100 levels); far below what exhausts Python's stack.
MAX_JSON_DEPTH = 64
# JSON has no limit; Python's int() stops at 4,300 digits with a ValueError of its own.
MAX_NUMBER_DIGITS = 1_000


class BodyProblem(Exception):
    """Why a body is refused: a JSON-RPC error code and a message for the client, and the
    request's id when it could be read (null otherwise, as JSON-RPC asks)."""

    def __init__(self, code: int, message: str, id: str | int | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id
        self.field = field  # the member of the request object that is wrong, if one is

    def reply(self) -> dict[str, Any]:
        """The JSON-RPC error response (`data.field` names the wrong member)."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["data"] = {"field": self.field}
        return {"jsonrpc": "2.0", "id": self.id, "error": error}


def _parse_error(why: str) -> BodyProblem:
    return BodyProblem(PARSE_ERROR, f"Parse error: {why}")


def _int(text: str) -> int:
    if len(text) > MAX_NUMBER_DIGITS:
        raise _parse_error(f"a number in the body has more than {MAX_NUMBER_DIGITS} digits.")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _parse_error(f"the number {text[:40]} is out of range.")
    return value


def _constant(text: str) -> Any:
    raise _parse_error(f"{text} is not a JSON number.")


def _walk(value: Any) -> None:
    """Refuse nesting deeper than MAX_JSON_DEPTH and strings that are not Unicode text
    (a lone surrogate escape), without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    raise _parse_error(
                        "a string in the body holds a lone surrogate escape (\\ud800-\\udfff)."
                    ) from None
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_JSON_DEPTH:
            raise _parse_error(f"the body nests arrays and objects deeper than {MAX_JSON_DEPTH} levels.")
        children = list(item.items()) if isinstance(item, dict) else [(None, v) for v in item]
        for key, child in children:
            if key is not None:
                stack.append((key, depth))
            stack.append((child, depth + 1))


def parse_json_body(body: bytes) -> Any:
    """The JSON value of a request body.

    Raises:
        BodyProblem: `-32700`, with a message that says what is wrong in our words.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _parse_error(f"the body is not UTF-8 text (byte {exc.start} is not).") from None
    # RFC 8259 lets a parser skip a byte order mark; json.loads of a str refuses it
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise _parse_error("the body is empty.")
    try:
        value = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except BodyProblem:
        raise
    except json.JSONDecodeError as exc:
        raise _parse_error(f"the body is not valid JSON (line {exc.lineno}, column {exc.colno}).") from None
    except RecursionError:
        raise _parse_error(f"the body nests arrays and objects deeper than {MAX_JSON_DEPTH} levels.") from None
    except ValueError:
        raise _parse_error("the body is not valid JSON.") from None
    _walk(value)
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _is_id(value: Any, null: bool) -> bool:
    return (
        (value is None and null) or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    )


def check_jsonrpc_body(
    body: bytes, *, responses: bool = False, null_id: bool = True, null_params: bool = False
) -> dict[str, Any]:
    """The JSON-RPC 2.0 message of a request body: one request or notification object
    (also a response to a server's request, with `responses=True`: MCP clients post
    those). `null_id=False` refuses `"id": null` (MCP ids are strings or integers);
    `null_params=True` takes `"params": null` as no params.

    Raises:
        BodyProblem: the body is not one (module docstring).
    """
    message = parse_json_body(body)
    if isinstance(message, list):
        raise BodyProblem(
            INVALID_REQUEST, "Invalid Request: batches (a JSON array) are not supported; send one object."
        )
    if not isinstance(message, dict):
        raise BodyProblem(
            INVALID_REQUEST,
            f"Invalid Request: the body must be a JSON-RPC 2.0 object, not a JSON {_json_type(message)}.",
        )
    raw_id = message.get("id")
    good_id = _is_id(raw_id, null_id)
    reply_id = raw_id if good_id else None

    def invalid(field: str, why: str, code: int = INVALID_REQUEST) -> BodyProblem:
        return BodyProblem(code, why, reply_id, field)

    if message.get("jsonrpc") != "2.0":
        raise invalid("jsonrpc", 'Invalid Request: "jsonrpc" must be "2.0".')
    if "id" in message and not good_id:
        kinds = "a string, an integer or null" if null_id else "a string or an integer"
        raise invalid("id", f'Invalid Request: "id" must be {kinds}, not a JSON {_json_type(raw_id)}.')
    if "method" in message:
        method = message["method"]
        if not isinstance(method, str) or not method:
            raise invalid("method", 'Invalid Request: "method" must be a non-empty string.')
        if "params" in message:
            params = message["params"]
            if isinstance(params, list):
                raise invalid(
                    "params", 'Invalid params: "params" must be an object (parameters go by name).', INVALID_PARAMS
                )
            if not isinstance(params, dict) and not (params is None and null_params):
                raise invalid(
                    "params", f'Invalid Request: "params" must be an object, not a JSON {_json_type(params)}.'
                )
        return message
    if not responses:
        raise invalid("method", 'Invalid Request: "method" is missing.')
    if "id" not in message or ("result" in message) == ("error" in message):
        raise invalid(
            "method", 'Invalid Request: a request needs "method"; a response needs "id" and "result" or "error".'
        )
    if "result" in message and not isinstance(message["result"], dict):
        raise invalid(
            "result", f'Invalid Request: "result" must be an object, not a JSON {_json_type(message["result"])}.'
        )
    error = message.get("error", {})
    if "error" in message and not (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and not isinstance(error.get("code"), bool)
        and isinstance(error.get("message"), str)
    ):
        raise invalid(
            "error", 'Invalid Request: "error" must be an object with an integer "code" and a string "message".'
        )
    return message


async def read_body(receive: Receive) -> tuple[bytes, list[Message], bool]:
    """The request's body, the messages read to get it (to hand on unchanged), and
    whether the client went away before it was whole."""
    chunks: list[bytes] = []
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return b"".join(chunks), messages, True
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), messages, False


def _replay(messages: list[Message], receive: Receive) -> Receive:
    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return replay


Checked = Callable[[dict[str, Any], Scope, Receive, Send], Awaitable[None]]


async def with_checked_body(
    scope: Scope,
    receive: Receive,
    send: Send,
    then: Checked,
    *,
    status: int,
    responses: bool = False,
    null_id: bool = True,
    null_params: bool = False,
) -> None:
    """Read a POST's body and check it (`check_jsonrpc_body`); a refused body is answered
    with its JSON-RPC error and HTTP `status`, a good one goes to `then` with the parsed
    message and a `receive` that hands the body over again. The app's `Guard` has
    capped the body's size already (its error passes through)."""
    body, read, gone = await read_body(receive)
    if gone:
        return  # nobody to answer
    try:
        message = check_jsonrpc_body(body, responses=responses, null_id=null_id, null_params=null_params)
    except BodyProblem as problem:
        await JSONResponse(problem.reply(), status_code=status)(scope, receive, send)
        return
    await then(message, scope, _replay(read, receive), send)
