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

__all__ = ["cmd_serve"]


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve an agent to AG-UI clients (the `agui` extra) until Ctrl-C."""
    token = args.auth_token or None
    try:
        from supervisor_graph.agui.endpoint import check_binding
        from supervisor_graph.agui.serving import DEFAULT_READ_TIMEOUT, default_allowed_hosts
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
    read_timeout = getattr(args, "read_timeout", DEFAULT_READ_TIMEOUT)
    if read_timeout < 0:
        raise CLIError(f"--read-timeout must be 0 (no deadline) or more, not {read_timeout:g}")
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
    agent = load_agent(args.target)
    where = f"http://{args.host}:{args.port}"
    shown = f"serving {agent.id} over AG-UI at {where}{args.path}"
    if args.mcp:
        shown += f" and over MCP at {where}/mcp"
    if args.a2a:
        shown += f" and over A2A at {where}/a2a (card: {where}/.well-known/agent-card.json)"
    if token:
        shown += f" (token required; the page at {where}/ asks for it once, or open it with ?token=...)"
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
        run_uvicorn(
            factory, factory=True, host=args.host, port=args.port, workers=args.workers, read_timeout=read_timeout
        )
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
