"""What the MCP serving tests share: the serve command's app on a loopback uvicorn in a
thread, the serve command's settings, and one tool call with the `mcp` client."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.aegra import free_port
from supervisor_graph.cli.main import build_parser

__all__ = ["Served", "call_tool", "serve_settings"]


class Served:
    """uvicorn serving `app` on loopback from a background thread, lifespan on (the MCP
    session manager runs in it)."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def serve_settings(token: str | None, *extra: str) -> dict[str, Any]:
    args = build_parser().parse_args(["serve", "x:y", "--mcp", *extra])
    return {
        "path": args.path,
        "resource_id": args.resource,
        "subagent_visibility": args.subagents,
        "auth_token": token,
        "allowed_hosts": ["127.0.0.1", "localhost"],
        "max_body_bytes": args.max_body_bytes,
        "max_thread_id_length": 64,
        "mcp": args.mcp,
    }


async def call_tool(url: str, name: str, arguments: dict[str, Any], headers: dict[str, str] | None) -> Any:
    async with (
        httpx.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await session.call_tool(name, arguments)
