"""`RequestHeadDeadline`: uvicorn's HTTP protocol with a deadline and a size limit on a
request's head (its request line and headers), for `serve`.

uvicorn times out nothing before a request's headers are complete: `timeout_keep_alive`
runs only between requests, and any byte that arrives cancels it. So a client that
opens a connection and sends nothing, or sends its headers a byte every few seconds,
holds the connection (and a file descriptor) for as long as it likes; 500 of them
stayed open for 45 s in issue 46's probe and would have stayed for ever. Here each
connection must deliver a request's head within `read_timeout` seconds of connecting,
or of the end of the previous response, and in at most `MAX_HEAD_BYTES`; otherwise
the connection is closed (with a 408 or 431 when it had started a request). The body
has a deadline of its own in the app (`serving.Guard`), which answers 408 with a code.

The protocol is uvicorn's own (httptools when installed, else h11), subclassed: the
checks sit in `connection_made`, `data_received` and `on_response_complete`, which
both implementations have. The deadline is a class attribute because uvicorn builds
a protocol per connection from the class alone (and pickles the class by name to
its worker processes); `serve` sets it in each process before serving.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, ClassVar

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from supervisor_graph.agui.serving import DEFAULT_READ_TIMEOUT

__all__ = ["MAX_HEAD_BYTES", "RequestHeadDeadline", "set_read_timeout"]

log = logging.getLogger("supervisor_graph.agui")
# far above what browsers send (a few KB, cookies included); h11 stops at 16 KB itself
MAX_HEAD_BYTES = 64 * 1024


def _answer(status: int, reason: str, code: str, detail: str) -> bytes:
    body = json.dumps({"code": code, "detail": detail}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class RequestHeadDeadline(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's HTTP protocol, with a deadline and a size limit on each request's head
    (module docstring)."""

    read_timeout: ClassVar[float | None] = DEFAULT_READ_TIMEOUT

    _deadline: asyncio.TimerHandle | None = None
    _in_head = False  # between requests, or reading one's head
    _before: Any = None  # the request cycle before the awaited request's
    _head_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if not self._in_head or self.transport.is_closing():
            return
        if self.cycle is not self._before:
            self._stop()  # the head is complete: uvicorn has started the request's cycle
        elif self._head_bytes > MAX_HEAD_BYTES and not self.transport.is_closing():
            self._stop()
            log.info("closed a connection whose request head is over %d bytes", MAX_HEAD_BYTES)
            detail = f"The request line and headers are over {MAX_HEAD_BYTES} bytes."
            self.transport.write(_answer(431, "Request Header Fields Too Large", "HEADERS_TOO_LARGE", detail))
            self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # a pipelined request already under way has its head
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self._await_head()

    def _await_head(self) -> None:
        self._stop()
        self._in_head = True
        self._before = self.cycle
        self._head_bytes = 0
        if self.read_timeout:
            self._deadline = self.loop.call_later(self.read_timeout, self._expired)

    def _stop(self) -> None:
        self._in_head = False
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self.cycle is not self._before:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is being answered: never cut its response
        if self._head_bytes:
            log.info("closed a connection that did not send its request head within %ss", self.read_timeout)
            detail = f"The request line and headers did not arrive within {self.read_timeout:g} seconds."
            self.transport.write(_answer(408, "Request Timeout", "REQUEST_TIMEOUT", detail))
        self.transport.close()


def set_read_timeout(seconds: float | None) -> None:
    """The head deadline of every connection this process accepts from now on (None or
    0: none)."""
    if seconds is not None and seconds < 0:
        raise ValueError("read_timeout must be positive (or None for no deadline)")
    RequestHeadDeadline.read_timeout = seconds or None
