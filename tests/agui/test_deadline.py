"""Slow clients (issue 46 item 4) against `supervisor-graph serve --read-timeout 1` in a
subprocess, over raw sockets: a connection that sends nothing, one that sends its headers
a byte at a time, one that stalls in the middle of its body and one whose headers never
end are each closed (408 / 431 with a code once a request had begun); a run that streams
for longer than the deadline, keep-alive and `--workers 2` are untouched by it."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.aegra import free_port, running
from supervisor_graph.agui.deadline import MAX_HEAD_BYTES
from tests.agui.conftest import RECORDINGS

SERVED = f"{Path(__file__).parent / 'served.py'}:supervisor"
# far above the 1 s deadline: only "closed at all" is judged, not how fast
CLOSED_WITHIN = 20.0


def _serve(*flags: str) -> Iterator[tuple[str, int]]:
    port = free_port()
    command = [sys.executable, "-m", "supervisor_graph.cli", "serve", SERVED, "--port", str(port), *flags]
    env = {k: v for k, v in os.environ.items() if k != "SUPERVISOR_GRAPH_AUTH_TOKEN"}
    if "--workers" in flags:
        env["SG_AGUI_STORAGE"] = str(RECORDINGS.parent / f"deadline-{port}.db")
    log = RECORDINGS.parent / f"deadline-serve-{port}.log"
    with running(command, f"http://127.0.0.1:{port}/agent/health", env=env, log=log):
        yield f"http://127.0.0.1:{port}", port


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, int]]:
    yield from _serve("--read-timeout", "1")


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=CLOSED_WITHIN)


def _read_until_closed(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection (fails if it never does)."""
    got = b""
    deadline = time.monotonic() + CLOSED_WITHIN
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return got
        except TimeoutError:
            break
        if not chunk:
            return got
        got += chunk
    pytest.fail(f"the server kept the connection open for {CLOSED_WITHIN} s; it sent {got[:200]!r}")


def _trickle(sock: socket.socket, data: bytes, every: float) -> bool:
    """Send `data` a byte at a time; False once the server has closed the connection."""
    for byte in data:
        try:
            sock.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            return False
        time.sleep(every)
    return True


def _refusal(answer: bytes) -> tuple[int, dict[str, str]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def test_a_connection_that_sends_nothing_is_closed(served: tuple[str, int]) -> None:
    _, port = served
    with _connect(port) as sock:
        assert _read_until_closed(sock) == b""


def test_headers_sent_a_byte_at_a_time_get_408_and_the_connection_closed(served: tuple[str, int]) -> None:
    _, port = served
    head = f"GET /agent/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: {'a' * 40}\r\n\r\n".encode()
    with _connect(port) as sock:
        finished = _trickle(sock, head, every=0.1)  # 6 s of headers
        answer = _read_until_closed(sock)
    assert not finished, "the server read the whole slow head"
    status, body = _refusal(answer)
    assert (status, body["code"]) == (408, "REQUEST_TIMEOUT")


def test_a_body_that_stalls_gets_408_and_the_connection_closed(served: tuple[str, int]) -> None:
    _, port = served
    body = json.dumps({"threadId": "stall", "runId": "r", "messages": []}).encode()
    head = (
        f"POST /agent HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with _connect(port) as sock:
        sock.sendall(head + body[:10])  # and nothing more
        answer = _read_until_closed(sock)
    status, refusal = _refusal(answer)
    assert (status, refusal["code"]) == (408, "REQUEST_TIMEOUT")
    assert b"connection: close" in answer.lower()


def test_headers_that_never_end_get_431(served: tuple[str, int]) -> None:
    _, port = served
    with _connect(port) as sock:
        sock.sendall(f"GET /agent/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
        filler = b"X-Filler: " + b"a" * 1000 + b"\r\n"
        try:
            for _ in range(MAX_HEAD_BYTES // len(filler) + 2):
                sock.sendall(filler)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = _read_until_closed(sock)
    if answer:  # h11 answers its own 400 at 16 KB; httptools leaves it to us
        assert _refusal(answer)[0] in (400, 431), answer[:200]


def test_a_run_longer_than_the_deadline_streams_to_its_end_and_keep_alive_works(served: tuple[str, int]) -> None:
    url, _ = served
    with httpx.Client(timeout=30) as http:
        run = {
            "threadId": "t-slow-deadline",
            "runId": "r1",
            "messages": [{"id": "m1", "role": "user", "content": "slow"}],
        }
        streamed = http.post(f"{url}/agent", json=run)  # a delegation that takes 2 s
        assert streamed.status_code == 200
        assert '"RUN_FINISHED"' in streamed.text, streamed.text[-500:]
        time.sleep(1.5)  # idle past the deadline, within keep-alive
        assert http.get(f"{url}/agent/health").status_code == 200


def test_workers_have_the_deadline_too() -> None:
    for _, port in _serve("--read-timeout", "1", "--workers", "2"):
        with _connect(port) as sock:
            sock.sendall(b"GET /agent/health HTTP/1.1\r\n")
            status, body = _refusal(_read_until_closed(sock))
        assert (status, body["code"]) == (408, "REQUEST_TIMEOUT")
