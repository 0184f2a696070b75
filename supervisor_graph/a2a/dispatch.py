"""The `/a2a` JSON-RPC endpoint: the SDK's dispatcher behind our body check, answering
every error in words of ours.

The SDK (a2a-sdk 1.x) answers what goes wrong with the exception's text: a body it
cannot parse gets `-32700` with `json`'s message ("Expecting value: line 1 column 1"),
one that fails its parser `-32603` with Python's ("maximum recursion depth exceeded...",
"'utf-8' codec can't decode byte 0xff..."), params of the wrong type `-32602` with
protobuf's or pydantic's report in `data`, and a failure inside a run `-32603` with
whatever the exception said, which may name files, tables or SQL. Here:

- the body is checked first (`agui.jsonrpc`): parse errors, nesting, wrong JSON types
  and a bad envelope get `-32700` / `-32600` / `-32602` with our message, HTTP 200 as
  the SDK answers its own JSON-RPC errors;
- whatever the SDK then answers is rewritten on its way out (`_ours`): `-32603` says
  "Internal error" and no more (the SDK has logged the exception with its traceback),
  the 0.3 adapter's `-32600` keeps its code with our message and the fields pydantic
  named (not its prose); the A2A errors that mean something to a client (task not
  found, invalid params, ...) keep their code and message, an invalid-params error's
  details naming the field the parser refused (`data.field`) instead of its report;
- a stream that fails part-way ends with the same sanitised `-32603` event
  (`SafeRequestHandler`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncGenerator
from typing import Any

from a2a.server.jsonrpc_models import (
    InternalError as RPCInternalError,
)
from a2a.server.jsonrpc_models import (
    InvalidParamsError as RPCInvalidParams,
)
from a2a.server.jsonrpc_models import (
    InvalidRequestError as RPCInvalidRequest,
)
from a2a.server.jsonrpc_models import (
    JSONParseError as RPCParseError,
)
from a2a.server.jsonrpc_models import (
    JSONRPCError,
)
from a2a.server.request_handlers import DefaultRequestHandler

# the adapter from the dispatcher's module: importing its own module first is an import cycle in the SDK
from a2a.server.routes.jsonrpc_dispatcher import JSONRPC03Adapter, JsonRpcDispatcher
from a2a.utils.errors import A2AError
from a2a.utils.errors import InternalError as A2AInternalError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from supervisor_graph.agui.jsonrpc import with_checked_body

__all__ = ["INTERNAL_MESSAGE", "SafeRequestHandler", "jsonrpc_routes"]

log = logging.getLogger("supervisor_graph.a2a")

INTERNAL_MESSAGE = "Internal error: the server could not answer this request (its log says why)."
_INVALID_REQUEST = "Invalid Request: the request does not fit the method's A2A 0.3 request type (see data.fields)."


def _fields(report: str) -> list[str]:
    """The fields a pydantic report names (its lines that are not indented, after the
    first): where the request went wrong, without the library's prose."""
    return [line.strip() for line in report.splitlines()[1:] if line.strip() and not line.startswith(" ")][:10]


_FIELD = re.compile(r"Failed to parse (\w+) field")
_AT = re.compile(r' at "([\w.\[\]]{1,200})"')


def _field(report: str) -> str:
    """The field a protobuf parse report names (`Failed to parse message field: Failed to
    parse role field: <Python's words>` -> `message.role`), without its prose."""
    chain = _FIELD.findall(report)
    if chain:
        return ".".join(chain[:20])
    found = _AT.search(report)
    return found.group(1) if found else "params"


def _ours(error: Exception | JSONRPCError | A2AError) -> Exception | JSONRPCError | A2AError:
    """The error a client may see (module docstring). The A2A errors keep their code and
    message, which are the protocol's; an invalid-params error's details name the field
    of the client's request that the parser refused, not the parser's words (which can
    be Python's: "invalid literal for int() with base 10")."""
    if isinstance(error, A2AInternalError):
        return A2AInternalError(message=INTERNAL_MESSAGE)
    if isinstance(error, A2AError):
        report = error.data.get("parseError") if isinstance(error.data, dict) else None
        if isinstance(report, str):
            # the same class: the SDK maps an error to its code by its exact type
            return type(error)(message=error.message, data={"field": _field(report)})
        return error
    if not isinstance(error, JSONRPCError):
        return RPCInternalError(message=INTERNAL_MESSAGE)
    if error.code == RPCParseError().code:
        return RPCParseError(message="Parse error: the body is not valid JSON.")
    if error.code == RPCInternalError().code:
        return RPCInternalError(message=INTERNAL_MESSAGE)
    if error.code in (RPCInvalidRequest().code, RPCInvalidParams().code) and isinstance(error.data, str):
        # the 0.3 adapter's: pydantic's whole report as data
        kind = RPCInvalidRequest if error.code == RPCInvalidRequest().code else RPCInvalidParams
        return kind(message=_INVALID_REQUEST, data={"fields": _fields(error.data)})
    return error


class _Adapter03(JSONRPC03Adapter):
    """The SDK's A2A 0.3 adapter, its errors in our words."""

    def _generate_error_response(self, request_id: str | int | None, error: Any) -> Any:
        return super()._generate_error_response(request_id, _ours(error))


class _Dispatcher(JsonRpcDispatcher):
    """The SDK's JSON-RPC dispatcher, its errors (and its 0.3 adapter's) in our words."""

    def __init__(self, request_handler: DefaultRequestHandler) -> None:
        super().__init__(request_handler=request_handler, enable_v0_3_compat=True)
        # the base class builds its 0.3 adapter itself, with the SDK's words
        self._v03_adapter = _Adapter03(http_handler=request_handler)

    def _generate_error_response(self, request_id: str | int | None, error: Any) -> Any:
        return super()._generate_error_response(request_id, _ours(error))


class _Endpoint:
    """The ASGI app of the JSON-RPC route: the body check, then the dispatcher."""

    def __init__(self, dispatcher: _Dispatcher) -> None:
        self.dispatcher = dispatcher

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await with_checked_body(scope, receive, send, self._checked, status=200)

    async def _checked(self, message: dict[str, Any], scope: Scope, receive: Receive, send: Send) -> None:
        response: Response = await self.dispatcher.handle_requests(Request(scope, receive))
        await response(scope, receive, send)


def jsonrpc_routes(handler: DefaultRequestHandler, urls: list[str]) -> list[Route]:
    """The POST routes of the JSON-RPC endpoint at each of `urls` (A2A 1.0 and, through
    the SDK's compatibility layer, 0.3 method names)."""
    endpoint = _Endpoint(_Dispatcher(handler))
    return [Route(url, endpoint=endpoint, methods=["POST"]) for url in urls]


async def _safe_stream(events: AsyncGenerator[Any, None]) -> AsyncGenerator[Any, None]:
    try:
        async for event in events:
            yield event
    except A2AInternalError:
        raise A2AInternalError(message=INTERNAL_MESSAGE) from None
    except A2AError:
        raise
    except Exception:
        log.exception("A2A stream failed")
        raise A2AInternalError(message=INTERNAL_MESSAGE) from None
    finally:
        await events.aclose()


class SafeRequestHandler(DefaultRequestHandler):
    """The SDK's request handler whose streams end with an A2A error of ours when they
    fail (the dispatchers would put the exception's text in the stream's last event)."""

    async def on_message_send_stream(self, params: Any, context: Any) -> AsyncGenerator[Any, None]:  # type: ignore[override]
        async for event in _safe_stream(super().on_message_send_stream(params, context)):
            yield event

    async def on_subscribe_to_task(self, params: Any, context: Any) -> AsyncGenerator[Any, None]:  # type: ignore[override]
        async for event in _safe_stream(super().on_subscribe_to_task(params, context)):
            yield event
