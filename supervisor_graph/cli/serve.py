"""`supervisor-graph serve TARGET`: the agent over AG-UI (the `agui` extra) until
Ctrl-C, in this process or, with `--workers N`, in N uvicorn worker processes that
each load the agent again (see `supervisor_graph.cli.workers`)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from supervisor_graph.cli.target import load_agent
from supervisor_graph.declaration.errors import CLIError

__all__ = ["add_serve_parser", "cmd_serve"]


def add_serve_parser(sub: Any) -> None:
    """The `serve` command's flags: where it listens, what a request may be, which
    protocols it adds to AG-UI."""
    serve = sub.add_parser("serve", help="serve an agent to AG-UI front ends (CopilotKit, @ag-ui/client)")
    serve.add_argument("target", metavar="TARGET", help="module:attr or path/to/file.py:attr naming an Agent")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--path", default="/agent", help="endpoint path (default /agent)")
    serve.add_argument(
        "--subagents", choices=("hidden", "attributed"), default="hidden", help="how delegations are shown"
    )
    serve.add_argument("--resource", default="local-user", help="resource (user) id that owns the threads")
    serve.add_argument(
        "--auth-token",
        default=os.environ.get("SUPERVISOR_GRAPH_AUTH_TOKEN"),
        metavar="TOKEN",
        help="require 'Authorization: Bearer TOKEN' on every API route (default: $SUPERVISOR_GRAPH_AUTH_TOKEN); "
        "needed to serve on a non-loopback host",
    )
    serve.add_argument(
        "--allowed-hosts",
        metavar="H1,H2",
        help="host names the Host header may hold, comma-separated ('*' any, '*.example.com' a domain; "
        "default: localhost, 127.0.0.1, [::1] and --host)",
    )
    for flag, kind, default, metavar, help in _NUMBERS:
        serve.add_argument(flag, type=kind, default=default, metavar=metavar, help=help)
    serve.add_argument(
        "--on-busy",
        choices=("reject", "enqueue", "interrupt", "rollback"),
        default="reject",
        help="a new message while a run holds its thread: refused with THREAD_BUSY (default), queued, or run "
        "once the current run has stopped, its steps kept (interrupt) or discarded (rollback); a request's "
        "forwardedProps.on_busy (MCP: the on_busy argument, A2A: message metadata on_busy) wins",
    )
    serve.add_argument(
        "--mcp", action="store_true", help="also serve the agent as an MCP server at /mcp (the mcp extra)"
    )
    serve.add_argument(
        "--a2a", action="store_true", help="also serve the agent over A2A at /a2a with its card (the a2a extra)"
    )
    serve.add_argument(
        "--a2a-compat",
        choices=["0.3"],
        default=None,
        help="with --a2a: also declare A2A 0.3 on the card (its 0.3 fields); the card is A2A 1.0 only by default",
    )
    serve.set_defaults(func=cmd_serve)


# the server's numeric limits, each a flag of the same shape: flag, type, default, metavar, help
_NUMBERS: tuple[tuple[str, type, float, str | None, str], ...] = (
    ("--max-body-bytes", int, 1_000_000, None, "larger request bodies get 413 (default 1000000)"),
    ("--max-thread-id-length", int, 256, None, "longer thread ids get 422 (default 256)"),
    (
        "--read-timeout",
        float,
        30.0,
        "S",
        "seconds a client has to send a request's headers (from connecting, or from the previous response) "
        "and then its body; slower ones get 408 and are disconnected (default 30; 0: no deadline)",
    ),
    ("--workers", int, 1, None, "worker processes (more than 1 needs the agent's memory on sqlite or Postgres)"),
)


WORKER_STARTUP_SECONDS = 120


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve an agent to AG-UI clients (the `agui` extra) until Ctrl-C."""
    token = args.auth_token or None
    read_timeout = _checked(args, token)
    settings = _settings(args, token, read_timeout)
    agent = load_agent(args.target)
    shown = _banner(agent.id, args, token)
    if args.workers > 1:
        if agent.memory is None or agent.memory.kind not in ("sqlite", "postgres"):
            raise CLIError(
                f"--workers {args.workers} needs the agent's memory on sqlite or Postgres "
                "(each worker is a process of its own; they share only the database)"
            )
        from supervisor_graph.agui.endpoint import run_uvicorn
        from supervisor_graph.cli.workers import SERVE_ENV, app

        os.environ[SERVE_ENV] = json.dumps({"target": args.target, **settings})
        print(f"{shown} ({args.workers} workers)", flush=True)
        # by name, not the object: uvicorn imports the factory again in each worker process
        factory = f"{app.__module__}:{app.__name__}"
        # a worker imports the agent (LangChain, LangGraph) before it answers uvicorn's
        # health check: on a busy machine that is well past uvicorn's 5 s, and a worker
        # killed for it is started again, forever
        run_uvicorn(
            factory, factory=True, host=args.host, port=args.port, workers=args.workers, read_timeout=read_timeout,
            timeout_worker_healthcheck=WORKER_STARTUP_SECONDS,
        )  # fmt: skip
        return 0
    from supervisor_graph.agui.endpoint import run_uvicorn, serve

    if args.mcp or args.a2a:
        from supervisor_graph.cli.workers import build_app

        print(shown, flush=True)
        run_uvicorn(build_app(agent, settings), host=args.host, port=args.port, read_timeout=read_timeout)
        return 0
    print(shown, flush=True)
    serve(agent, host=args.host, port=args.port, **settings)
    return 0


def _checked(args: argparse.Namespace, token: str | None) -> float:
    """Refuse what cannot be served before the agent is loaded: no agui extra, a public
    address without a token, limits below one; the read timeout (0: no deadline)."""
    try:
        from supervisor_graph.agui.endpoint import check_binding
        from supervisor_graph.agui.serving import DEFAULT_READ_TIMEOUT
    except ImportError as exc:
        raise CLIError(f"serve needs the agui extra: pip install 'supervisor-graph[agui]' ({exc.name} is missing)") from None
    try:
        check_binding(args.host, token)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if args.workers < 1:
        raise CLIError(f"--workers must be at least 1, not {args.workers}")
    if args.max_body_bytes < 1 or args.max_thread_id_length < 1:
        raise CLIError("--max-body-bytes and --max-thread-id-length must be at least 1")
    read_timeout: float = getattr(args, "read_timeout", DEFAULT_READ_TIMEOUT)
    if read_timeout < 0:
        raise CLIError(f"--read-timeout must be 0 (no deadline) or more, not {read_timeout:g}")
    return read_timeout


def _settings(args: argparse.Namespace, token: str | None, read_timeout: float) -> dict[str, Any]:
    """The endpoint's settings (handed as JSON to each worker process), with MCP and A2A
    when asked for and their extras are installed."""
    from supervisor_graph.agui.serving import default_allowed_hosts

    hosts = [h.strip() for h in args.allowed_hosts.split(",") if h.strip()] if args.allowed_hosts else None
    settings: dict[str, Any] = {
        "path": args.path,
        "resource_id": args.resource,
        "subagent_visibility": args.subagents,
        "auth_token": token,
        "allowed_hosts": hosts if hosts is not None else default_allowed_hosts(args.host),
        "max_body_bytes": args.max_body_bytes,
        "max_thread_id_length": args.max_thread_id_length,
        "read_timeout": read_timeout or None,
        "on_busy": getattr(args, "on_busy", "reject"),
    }
    if args.mcp:
        try:
            import mcp  # noqa: F401
        except ImportError:
            raise CLIError("--mcp needs the mcp extra: pip install 'supervisor-graph[mcp]'") from None
        settings["mcp"] = True
    if args.a2a:
        try:
            import a2a  # noqa: F401
        except ImportError:
            raise CLIError("--a2a needs the a2a extra: pip install 'supervisor-graph[a2a]'") from None
        if args.workers > 1:
            raise CLIError(
                "--a2a serves from one process (it streams each task from the process that runs it): drop --workers"
            )
        settings["a2a"] = True
        if args.a2a_compat:
            settings["a2a_compat"] = args.a2a_compat
    elif getattr(args, "a2a_compat", None):
        raise CLIError("--a2a-compat goes with --a2a")
    return settings


def _banner(agent_id: str, args: argparse.Namespace, token: str | None) -> str:
    """The line printed when serving: where each protocol is, and how to give the token."""
    where = f"http://{args.host}:{args.port}"
    shown = f"serving {agent_id} over AG-UI at {where}{args.path}"
    if args.mcp:
        shown += f" and over MCP at {where}/mcp"
    if args.a2a:
        shown += f" and over A2A at {where}/a2a (card: {where}/.well-known/agent-card.json)"
    if token:
        shown += f" (token required; the page at {where}/ asks for it once, or open it with ?token=...)"
    return shown
