"""What the fake provider servers share: their app (`provider_app`: a request's body in,
the reply a `reply(body)` chose out, in the provider's words) and default reply
(`delegate_once`), the app served on a free loopback port from a background thread (a
context manager for tests), and the `python -m` entry that serves it in the foreground."""

from __future__ import annotations

import argparse
import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Self

__all__ = ["SeenPrefixes", "ThreadedServer", "delegate_once", "free_port", "provider_app", "serve_main"]


class SeenPrefixes:
    """A provider's prompt cache as a fake server keeps it: the prefixes of the prompts
    it was asked to cache, by digest, so that a later prompt starting with the very same
    bytes reads them (SPEC §33)."""

    def __init__(self) -> None:
        self._seen: set[bytes] = set()
        self._lock = threading.Lock()

    def account(self, blocks: list[Any], writes: Iterable[int], scope: str = "") -> tuple[float, float]:
        """`(read, written)`: the shares of the prompt made of `blocks` (JSON values, in
        the provider's order) its cache read and wrote, when cache entries are written at
        the ends of the blocks numbered `writes` and read at the end of any block up to
        the last of them (`scope`: a key the provider keeps caches apart by)."""
        running = hashlib.sha256(scope.encode())
        digests, ends, size = [], [], 0
        for block in blocks:
            text = json.dumps(block, sort_keys=True, separators=(",", ":"))
            running.update(text.encode())
            size += len(text)
            digests.append(running.copy().digest())
            ends.append(size)
        writes = sorted(i for i in set(writes) if 0 <= i < len(blocks))
        if not writes or not size:
            return 0.0, 0.0
        last = writes[-1]
        with self._lock:
            hit = next((i for i in range(last, -1, -1) if digests[i] in self._seen), -1)
            read = ends[hit] if hit >= 0 else 0
            written = ends[last] - read
            self._seen.update(digests[i] for i in writes)
        return read / size, written / size


def delegate_once(asked: str, after_tool: bool, tools: Iterable[str]) -> Any:
    """Delegate once, then report: enough for any supervisor to run end to end. `asked`:
    the last message's text; `after_tool`: that message is a tool's result; `tools`: the
    names of the tools offered (a model offered `agent-*` tools calls the first)."""
    if after_tool or asked.startswith("[Background task "):  # a result, or a background outcome
        return f"Done: {asked}"
    delegation = next((name for name in tools if name.startswith("agent-")), None)
    if delegation is not None:
        return {"tool": delegation, "args": {"prompt": asked}}
    return f"Answer to: {asked}"


def provider_app(
    path: str,
    respond: Callable[[dict[str, Any], Any], Any],
    reply: Callable[[dict[str, Any]], Any],
    requests: list[dict[str, Any]] | None,
) -> Any:
    """A FastAPI app whose `POST path` answers a model call: the request's body is
    appended to `requests` (when given), `reply(body)` chooses the answer (a text, or
    `{"tool": name, "args": {...}}`), and `respond(body, answer)` is the response in the
    provider's words."""
    from fastapi import FastAPI

    api = FastAPI()

    # a plain Starlette endpoint: FastAPI would read `request`'s annotation, a string here
    async def model_call(request: Any) -> Any:
        body = await request.json()
        if requests is not None:
            requests.append(body)
        return respond(body, reply(body))

    api.add_route(path, model_call, methods=["POST"])
    return api


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThreadedServer:
    """`asgi_app` on a free loopback port, from a background thread, while the `with`
    block runs."""

    name = "fake server"

    def __init__(self, asgi_app: Any) -> None:
        import uvicorn

        self.port = free_port()
        config = uvicorn.Config(asgi_app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {self.name} did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.should_exit = True
        self._thread.join(10)


def serve_main(argv: list[str] | None, *, prog: str, doc: str, port: int, banner: str, make_app: Callable[[], Any]) -> int:
    """Serve `make_app()` until Ctrl-C; `banner` is printed with `{host}` and `{port}` filled in."""
    import uvicorn

    parser = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0])
    parser.add_argument("--port", type=int, default=port)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    print(banner.format(host=args.host, port=args.port), flush=True)
    uvicorn.run(make_app(), host=args.host, port=args.port, log_level="warning")
    return 0
