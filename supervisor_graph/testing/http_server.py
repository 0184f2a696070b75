"""What the fake provider servers share: an ASGI app served on a free loopback port from a
background thread (a context manager for tests), and the `python -m` entry that serves
it in the foreground."""

from __future__ import annotations

import argparse
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Self

__all__ = ["ThreadedServer", "free_port", "serve_main"]


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
