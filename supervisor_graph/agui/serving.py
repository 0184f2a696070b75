"""Serving safely (SPEC §19): what `create_app` checks before a request reaches a route.

- The `Host` header against the allowed hosts (a DNS-rebinding page gets 400).
- With a token, `Authorization: Bearer <token>` on every API route (401 without it),
  compared in constant time. The page, its two assets and the health probes stay open:
  they show nothing the page does not.
- The request body's size (413), from `Content-Length` and as the body streams in.
- The thread ids a client names: their shape (422), and their owner, which is the owner
  of the top-level thread (`<thread>::...` names a delegation's or a background task's
  thread of it), so another user's delegation thread is refused like its parent (403).

Every refusal is JSON: `{"code": "...", "detail": ...}` (FastAPI's `detail` plus a code).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from supervisor_graph.agui.frontend import InputError
from supervisor_graph.checkpointers.naming import NS_JOIN

if TYPE_CHECKING:
    from supervisor_graph.agui.agent import AGUIAgent

__all__ = [
    "AUTH_TOKEN_ENV",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_READ_TIMEOUT",
    "DEFAULT_MAX_THREAD_ID_LENGTH",
    "LOOPBACK_HOSTS",
    "Guard",
    "add_error_handlers",
    "default_allowed_hosts",
    "is_loopback",
    "refusal",
    "root_thread",
    "thread_access",
    "thread_id_limit",
    "thread_id_problem",
]

log = logging.getLogger("supervisor_graph.agui")

AUTH_TOKEN_ENV = "SUPERVISOR_GRAPH_AUTH_TOKEN"
DEFAULT_MAX_BODY_BYTES = 1_000_000
# seconds a client has to send a request's head (`deadline.py`, under `serve`) and,
# from then on, its body (the Guard)
DEFAULT_READ_TIMEOUT = 30.0
DEFAULT_MAX_THREAD_ID_LENGTH = 256
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")

# the HTTP status of each refusal the bridge raises as an InputError
_STATUS = {"RESOURCE_REQUIRED": 401, "THREAD_FORBIDDEN": 403, "INVALID_THREAD_ID": 422}
_HTTP_CODES = {400: "BAD_REQUEST", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}


def refusal(status: int, code: str, detail: Any, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"code": code, "detail": detail}, status_code=status, headers=headers)


# -- thread ids --------------------------------------------------------------------------


def root_thread(thread_id: str) -> str:
    """The top-level thread an id belongs to: the id itself, or what comes before its
    first `::` (top-level ids never hold one: runs refuse them)."""
    return thread_id.split(NS_JOIN, 1)[0]


def thread_id_problem(thread_id: str, max_length: int | None = DEFAULT_MAX_THREAD_ID_LENGTH) -> str | None:
    """Why a client may not name `thread_id` (None: it may). `/` is refused because a
    thread id is one path segment of the routes that read a thread: an id that could be
    created but not opened would be a trap. `.` and `..` for the same reason: HTTP
    clients (browsers' fetch, curl, httpx) resolve them as path steps, also written
    `%2E%2E`, so `/threads/..` reaches another route."""
    if not thread_id:
        return "The thread id is empty."
    if thread_id in (".", ".."):
        return f"The thread id {thread_id!r} is a path step that HTTP clients resolve away; use another id."
    if max_length is not None and len(thread_id) > max_length:
        return f"The thread id is longer than {max_length} characters."
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in thread_id):
        return "The thread id holds control characters or line breaks."
    if "/" in thread_id:
        return "The thread id holds '/'; use another separator."
    if not root_thread(thread_id):
        return f"The thread id names no thread before {NS_JOIN!r}."
    return None


def thread_id_limit(request: Request) -> int | None:
    return getattr(request.app.state, "max_thread_id_length", DEFAULT_MAX_THREAD_ID_LENGTH)


async def thread_access(bridge: AGUIAgent, request: Request, thread_id: str) -> str:
    """The request's resource, once it may read `thread_id` (`AGUIAgent.access` with this
    app's thread-id length limit).

    Raises:
        InputError: `INVALID_THREAD_ID`, `RESOURCE_REQUIRED` or `THREAD_FORBIDDEN`.
    """
    return await bridge.access(request, thread_id, thread_id_limit(request))


# FastAPI's 400 for a JSON body that json.loads fails on with anything but a
# JSONDecodeError (those are 422 json_invalid already): invalid UTF-8, nesting deeper than
# Python's recursion limit, a number of more than 4,300 digits
_UNPARSED = "There was an error parsing the body"


def _unparsed(cause: BaseException | None) -> dict[str, Any]:
    """The validation error of a JSON body that could not be read, in the shape of
    FastAPI's `json_invalid` (a decision: every body that is not JSON is 422
    `INVALID_REQUEST`, as docs/serving-safely.md says, whatever failed in the parser)."""
    if isinstance(cause, UnicodeDecodeError):
        msg = "The body is not UTF-8 text."
    elif isinstance(cause, RecursionError):
        msg = "The body nests arrays and objects too deep."
    else:
        msg = "The body is not JSON that can be read (a number out of range?)."
    return {"type": "json_invalid", "loc": ["body"], "msg": msg}


def add_error_handlers(app: FastAPI) -> None:
    """Every refusal of `app` as JSON with a code: the bridge's own, a body that does not
    validate, and the framework's (404, 405, ...)."""

    async def input_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, InputError)
        return refusal(_STATUS.get(exc.code, 400), exc.code, exc.message)

    async def invalid_request(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = [{k: v for k, v in e.items() if k in ("type", "loc", "msg")} for e in exc.errors()]
        return refusal(422, "INVALID_REQUEST", errors)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 400 and exc.detail == _UNPARSED:
            return refusal(422, "INVALID_REQUEST", [_unparsed(exc.__cause__)])
        return refusal(exc.status_code, _HTTP_CODES.get(exc.status_code, "HTTP_ERROR"), exc.detail, exc.headers)

    # the database is down (history, threads, state routes): 503 with a code, not a bare 500
    from supervisor_graph.agui.outcomes import STORAGE_UNAVAILABLE_MESSAGE
    from supervisor_graph.declaration.errors import StorageUnavailableError

    async def storage_unavailable(request: Request, exc: Exception) -> JSONResponse:
        log.warning("%s %s: %s", request.method, request.url.path, exc)
        return refusal(503, "STORAGE_UNAVAILABLE", STORAGE_UNAVAILABLE_MESSAGE, {"Retry-After": "2"})

    app.add_exception_handler(InputError, input_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(StorageUnavailableError, storage_unavailable)


# -- hosts -------------------------------------------------------------------------------


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def default_allowed_hosts(bound: str | None = None) -> list[str]:
    """`localhost`, `127.0.0.1`, `[::1]` and the host the server is bound to."""
    hosts = list(LOOPBACK_HOSTS)
    if bound and _bracketed(bound.lower()) not in hosts:
        hosts.append(_bracketed(bound.lower()))
    return hosts


def _host_name(header: str) -> str:
    """The name in a `Host` header, without its port (`[::1]:8000` -> `[::1]`)."""
    header = header.strip().lower()
    if header.startswith("["):
        end = header.find("]")
        return header[: end + 1] if end > 0 else ""
    name, _, port = header.rpartition(":")
    return name if name and port.isdigit() else header


# -- the middleware ----------------------------------------------------------------------


class _BodyTooLarge(Exception):
    pass


class _BodyTooSlow(Exception):
    pass


class Guard:
    """ASGI middleware: the host check, the token check and the body limits (size and
    read deadline), in that order (a rebinding page learns nothing, not even that a
    token is needed)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: Sequence[str],
        auth_token: str | None,
        public_paths: Iterable[str],
        public_prefixes: tuple[str, ...] = (),
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        read_timeout: float | None = DEFAULT_READ_TIMEOUT,
    ) -> None:
        self.app = app
        self.read_timeout = read_timeout or None
        self.allowed_hosts = [_bracketed(h.strip().lower()) for h in allowed_hosts if h.strip()]
        self.any_host = "*" in self.allowed_hosts
        self.token = auth_token.encode() if auth_token else None
        self.public_paths = frozenset(public_paths)
        self.public_prefixes = public_prefixes
        self.max_body_bytes = max_body_bytes

    def _host_allowed(self, header: str | None) -> bool:
        if self.any_host:
            return True
        name = _host_name(header or "")
        if not name:
            return False
        return any(name == p or (p.startswith("*.") and name.endswith(p[1:])) for p in self.allowed_hosts)

    def _public(self, scope: Scope) -> bool:
        path = scope["path"]
        return scope["method"] in ("GET", "HEAD") and (path in self.public_paths or path.startswith(self.public_prefixes))

    def _authorized(self, header: str | None) -> bool:
        assert self.token is not None
        scheme, _, presented = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), self.token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not self._host_allowed(headers.get("host")):
            response = refusal(
                400, "HOST_NOT_ALLOWED", "This server does not answer to that host name (see --allowed-hosts)."
            )
            await response(scope, receive, send)
            return
        if self.token is not None and not self._public(scope) and not self._authorized(headers.get("authorization")):
            code = "AUTH_INVALID" if headers.get("authorization") else "AUTH_REQUIRED"
            detail = "Send the server's token as 'Authorization: Bearer <token>'."
            await refusal(401, code, detail, {"WWW-Authenticate": "Bearer"})(scope, receive, send)
            return
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                await refusal(400, "INVALID_REQUEST", "Content-Length is not a number.")(scope, receive, send)
                return
            if int(declared) > self.max_body_bytes:
                await self._too_large(scope, receive, send)
                return
        await self._limited(scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        detail = f"The request body is larger than {self.max_body_bytes} bytes."
        await refusal(413, "BODY_TOO_LARGE", detail)(scope, receive, send)

    async def _limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Count the body as it arrives (no or a false Content-Length): past the limit the
        app's reading fails, and whatever it answers to that becomes a 413. The body must
        also be whole within `read_timeout` seconds of the request's start, or the
        reading fails the same way and the answer is a 408 that closes the connection
        (a client trickling its body would hold the connection for ever: uvicorn has no
        such deadline)."""
        received = 0
        refused: type[Exception] | None = None
        started = whole = False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.read_timeout if self.read_timeout else None

        async def counted() -> Message:
            nonlocal received, refused, whole
            if whole or deadline is None:
                message = await receive()
            else:
                try:
                    message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0))
                except TimeoutError:
                    refused = _BodyTooSlow
                    raise _BodyTooSlow from None
            if message["type"] == "http.request":
                whole = not message.get("more_body", False)
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    refused = _BodyTooLarge
                    raise _BodyTooLarge
            return message

        async def answer(message: Message) -> None:
            nonlocal started
            if refused is not None and not started:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, answer)
        except (_BodyTooLarge, _BodyTooSlow):
            pass
        if refused is None or started:
            return
        if refused is _BodyTooSlow:
            log.info("refused a request body not whole within %ss", self.read_timeout)
            detail = f"The request body did not arrive within {self.read_timeout:g} seconds."
            await refusal(408, "REQUEST_TIMEOUT", detail, {"Connection": "close"})(scope, receive, send)
            return
        log.info("refused a request body over %d bytes", self.max_body_bytes)
        await self._too_large(scope, receive, send)
